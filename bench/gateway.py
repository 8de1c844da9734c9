"""Gateway vs direct: the latency a gateway turn adds, throughput, CPU per turn and memory.

Setup: the emulators in this process (zero latency: no delays, no faults), route
``openai-responses`` (a turn = user message, a tool call, a tool result, an answer: two model
calls and two store commits). Per run, three fresh child processes:

* **gateway** — ``python -m hermes gateway`` on a temporary HERMES_HOME;
* **clients** — posts the turns to it over raw keep-alive sockets (its own process, so the
  load generator's CPU is neither the gateway's nor the emulator's);
* **direct** — the same turns through ``hermes.agent.runtime.Runtime`` as the product builds them
  (one store, one HTTP transport, ``Runtime.agent``: config's settings, the preflight token
  estimate; one agent per session, each turn continuing from the history the last returned,
  as the gateway's hot sessions give it). No HTTP, no lease, no hand-over to a thread: what
  the gateway adds on top of this is what is measured.

The children take commands on stdin, so direct and gateway are measured **alternately in
the same minute**, never one long run after the other: this machine has 2 cores shared with
other work, and its load moves between minutes. Each run:

1. **32 sessions** x TURNS turns at once, BURSTS bursts a side (default 4) in the order
   A B B A A B B A (which side is A alternates between runs): turns per second of each over
   its bursts (the throughput ratio; each pair's own ratio is printed too), CPU per turn of the gateway
   process over the direct process, and each side's peak RSS (``VmHWM``) after its first
   burst, holding those 32 sessions hot (the direct process the same sessions in its own
   memory). Every burst, on either side, starts on fresh sessions;
2. **16 sessions** the same way: p99 of each, and p99 added = gateway p99 minus direct p99;
3. **1 session in lock-step**: PAIRS turns, each a direct turn and a gateway turn back to
   back (which goes first alternates), so both halves of a pair see the same machine. Added
   latency at p50 is the median of the per-pair differences; CPU per turn of each process.

Wall-clock figures move with the machine's load; CPU time per turn does not (much): both
are printed, and the load average before and after each run. The summary lines (for
``bench/run``: ``gateway <metric> <median>``) give the median over the runs and the range.

``--workers N`` runs the gateway side as ``hermes gateway --workers N`` (the direct side stays
one process): one process runs one thread of Python at a time, so at 32 sessions both sides
are bound by that one lock, and with N workers the gateway is not. Its CPU and peak RSS are
then the supervisor's and every worker's together, and the summary metrics carry a
``_workersN`` suffix (``bench/run`` reads only the one-process figures). ``--pin`` starts the
gateway with ``--pin`` (each process on one CPU of its own; suffix ``_pinned``); the direct
side is never pinned.

Run: ``PYTHONPATH=. python bench/gateway.py [--runs 3] [--turns 20] [--bursts 4] [--pairs 100] [--workers 1] [--pin]``.

"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

ROUTE, MODEL, KEY = "openai-responses", "gpt-5", "sk-bench-0000000000"


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s)) - 1))]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a live process has used so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def family(pid: int) -> list[int]:
    """``pid`` and its live children: a ``--workers`` gateway is its supervisor and the workers."""
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        kids = []
    return [pid, *map(int, kids)]


def family_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its live children (a child's CPU reaches its parent's
    ``/proc`` figures only once it has exited and been waited for)."""
    return sum(cpu_seconds(p) for p in family(pid))


def family_rss_mb(pid: int) -> float | None:
    """The sum of the peak RSS of ``pid`` and its live children, in MiB."""
    known = [x for x in map(peak_rss_mb, family(pid)) if x is not None]
    return sum(known) if known else None


