"""Crash loop: SIGKILL the real CLI at random points of a turn and prove state.db stays whole.

Each run is ``python -m hermes chat --resume SID -q ...`` in a fresh process against an
in-process emulator whose personalities stream slowly (``fault="slow"``). The process is
killed mid-request (request received, no response byte yet), mid-stream, mid-commit (the
``bench/commit_delay.py`` launcher holds ``append_turn``'s transaction open; the write lock is
probed from here) or at a random moment. After every kill:

* ``PRAGMA integrity_check`` is ``ok`` and ``Store.load`` reads the session;
* every turn committed before is still there, byte-identical (nothing lost or rewritten);
* every turn row covers exactly its messages, each is whole (user → assistant [→ tool]; a
  tool-calling assistant is followed, in the same turn, by one result per call), no partial
  turn exists;
* every stored assistant message is identical (canonical JSON) to what the emulator sent,
  decoded again here from the raw response bytes the emulator wrote (a tee on its ASGI app).

Every later run replays the whole history, reasoning blobs included, so the emulators —
which verify every signature byte-exact — reject any corrupted blob: all responses must be
HTTP 200 and one clean turn per session must finish at the end.

    python bench/crash_loop.py --kills 200      # ends with `crash kills N survived N partial 0`
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

import hermes
from hermes.agent.provider import get_wire, iter_sse
from hermes.core.messages import Compaction, Message, ToolResult, dumps
from hermes.core.stream import Accumulator
from hermes.emulate import Emulator
from hermes.routing.resolve import Resolved, resolve
from hermes.store import Store

__all__ = ["CrashLoop", "Report", "TeeEmulator", "main"]

ROUTES: dict[str, str] = {
    "deepseek": "deepseek-v4",
    "anthropic": "claude-opus-5",
    "bedrock": "anthropic.claude-sonnet-4-5-v1:0",
    "gemini": "gemini-3-pro-preview",
}
PHASES: tuple[str, ...] = ("request", "stream", "commit", "random", "compaction")
AWS_ENV = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
           "AWS_REGION": "us-east-1"}


# ----------------------------------------------------------------------------- emulator tee


@dataclass
class Capture:
    """One HTTP exchange as the emulator wrote it: status and raw body bytes so far."""

    personality: str
    path: str
    query: str
    status: int = 0
    body: bytearray = field(default_factory=bytearray)
    done: bool = False
    disconnected: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    """Request headers as received, auth included (memory only: the secrets test proves a key
    was really sent with them; the emulator's own log strips auth)."""
    """The client went away (killed) — whatever the server answered then reached no one."""


class _Tee:
    """ASGI wrapper recording every response's bytes, so the bench can decode what was *sent*
    independently of what the killed client managed to store."""

    def __init__(self, app: Any, sink: list[Capture]) -> None:
        self.app, self.sink = app, sink

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cap = Capture(scope["path"].strip("/").split("/")[0], scope["path"],
                      scope.get("query_string", b"").decode(),
                      headers={k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])})
        self.sink.append(cap)

        async def heard() -> Any:
            msg = await receive()
            if msg["type"] == "http.disconnect" and not cap.done:
                cap.disconnected = True
            return msg

        async def tee(msg: Any) -> None:
            if msg["type"] == "http.response.start":
                cap.status = msg["status"]
            elif msg["type"] == "http.response.body":
                cap.body += msg.get("body", b"")
                cap.done = not msg.get("more_body", False)
            await send(msg)

        try:
            await self.app(scope, heard, tee)
        except Exception:
            if not cap.disconnected:  # a killed client's request breaks off mid-body: expected
                raise


class TeeEmulator(Emulator):
    """The product's emulator with a response tee; served the same way ``Emulator.start`` does."""

    def __init__(self, names: list[str] | None = None) -> None:
        super().__init__(names)
        self.captures: list[Capture] = []

    def app(self) -> Any:
        return _Tee(super().app(), self.captures)

    def __enter__(self) -> TeeEmulator:
        self.start()
        return self