def peak_rss_mb(pid: int) -> float | None:
    """``VmHWM`` (peak resident set) of a live process, in MiB; None where /proc has no such line."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def start_gateway(home: Path, allow: str, *args: str, env: dict[str, str] | None = None,
                  launcher: tuple[str, ...] = ("-m", "hermes")) -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "HERMES_HOME": str(home), "OPENAI_API_KEY": KEY, **(env or {})}
    env.pop("HERMES_GATEWAY_TOKEN", None)
    err = home / f"gateway-{time.monotonic_ns()}.err"
    proc = subprocess.Popen([sys.executable, *launcher, "gateway", "--port", "0", "--allow-base-url", allow,
                             *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=err.open("wb"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        text = err.read_text() if err.exists() else ""
        if "listening on " in text:
            return proc, text.split("listening on ", 1)[1].split()[0]
        if proc.poll() is not None:
            sys.exit(f"gateway did not start: {text}")
        time.sleep(0.05)
    proc.kill()
    sys.exit("gateway did not start in 20 s")


# ----------------------------------------------------------------------------- the two sides


class Conn:
    """A keep-alive HTTP/1.1 connection that posts JSON and reads a Content-Length answer, in
    a few microseconds of CPU: the clients are the load generator, not what is measured (an
    ``httpx`` client costs ~1 ms of CPU per request, which on a 2-core machine is taken from
    the gateway and the emulator; load generators are written in C for this reason)."""

    def __init__(self, base: str) -> None:
        host, port = base.removeprefix("http://").rstrip("/").rsplit(":", 1)
        self.host = f"{host}:{port}"
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def post(self, path: str, body: bytes, extra: str = "") -> tuple[int, bytes]:
        head = (f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n{extra}"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        self.sock.sendall(head + body)
        return self.read_response()

    def read_response(self) -> tuple[int, bytes]:
        while b"\r\n\r\n" not in self.buf:
            self.buf += self._recv()
        raw, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = raw.split(b"\r\n")
        length = next(int(v) for k, _, v in (ln.partition(b":") for ln in lines[1:]) if k.lower() == b"content-length")
        while len(self.buf) < length:
            self.buf += self._recv()
        data, self.buf = self.buf[:length], self.buf[length:]
        return int(lines[0].split()[1]), data

    def _recv(self) -> bytes:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise SystemExit("the gateway closed the connection")
        return chunk

    def close(self) -> None:
        self.sock.close()


class Side:
    """One side of the comparison in a child process: ``new(n)`` makes n fresh sessions,
    ``turn(i, j)`` runs turn j on session i and returns its latency in seconds."""

    def new(self, n: int) -> None:
        raise NotImplementedError

    def turn(self, i: int, j: int) -> float:
        raise NotImplementedError

    def burst(self, turns: int) -> dict[str, Any]:
        """Every session ``turns`` turns, all sessions at once (a thread each)."""
        def worker(i: int) -> list[float]:
            return [self.turn(i, j) for j in range(turns)]

        started = time.perf_counter()
        with ThreadPoolExecutor(self.sessions) as pool:
            lat = [x for xs in pool.map(worker, range(self.sessions)) for x in xs]
        return {"lat": lat, "wall": time.perf_counter() - started}

    sessions = 0


class Direct(Side):
    def __init__(self, emu_url: str, home: Path) -> None:
        from hermes.agent.runtime import Runtime
        from hermes.store import Store
        from hermes.tools.builtins import ToolContext, load_toolbox
        from hermes.transport.http import HttpTransport

        self.url = emu_url
        self.store = Store(home / "direct.db")
        self.runtime = Runtime.load(store=self.store, transport=HttpTransport())
        self.resolved = self.runtime.route(provider=ROUTE, model=MODEL, base_url=emu_url)
        self.key = self.runtime.key(self.resolved)
        self.toolbox = load_toolbox(ToolContext(allow_commands=False))
        self.new(1)
        for j in range(3):  # imports, the connection pool, the tokenizer: the gateway is warmed the same way
            self.turn(0, j)

    def new(self, n: int) -> None:
        self.sessions = n
        self.sids = [self.runtime.create(self.resolved, base_url=self.url) for _ in range(n)]
        self.agents = [self.runtime.agent(self.toolbox, api_key=self.key) for _ in range(n)]
        self.histories: list[Any] = [[] for _ in range(n)]

    def turn(self, i: int, j: int) -> float:
        t = time.perf_counter()
        self.histories[i] = self.agents[i].run_turn(self.sids[i], f"turn {j}", self.resolved,
                                                    history=self.histories[i]).history
        return time.perf_counter() - t


class Clients(Side):
    def __init__(self, emu_url: str, base: str) -> None:
        self.url, self.base = emu_url, base
        self.conns: list[Conn] = []
        self.new(1)
        for j in range(3):
            self.turn(0, j)

    def new(self, n: int) -> None:
        """n sessions, a connection each (opened now: the gateway closes one idle past its
        header deadline, 10 s, which a burst of the other side can outlast)."""
        for c in self.conns:
            c.close()
        control = Conn(self.base)
        body = orjson.dumps({"provider": ROUTE, "model": MODEL, "base_url": self.url})
        self.sessions = n
        self.paths = [f"/v1/sessions/{orjson.loads(control.post('/v1/sessions', body)[1])['id']}/messages"
                      for _ in range(n)]
        control.close()
        self.conns = [Conn(self.base) for _ in range(n)]

    def turn(self, i: int, j: int) -> float:
        body = orjson.dumps({"content": f"turn {j}"})
        t = time.perf_counter()
        status, text = self.conns[i].post(self.paths[i], body)
        took = time.perf_counter() - t
        if status != 200:
            raise SystemExit(f"gateway turn failed: {status} {text!r}")
        return took


def serve_side(side: Side) -> None:
    """The child's loop: one JSON command per stdin line, one JSON answer per stdout line."""
    out = sys.stdout
    out.write("{}\n")
    out.flush()
    for line in sys.stdin:
        cmd = orjson.loads(line)
        if cmd["op"] == "new":
            side.new(cmd["n"])
            answer: dict[str, Any] = {}
        elif cmd["op"] == "turn":
            answer = {"lat": side.turn(0, cmd["j"])}
        else:
            answer = side.burst(cmd["turns"])
        out.write(orjson.dumps(answer).decode() + "\n")
        out.flush()