def decode_capture(resolved: Resolved, cap: Capture) -> Message | None:
    """The assistant message a complete 200 response carries, folded from its raw bytes the
    way the client folds a stream (SSE, or Bedrock's binary event stream)."""
    if cap.status != 200 or not cap.done:
        return None
    decode = get_wire(resolved.route.wire).decoder(resolved).decode_event
    acc = Accumulator(resolved.key)
    try:
        if resolved.route.wire == "bedrock":
            from botocore.eventstream import EventStreamBuffer

            buf = EventStreamBuffer()
            buf.add_data(bytes(cap.body))
            for frame in buf:
                for d in decode(frame.headers[":event-type"], frame.payload):
                    acc.feed(d)
        else:
            for event, data in iter_sse(iter(bytes(cap.body).decode().splitlines())):
                for d in decode(event, data):
                    acc.feed(d)
        return acc.result().message
    except Exception:
        return None


# ----------------------------------------------------------------------------- checks


def integrity(db: Path) -> str:
    c = sqlite3.connect(db, timeout=10)
    try:
        return ",".join(r[0] for r in c.execute("PRAGMA integrity_check"))
    finally:
        c.close()


def write_locked(db: Path) -> bool:
    """True while another process holds the write lock (inside a transaction)."""
    c = sqlite3.connect(db, timeout=0, isolation_level=None)
    try:
        c.execute("BEGIN IMMEDIATE")
        c.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        c.close()


def turn_problems(db: Path, sid: str, msgs: list[Message]) -> list[str]:
    """Every turn row covers exactly its messages and has a whole shape; [] when all are."""
    c = sqlite3.connect(db, timeout=10)
    try:
        turns = c.execute("SELECT id, first_seq, last_seq FROM turns WHERE session_id = ? ORDER BY id",
                          (sid,)).fetchall()
        owner = dict(c.execute("SELECT seq, turn_id FROM messages WHERE session_id = ?", (sid,)).fetchall())
    finally:
        c.close()
    out: list[str] = []
    expect_first = 0
    prev_open_tool = False
    for tid, first, last in turns:
        if first != expect_first:
            out.append(f"turn {tid} starts at seq {first}, expected {expect_first}")
        expect_first = last + 1
        seqs = range(first, last + 1)
        if any(owner.get(s) != tid for s in seqs):
            out.append(f"turn {tid}: messages {list(seqs)} not all owned by it")
        part = msgs[first:last + 1]
        if part and any(isinstance(p, Compaction) for p in part[0].parts):
            out += [f"turn {tid} (compaction): {p}" for p in _checkpoint_problems(msgs[:first], part)]
        else:
            out += [f"turn {tid}: {p}" for p in _step_problems(part, prev_open_tool)]
        prev_open_tool = bool(part) and part[-1].role == "tool"
    if expect_first != len(msgs) or len(owner) != len(msgs):
        out.append(f"{len(msgs)} messages loaded, turns cover {expect_first}, {len(owner)} rows")
    return out


def _step_problems(part: list[Message], after_tool: bool) -> list[str]:
    """One agent step: [user,] assistant [, tool with one result per call]."""
    roles = [m.role for m in part]
    if roles not in (["user", "assistant"], ["user", "assistant", "tool"], ["assistant"], ["assistant", "tool"]):
        return [f"shape {roles}"]
    if roles[0] == "assistant" and not after_tool:
        return ["a model step without a user message or tool results before it"]
    asst = part[roles.index("assistant")]
    calls = [t.id for t in asst.tool_calls]
    results = [r.call_id for r in part[-1].parts if isinstance(r, ToolResult)] if roles[-1] == "tool" else []
    return [] if calls == results else [f"tool calls {calls} but results {results}"]


def _checkpoint_problems(before: list[Message], part: list[Message]) -> list[str]:
    """A compaction turn: a checkpoint, then retained messages that are byte-identical to the
    end of the history before it and made of whole steps starting at a user message."""
    kept = part[1:]
    if kept and [dumps(m) for m in kept] != [dumps(m) for m in before[len(before) - len(kept):]]:
        return ["retained messages differ from the history they were kept from"]
    if kept and kept[0].role != "user":
        return ["retained tail does not start at a user message"]
    out: list[str] = []
    i, after_tool = 0, False
    while i < len(kept):
        j = i + 1
        while j < len(kept) and kept[j].role != "user" and not (kept[j].role == "assistant" and kept[j - 1].role == "tool"):
            j += 1
        out += _step_problems(kept[i:j], after_tool)
        after_tool = kept[j - 1].role == "tool"
        i = j
    return out


# ----------------------------------------------------------------------------- the loop


@dataclass
class Report:
    kills: int = 0
    survived: int = 0
    lost: int = 0
    partial: int = 0
    mismatched: int = 0
    completed_runs: int = 0
    failed_runs: int = 0
    interrupted_tool_loops: int = 0
    phases: Counter[str] = field(default_factory=Counter)
    by_route: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int | str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    compaction: str = "hermes.agent.compaction not present — skipped"
    checkpoints: int = 0

    def lines(self) -> Iterator[str]:
        yield f"kills by observed phase: {dict(sorted(self.phases.items()))}"
        yield f"kills by route: {dict(sorted(self.by_route.items()))}"
        yield f"runs that finished before their kill: {self.completed_runs}; failed runs: {self.failed_runs}"
        yield (f"tool loops cut between committed steps (each step whole, resumed next run): "
               f"{self.interrupted_tool_loops}")
        yield f"emulator responses by status: {dict(self.statuses)}"
        yield f"compaction: {self.compaction}; checkpoints stored {self.checkpoints}"
        yield f"lost turns {self.lost}, partial turns {self.partial}, turns differing from the wire {self.mismatched}"
        for p in self.problems[:20]:
            yield f"PROBLEM: {p}"
        yield f"crash kills {self.kills} survived {self.survived} partial {self.partial}"