class Child:
    """A ``Side`` in a child process of this script, driven over its stdin/stdout."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--side", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env={**os.environ, "OPENAI_API_KEY": KEY})
        self._read()  # ready: imported and warmed up

    @property
    def pid(self) -> int:
        return self.proc.pid

    def ask(self, **cmd: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps(cmd) + b"\n")
        self.proc.stdin.flush()
        return self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"a bench child exited ({self.proc.wait()})")
        data: dict[str, Any] = orjson.loads(line)
        return data

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _burst_in(child: Child, n: int, turns: int) -> tuple[list[float], float, float]:
    """One burst of n sessions x turns in a fresh child, then closed: (latencies, wall, the
    child's CPU seconds)."""
    try:
        child.ask(op="new", n=n)
        cpu = cpu_seconds(child.pid)
        data = child.ask(op="burst", turns=turns)
        cpu = cpu_seconds(child.pid) - cpu
    finally:
        child.close()
    return data["lat"], data["wall"], cpu


def run_direct(emu_url: str, home: Path, n: int, turns: int) -> tuple[list[float], float, float]:
    """One burst in a fresh direct child (bench/scale.py's baseline)."""
    return _burst_in(Child("direct", emu_url, str(home)), n, turns)


def run_gateway(base: str, emu_url: str, n: int, turns: int) -> tuple[list[float], float, float]:
    """One burst against the gateway at ``base`` from a fresh clients child (the CPU is the
    clients')."""
    return _burst_in(Child("clients", emu_url, base), n, turns)


# ----------------------------------------------------------------------------- one run


def one_run(url: str, root: Path, allow: str, run: int, turns: int, pairs: int, bursts: int = 4,
            gateway_args: list[str] | None = None) -> dict[str, float]:
    home = root / f"run{run}"
    home.mkdir()
    gw, base = start_gateway(home, allow, *(gateway_args or []))
    direct = Child("direct", url, str(home))
    clients = Child("clients", url, base)
    pids = {"direct": direct.pid, "gateway": gw.pid}
    sides = {"direct": direct, "gateway": clients}
    generator = {"direct": None, "gateway": clients.pid}
    """The process that sends a side's turns, when it is not the side itself: its CPU is the
    machine's too."""
    order = ("direct", "gateway") if run % 2 == 0 else ("gateway", "direct")
    out: dict[str, float] = {"load_before": os.getloadavg()[0]}
    try:
        for n in (32, 16):
            # at 32 sessions A B B A, repeated: a drift of the machine's load over each four
            # cancels out, and each side's figure pools its bursts (one burst of a side differs
            # from the next by up to ±8% at load 1-2; two a side left runs 0.05 apart)
            sequence = (*order, *order[::-1]) * (bursts // 2) if n == 32 else order
            pooled: dict[str, dict[str, Any]] = {
                name: {"lat": [], "wall": 0.0, "cpu": 0.0, "emu": 0.0, "gen": 0.0, "tps": []} for name in order}
            for name in sequence:
                sides[name].ask(op="new", n=n)  # fresh sessions for every burst, on both sides
                gen_pid = generator[name]
                cpu, emu = family_cpu(pids[name]), time.process_time()
                gen = cpu_seconds(gen_pid) if gen_pid else 0.0
                data = sides[name].ask(op="burst", turns=turns)
                acc = pooled[name]
                acc["cpu"] += family_cpu(pids[name]) - cpu
                acc["emu"] += time.process_time() - emu
                acc["gen"] += (cpu_seconds(gen_pid) - gen) if gen_pid else 0.0
                acc["lat"] += data["lat"]
                acc["wall"] += data["wall"]
                acc["tps"].append(len(data["lat"]) / data["wall"])
                if n == 32 and len(acc["tps"]) == 1:  # holding 32 sessions (and the warm-up one)
                    out[f"{name}_rss_32"] = family_rss_mb(pids[name]) or 0.0
            for name, acc in pooled.items():
                lat = acc["lat"]
                out[f"{name}_tps_{n}"] = len(lat) / acc["wall"]
                out[f"{name}_p50_{n}"] = pct(lat, 50) * 1000
                out[f"{name}_p99_{n}"] = pct(lat, 99) * 1000
                out[f"{name}_cpu_{n}"] = acc["cpu"] / len(lat) * 1000
                out[f"{name}_emu_cpu_{n}"] = acc["emu"] / len(lat) * 1000
                out[f"{name}_gen_cpu_{n}"] = acc["gen"] / len(lat) * 1000
            if n == 32:  # each pair's own ratio, printed beside the pooled one
                for k in range(len(pooled["gateway"]["tps"])):
                    out[f"throughput_32_pair{k + 1}"] = pooled["gateway"]["tps"][k] / pooled["direct"]["tps"][k]
        for name in order:
            sides[name].ask(op="new", n=1)
        cpu = {name: family_cpu(pid) for name, pid in pids.items()}
        lat: dict[str, list[float]] = {"direct": [], "gateway": []}
        for j in range(pairs):
            for name in (order if j % 2 == 0 else order[::-1]):
                lat[name].append(sides[name].ask(op="turn", j=j)["lat"])
        for name, pid in pids.items():
            out[f"{name}_cpu_1"] = (family_cpu(pid) - cpu[name]) / pairs * 1000
            out[f"{name}_p50_1"] = pct(lat[name], 50) * 1000
        out["added_p50_1"] = statistics.median(g - d for g, d in zip(lat["gateway"], lat["direct"], strict=True)) * 1000
    finally:
        for child in (clients, direct):
            child.close()
        gw.terminate()
        gw.wait(timeout=30)
    out["load_after"] = os.getloadavg()[0]
    out["added_p99_16"] = out["gateway_p99_16"] - out["direct_p99_16"]
    out["added_p50_32"] = out["gateway_p50_32"] - out["direct_p50_32"]
    out["throughput_32"] = out["gateway_tps_32"] / out["direct_tps_32"]
    # what the wall ratio tends to when the machine's cores are the limit, from CPU time alone:
    # a direct turn costs the machine its process and the emulator, a gateway turn those and
    # the clients that send it
    out["throughput_cpu_32"] = (out["direct_cpu_32"] + out["direct_emu_cpu_32"]) / (
        out["gateway_cpu_32"] + out["gateway_emu_cpu_32"] + out["gateway_gen_cpu_32"])
    for n in (1, 16, 32):
        out[f"cpu_ratio_{n}"] = out[f"gateway_cpu_{n}"] / out[f"direct_cpu_{n}"]
    out["cpu_added_1"] = out["gateway_cpu_1"] - out["direct_cpu_1"]
    return out


def spread(values: list[float], fmt: str) -> str:
    lo, hi = min(values), max(values)
    return f"{statistics.median(values):{fmt}}  (median of {len(values)} runs; range {lo:{fmt}} … {hi:{fmt}})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--turns", type=int, default=20, help="turns per session at 16 and 32 sessions (default 20)")
    ap.add_argument("--bursts", type=int, default=4, choices=range(2, 21, 2), metavar="{2,4,...,20}",
                    help="bursts a side at 32 sessions (default 4)")
    ap.add_argument("--pairs", type=int, default=100, help="lock-step turn pairs at 1 session (default 100)")
    ap.add_argument("--pin", action="store_true",
                    help="run the gateway with --pin (each of its processes on one CPU of its own); metrics "
                         "then carry a `_pinned` suffix")
    ap.add_argument("--workers", type=int, default=1,
                    help="run the gateway as `hermes gateway --workers N` (default 1: one process); its "
                         "figures are then the supervisor's and the workers' together, and each summary "
                         "metric is named with a `_workersN` suffix")
    ap.add_argument("--realistic", action="store_true",
                    help="the emulator answers as a provider does (300 ms to first token, then a chunk each 20 ms, "
                         "about 50 tokens/s); fewer turns by default (--turns 4, --pairs 10, --runs 1)")
    ap.add_argument("--side", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.realistic:
        given = set(sys.argv)
        args.turns = args.turns if "--turns" in given else 4
        args.pairs = args.pairs if "--pairs" in given else 10
        args.runs = args.runs if "--runs" in given else 1
    if args.side:
        kind, url, where = args.side
        serve_side(Direct(url, Path(where)) if kind == "direct" else Clients(url, where))
        return
    from hermes.emulate import Emulator

    root = Path(tempfile.mkdtemp(prefix="hermes-bench-"))
    os.environ["HERMES_HOME"] = str(root)
    runs = []
    gateway_args = [*(["--workers", str(args.workers)] if args.workers > 1 else []), *(["--pin"] if args.pin else [])]
    with Emulator([ROUTE]) as emu:
        if args.realistic:
            emu.state.set_control(ROUTE, first_token=0.3, delay=0.02)
        url = emu.url(ROUTE)
        for r in range(args.runs):
            runs.append(one_run(url, root, emu.root, r, args.turns, args.pairs, args.bursts, gateway_args))
    shape = ("one process" if args.workers == 1 else f"--workers {args.workers} (CPU and RSS: every worker's)") + (
        ", --pin" if args.pin else "")
    latency = "300 ms to first token, 20 ms a chunk" if args.realistic else "zero latency"
    print(f"gateway bench: {ROUTE} emulator ({latency}), a turn = 2 model calls + 2 commits; "
          f"{args.turns} turns per session at 16 and 32 sessions, {args.pairs} lock-step pairs at 1; "
          f"gateway: {shape}")
    tag = (f"_workers{args.workers}" if args.workers > 1 else "") + ("_pinned" if args.pin else "") + (
        "_realistic" if args.realistic else "")
    cols = ("run", "load", "sessions", "direct t/s", "gw t/s", "direct p50", "gw p50", "direct p99", "gw p99",
            "direct cpu", "gw cpu")
    print("  ".join(f"{c:>10}" for c in cols))
    for i, r in enumerate(runs, 1):
        load = f"{r['load_before']:.1f}-{r['load_after']:.1f}"
        for n in (1, 16, 32):
            row = [f"{i:>10}", f"{load:>10}", f"{n:>10}"]
            for key in ("tps", "p50", "p99"):
                for side in ("direct", "gateway"):
                    v = r.get(f"{side}_{key}_{n}")
                    row.append(f"{v:>10.1f}" if v is not None else f"{'':>10}")
            row += [f"{r[f'direct_cpu_{n}']:>10.2f}", f"{r[f'gateway_cpu_{n}']:>10.2f}"]
            print("  ".join(row))
    print(f"(ms; t/s = turns per second over the bursts' wall time (at 32 sessions {args.bursts} bursts a side, "
          "A B B A repeated); "
          "cpu = CPU ms per turn of the direct process / the gateway process, which moves far less with the "
          "machine's load than wall time; at 1 session the turns run in lock-step pairs, so there is no throughput)")
    for i, r in enumerate(runs, 1):
        print(f"  run {i}: emulator CPU per turn at 32 sessions {r['direct_emu_cpu_32']:.1f} ms (direct) vs "
              f"{r['gateway_emu_cpu_32']:.1f} ms (gateway): it answers both alike; the clients "
              f"{r['gateway_gen_cpu_32']:.2f} ms; peak RSS holding 32 sessions: "
              f"gateway {r['gateway_rss_32']:.1f} MiB, direct {r['direct_rss_32']:.1f} MiB; throughput ratio of "
              f"each burst pair {' '.join(f'{v:.2f}' for k, v in r.items() if k.startswith('throughput_32_pair'))} "
              f"(pooled {r['throughput_32']:.2f}; from CPU time {r['throughput_cpu_32']:.2f})")
    col = {k: [r[k] for r in runs] for k in runs[0]}
    print(f"gateway p50_added_ms_1{tag} {spread(col['added_p50_1'], '.2f')}  "
          "[median of per-pair differences, gateway − direct, 1 session; target ≤ 2 ms]")
    print(f"gateway cpu_added_ms_1{tag} {spread(col['cpu_added_1'], '.2f')}  "
          "[gateway CPU per turn − direct CPU per turn, 1 session: the part of the added latency that is work, "
          "not waiting for a core]")
    print(f"gateway throughput_ratio_32{tag} {spread(col['throughput_32'], '.2f')}  "
          "[gateway / direct turns per second, 32 sessions; target ≥ 0.9]")
    print(f"gateway throughput_cpu_ratio_32{tag} {spread(col['throughput_cpu_32'], '.2f')}  "
          "[the same ratio from CPU time: CPU per direct turn (its process + the emulator) / CPU per gateway "
          "turn (gateway + emulator + clients), 32 sessions; where the wall ratio tends when the cores are "
          "the limit]")
    print(f"gateway p99_added_ms_16{tag} {spread(col['added_p99_16'], '.1f')}  [gateway p99 − direct p99, 16 sessions]")
    print(f"gateway p50_added_ms_32{tag} {spread(col['added_p50_32'], '.1f')}  [gateway p50 − direct p50, 32 sessions]")
    for n in (1, 16, 32):
        print(f"gateway cpu_per_turn_ratio_{n}{tag} {spread(col[f'cpu_ratio_{n}'], '.2f')}  "
              f"[gateway / direct CPU per turn, {n} session{'s' if n > 1 else ''}]")
    print(f"gateway rss_mb_32{tag} {spread(col['gateway_rss_32'], '.1f')}  "
          f"[gateway peak RSS holding 32 hot sessions; the direct process {spread(col['direct_rss_32'], '.1f')}]")
    loads = [x for r in runs for x in (r["load_before"], r["load_after"])]
    print(f"(load average during the runs {min(loads):.1f}–{max(loads):.1f} on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