class CrashLoop:
    def __init__(self, home: Path, emu: TeeEmulator, *, seed: int, delay: float, commit_delay: float,
                 routes: list[str], log: Callable[[str], None] = print) -> None:
        self.home, self.emu, self.rng, self.delay = home, emu, random.Random(seed), delay
        self.commit_delay, self.routes, self.log = commit_delay, routes, log
        self.db = home / "state.db"
        self.work = home.parent / "workspace"
        self.work.mkdir(exist_ok=True)
        (self.work / "notes.txt").write_text("crash loop\n")
        self.report = Report()
        self.sessions: dict[str, str] = {}
        self.resolved: dict[str, Resolved] = {}
        self.known: dict[str, list[bytes]] = {}
        self.decoded: dict[int, bytes | None] = {}
        self.n = 0
        root = str(Path(hermes.__file__).resolve().parents[1])
        env = {k: v for k, v in os.environ.items()
               if not k.endswith(("_API_KEY", "_TOKEN")) and not k.startswith(("AWS_", "HERMES_"))}
        self.env = {**env, **AWS_ENV, "HERMES_HOME": str(home), "HERMES_API_KEY": "crash-loop-key",
                    "PYTHONPATH": os.pathsep.join([root, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        for name in routes:
            emu.state.set_control(name, fault="slow", times=-1, delay=delay)

    def _argv(self, route: str, query: str) -> list[str]:
        base = [sys.executable, "-m", "hermes", "chat", "-q", query, "--json"]
        if route in self.sessions:
            return [*base, "--resume", self.sessions[route]]
        return [*base, "-p", route, "-m", ROUTES[route], "-u", self.emu.url(route)]

    def start_sessions(self) -> None:
        for route in self.routes:
            r = subprocess.run(self._argv(route, f"start {route}"), env=self.env, cwd=self.work,
                               capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                raise RuntimeError(f"{route}: first turn failed: {r.stderr.strip()[-500:]}")
            self.sessions[route] = orjson.loads(r.stdout)["session_id"]
            self.resolved[route] = resolve(route, self.emu.url(route), ROUTES[route])
            with Store(self.db) as s:
                self.known[route] = [dumps(m) for m in s.load(self.sessions[route])]

    def _mine(self, route: str, start: int) -> list[Capture]:
        return [c for c in self.emu.captures[start:] if c.personality == route]

    def _wait(self, proc: subprocess.Popen[bytes], until: Callable[[], bool], limit: float = 30.0) -> bool:
        """Poll ``until`` every ms while the process lives; False if it exited first."""
        deadline = time.monotonic() + limit
        while proc.poll() is None and time.monotonic() < deadline:
            if until():
                return True
            time.sleep(0.001)
        return False

    def _observed(self, route: str, start: int) -> str:
        caps = self._mine(route, start)
        if not caps:
            return "startup"
        last = caps[-1]
        if not last.body:
            return "request"
        if not last.done:
            return "stream"
        return "commit" if write_locked(self.db) else "between"

    def one(self, route: str, phase: str) -> None:
        """Run one turn on ``route`` and try to kill it in ``phase``; then check the session."""
        self.n += 1
        start = len(self.emu.captures)
        logged = len(self.emu.requests(route))
        step = self.rng.choice((1, 2))  # which model request of the turn to aim at
        env = dict(self.env)
        argv = self._argv(route, f"turn {self.n} on {route}")
        label = ""
        if phase == "compaction":  # `sessions compress`: a summary request, then one append_turn
            argv = [sys.executable, "-m", "hermes", "sessions", "compress", self.sessions[route]]
            label, step = "compaction/", 1
            phase = self.rng.choice(("request", "commit", "random"))
        if phase == "commit":  # the same command through the launcher that pauses before COMMIT
            argv = [sys.executable, str(Path(__file__).resolve().parent / "commit_delay.py"), str(self.commit_delay),
                    *argv[3:]]
        proc = subprocess.Popen(argv, env=env, cwd=self.work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

        def nth() -> Capture | None:
            caps = self._mine(route, start)
            return caps[step - 1] if len(caps) >= step else None

        alive = True
        if phase == "request":
            if self.rng.random() < 0.5:  # the request is still being sent
                alive = self._wait(proc, lambda: nth() is not None)
            else:  # the emulator has read and logged it, and not yet sent a byte back
                alive = self._wait(proc, lambda: len(self.emu.requests(route)) >= logged + step)
        elif phase == "stream":
            alive = self._wait(proc, lambda: bool((c := nth()) and c.body))
            time.sleep(self.rng.uniform(0, 10 * self.delay))
        elif phase == "commit":
            alive = (self._wait(proc, lambda: bool((c := nth()) and c.done))
                     and self._wait(proc, lambda: write_locked(self.db)))
            time.sleep(self.rng.uniform(0, 0.8 * self.commit_delay))
        else:
            time.sleep(self.rng.uniform(0.3, 1.8))
        if alive and proc.poll() is None:
            seen = label + self._observed(route, start)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            self.report.kills += 1
            self.report.phases[seen] += 1
            self.report.by_route[route] += 1
            killed = True
        else:
            err = proc.communicate(timeout=60)[1].decode(errors="replace")
            killed = False
            if proc.returncode == 0:
                self.report.completed_runs += 1
            else:
                self.report.failed_runs += 1
                self.report.problems.append(f"run {self.n} ({route}) exited {proc.returncode}: {err.strip()[-300:]}")
        if proc.stderr is not None:
            proc.stderr.close()
        ok = self.check(route)
        if killed and ok:
            self.report.survived += 1

    def check(self, route: str) -> bool:
        sid, before = self.sessions[route], self.known[route]
        r = self.report
        problems: list[str] = []
        verdict = integrity(self.db)
        if verdict != "ok":
            problems.append(f"integrity_check: {verdict}")
        try:
            with Store(self.db) as s:
                msgs = s.load(sid)
        except Exception as e:
            r.problems.append(f"run {self.n} ({route}): load failed: {e}")
            return False
        now = [dumps(m) for m in msgs]
        if now[:len(before)] != before:
            r.lost += 1
            problems.append("a previously committed turn vanished or changed")
        shape = turn_problems(self.db, sid, msgs)
        if shape:
            r.partial += len(shape)
            problems += shape
        wire = self._wire_messages(route)
        for m, raw in zip(msgs[len(before):], now[len(before):], strict=True):
            if m.role == "assistant" and raw not in wire:
                r.mismatched += 1
                problems.append(f"assistant message differs from every response the emulator sent: {raw[:120]!r}")
        if msgs and msgs[-1].role == "tool" and len(now) > len(before):
            r.interrupted_tool_loops += 1
        self.known[route] = now
        r.problems += [f"run {self.n} ({route}): {p}" for p in problems]
        return not problems

    def _wire_messages(self, route: str) -> set[bytes]:
        out: set[bytes] = set()
        for i, cap in enumerate(self.emu.captures):
            if cap.personality != route:
                continue
            if i not in self.decoded and cap.done:
                m = decode_capture(self.resolved[route], cap)
                self.decoded[i] = None if m is None else dumps(m)
            if self.decoded.get(i) is not None:
                out.add(self.decoded[i])  # type: ignore[arg-type]
        return out

    def finish(self) -> None:
        """One clean turn per session: the whole crash-scarred history must be accepted."""
        for route in self.routes:
            self.emu.state.set_control(route, delay=0.0)
            r = subprocess.run(self._argv(route, f"final turn on {route}"), env=self.env, cwd=self.work,
                               capture_output=True, text=True, timeout=120)
            if r.returncode != 0 or orjson.loads(r.stdout).get("stopped") != "answer":
                self.report.problems.append(f"final turn on {route} failed: {r.stderr.strip()[-300:]}")
                self.report.failed_runs += 1
            self.check(route)
            with Store(self.db) as st:
                self.report.checkpoints += sum(1 for m in st.load(self.sessions[route])
                                               if any(isinstance(p, Compaction) for p in m.parts))
        self.report.statuses.update("killed" if c.disconnected else c.status for c in self.emu.captures)
        bad = sum(1 for c in self.emu.captures if c.status not in (0, 200) and not c.disconnected)
        if bad:
            self.report.problems.append(f"{bad} emulator responses were not 200 (a replay was rejected)")

    def run(self, kills: int) -> Report:
        phases = PHASES
        if importlib.util.find_spec("hermes.agent.compaction") is None:
            phases = PHASES[:-1]
        else:
            self.report.compaction = "`hermes sessions compress` killed in its summary request or its commit"
        self.start_sessions()
        i = 0
        while self.report.kills < kills and i < kills * 3:
            route = self.routes[i % len(self.routes)]
            phase = phases[(i // len(self.routes)) % len(phases)]
            self.one(route, phase)
            i += 1
            if self.report.kills and self.report.kills % 25 == 0 and self.log is not None:
                self.log(f"... {self.report.kills} kills, {len(self.report.problems)} problems")
        self.finish()
        return self.report


@contextlib.contextmanager
def crash_loop(seed: int = 0, delay: float = 0.02, commit_delay: float = 0.4,
               routes: list[str] | None = None, home: Path | None = None,
               log: Callable[[str], None] = print) -> Iterator[CrashLoop]:
    names = routes or list(ROUTES)
    with tempfile.TemporaryDirectory(prefix="hermes-crash-") as tmp, TeeEmulator(names) as emu:
        yield CrashLoop(home or Path(tmp) / "home", emu, seed=seed, delay=delay, commit_delay=commit_delay,
                        routes=names, log=log)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=200)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--delay", type=float, default=0.02, help="seconds between streamed chunks")
    ap.add_argument("--commit-delay", type=float, default=0.4, help="pause before COMMIT for commit kills (bench/commit_delay.py)")
    ap.add_argument("--routes", default=",".join(ROUTES))
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    print(f"crash loop: {args.kills} kills, seed {args.seed}, routes {args.routes}")
    with crash_loop(args.seed, args.delay, args.commit_delay, args.routes.split(",")) as loop:
        report = loop.run(args.kills)
    print(f"elapsed {time.monotonic() - t0:.0f} s")
    for line in report.lines():
        print(line)
    ok = report.kills >= args.kills and report.survived == report.kills and not report.problems
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
