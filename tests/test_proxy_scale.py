"""Scale-out of `hermes proxy`: several proxy processes on one PostgreSQL, as if on several hosts.

Each worker is a real ``python -m hermes proxy`` process with its own port and
``HERMES_DATABASE_URL`` pointing at one database on the throw-away server the tests start; the
upstream is a loopback emulator. Every client is the official ``openai`` SDK used the way
most client code uses it: it appends the assistant message *without* its reasoning, so every
turn's reasoning must come back from the proxy's memory — written, as a rule here, by another
worker than the one restoring it (each request goes to a different worker than the last).
What must hold:

* 8 clients x 25 turns (a tool call and an answer each): every assistant message of every
  request carries exactly the reasoning its response had, none missing, and the memory holds
  exactly one recording per assistant turn;
* ``kill -9`` of a worker while it is writing a turn to the memory: the client's retry on
  another worker works, restores everything, and the memory holds no partial entry;
* ``hermes proxy --workers 3`` serves from three supervised processes on one port and
  replaces one that is killed.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
import pytest
from _procs import PgFleet, children, listening, stop_all, wait_for
from _proxy import RESULT, openai_step

from hermes.core.messages import loads
from hermes.emulate import Emulator
from hermes.proxy import client_key, message_key, tenant_of
from hermes.proxy.memory import prefixes

pytestmark = pytest.mark.slow

ROUTE, MODEL = "deepseek", "deepseek-v4-pro"

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _env(home: Path, url: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The worker's environment: no provider keys; ``url`` "" = the store is ``state.db``."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "HERMES_DATABASE_URL"}
    return {**env, "HERMES_HOME": str(home), **({"HERMES_DATABASE_URL": url} if url else {}), **(extra or {})}


def spawn_proxy(home: Path, url: str, *args: str, env: dict[str, str] | None = None, commit_delay: float = 0.0
                ) -> tuple[subprocess.Popen[bytes], Path]:
    """`python -m hermes proxy --port 0 ARGS`, started; (process, its stderr file). With
    ``commit_delay`` it starts through bench/commit_delay.py, which holds every recording's
    transaction open that long before COMMIT (the fault seam for kill -9 mid-write)."""
    home.mkdir(parents=True, exist_ok=True)
    err = home / f"proxy-{time.monotonic_ns()}.err"
    launcher = [str(BENCH / "commit_delay.py"), str(commit_delay)] if commit_delay else ["-m", "hermes"]
    proc = subprocess.Popen([sys.executable, *launcher, "proxy", "--port", "0", *args],
                            env=_env(home, url, env), stdout=subprocess.DEVNULL, stderr=err.open("wb"))
    return proc, err


def proxy_root(proc: subprocess.Popen[bytes], err: Path) -> str:
    """The proxy's root URL (what precedes ``/<route>``) once it listens."""
    return listening(proc, err, "proxy", timeout=60).replace("/<route>", "")


@dataclass
class Fleet(PgFleet):
    roots: list[str] = field(default_factory=list)

    def spawn(self, *args: str, env: dict[str, str] | None = None,
              commit_delay: float = 0.0) -> tuple[subprocess.Popen[bytes], Path]:
        proc, err = spawn_proxy(self.home, self.url, "--upstream", f"{ROUTE}={self.emu.url(ROUTE)}", *args, env=env,
                                commit_delay=commit_delay)
        self.procs.append(proc)
        return proc, err

    def start(self, *args: str, env: dict[str, str] | None = None,
              commit_delay: float = 0.0) -> tuple[subprocess.Popen[bytes], str]:
        proc, err = self.spawn(*args, env=env, commit_delay=commit_delay)
        return proc, proxy_root(proc, err)


@pytest.fixture(scope="module")
def fleet(pg_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with Emulator([ROUTE]) as emu:
        f = Fleet(tmp_path_factory.mktemp("proxy-scale"), pg_cluster.create_database(f"px_{secrets.token_hex(4)}"),
                  emu)
        try:
            started = [f.spawn() for _ in range(3)]  # side by side: start-up is most of the set-up
            f.roots.extend(proxy_root(proc, err) for proc, err in started)
            yield f
        finally:
            stop_all(f.procs)


class Client:
    """One conversation through the fleet; it drops reasoning, the test keeps what it saw."""

    def __init__(self, name: str, key: str, roots: list[str]) -> None:
        self.name, self.key = name, key
        self.sdks = [openai.OpenAI(base_url=f"{r}/{ROUTE}", api_key=key, max_retries=0, timeout=60) for r in roots]
        self.messages: list[dict[str, Any]] = []
        self.thoughts: list[str] = []
        """Reasoning of each assistant message in ``messages``, in order, as its response had it."""
        self.sent = 0

    def turn(self, question: str, first_worker: int) -> None:
        self.messages.append({"role": "user", "content": question})
        for step in range(4):
            worker = (first_worker + step) % len(self.sdks)  # never the worker of the step before
            msg = openai_step(self.sdks[worker], MODEL, self.messages, stream=(self.sent % 2 == 1),
                              seen=self.thoughts)
            self.sent += 1
            assert self.thoughts[-1], "the emulator answers with reasoning"
            self.messages.append(msg)
            if not msg.get("tool_calls"):
                return
            for c in msg["tool_calls"]:
                self.messages.append({"role": "tool", "tool_call_id": c["id"], "content": RESULT})


def _conversation_of(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"]).split(" turn ", 1)[0]


def _check_every_request_restored_exactly(emu: Emulator, clients: list[Client], since: int) -> int:
    """Every request the upstream saw from these clients: the k-th assistant message carries the
    k-th reasoning its client saw. Returns how many requests were checked."""
    by_name = {c.name: c for c in clients}
    checked = 0
    for req in emu.requests(ROUTE)[since:]:
        client = by_name.get(_conversation_of(req["body"]))
        if client is None:
            continue
        sent = [m.get("reasoning_content") for m in req["body"]["messages"] if m.get("role") == "assistant"]
        assert sent == client.thoughts[:len(sent)], f"{client.name}: a restore differs from what was recorded"
        checked += 1
    return checked


def _memory_rows(fleet: Fleet, key: str) -> list[tuple[str, str]]:
    return [(k, m) for k, m in fleet.sql("SELECT key, message FROM proxy_memory WHERE tenant = %s",
                                          tenant_of({"authorization": f"Bearer {key}"}, ROUTE))]


def _check_memory_holds_whole_recordings(fleet: Fleet, clients: list[Client], key: str) -> None:
    """The tenant's memory: one row per assistant turn of its clients, each decoding to a whole
    turn whose recognition key is its row's key and whose reasoning one response had."""
    rows = _memory_rows(fleet, key)
    mine = [c for c in clients if c.key == key]
    assert len(rows) == sum(len(c.thoughts) for c in mine), "one recording per assistant turn, none lost"
    thoughts = {t for c in mine for t in c.thoughts}
    keyed: dict[str | None, str] = {}  # each assistant message's key, after its conversation so far
    for c in mine:
        before = prefixes(c.messages)
        keyed.update((client_key(m, prefix=before[i]), before[i]) for i, m in enumerate(c.messages)
                     if m.get("role") == "assistant")
    for k, data in rows:
        m = loads(data)
        assert k in keyed and message_key(m, keyed[k]) == k
        assert "".join(r.text for r in m.reasoning) in thoughts


def test_eight_clients_through_three_proxy_processes_restore_every_turn(fleet: Fleet) -> None:
    since = len(fleet.emu.requests(ROUTE))
    keys = [f"sk-tenant-{t}" for t in range(4)]  # two conversations per tenant
    clients = [Client(f"client {i}", keys[i % 4], fleet.roots) for i in range(8)]
    turns = 25

    def run(i: int) -> None:
        c = clients[i]
        for j in range(turns):
            c.turn(f"{c.name} turn {j}: list the files", first_worker=i + j)

    started = time.monotonic()
    with ThreadPoolExecutor(len(clients)) as pool:
        list(pool.map(run, range(len(clients))))
    elapsed = time.monotonic() - started
    checked = _check_every_request_restored_exactly(fleet.emu, clients, since)
    assert checked == sum(c.sent for c in clients) >= 8 * turns * 2
    last = [r for r in fleet.emu.requests(ROUTE)[since:] if len(r["body"]["messages"]) > 4 * turns - 2]
    assert last and all(sum(1 for m in r["body"]["messages"] if m.get("role") == "assistant") >= 2 * turns - 1
                        for r in last), "late requests carry the whole conversation, every turn restored"
    for key in keys:
        _check_memory_holds_whole_recordings(fleet, clients, key)
    print(f"\n{checked} requests through 3 proxy processes in {elapsed:.1f} s")


def test_kill_9_mid_write_leaves_no_partial_entry_and_the_retry_works_elsewhere(fleet: Fleet) -> None:
    doomed, doomed_root = fleet.start(commit_delay=60)
    key = "sk-killed-worker"
    c = Client("killed", key, [fleet.roots[0], fleet.roots[1], doomed_root])
    c.turn("killed turn 0: list the files", first_worker=0)  # workers 0 and 1 record it
    before = _memory_rows(fleet, key)
    assert len(before) == 2
    c.messages.append({"role": "user", "content": "killed turn 1: list the files"})
    seen: list[str] = []
    errors: list[BaseException] = []

    def doomed_request() -> None:
        try:
            openai_step(c.sdks[2], MODEL, c.messages, stream=True, seen=seen)
        except (openai.APIError, OSError, Exception) as e:  # the connection dies under the stream
            errors.append(e)

    import threading

    t = threading.Thread(target=doomed_request)
    t.start()
    # the doomed worker has the response, has written its recording and sits before COMMIT;
    # its client has not seen the response end (the write comes first)
    idle = ("SELECT COUNT(*) FROM pg_stat_activity WHERE state = 'idle in transaction'"
            " AND datname = current_database()")
    wait_for(lambda: fleet.sql(idle + " AND state_change < now() - interval '1 second'") != [(0,)])  # not a read
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait()
    t.join(timeout=30)
    assert errors and not seen, "the client never got the end of that response"
    wait_for(lambda: fleet.sql(idle) == [(0,)])
    assert _memory_rows(fleet, key) == before, "the killed worker's write is gone whole"

    since = len(fleet.emu.requests(ROUTE))
    for step in range(4):  # the client retries the same request on another worker, then goes on
        msg = openai_step(c.sdks[(1 + step) % 2], MODEL, c.messages, stream=True, seen=c.thoughts)
        c.sent += 1
        c.messages.append(msg)
        if not msg.get("tool_calls"):
            break
        c.messages.extend({"role": "tool", "tool_call_id": x["id"], "content": RESULT} for x in msg["tool_calls"])
    c.turn("killed turn 2: list the files", first_worker=0)
    assert _check_every_request_restored_exactly(fleet.emu, [c], since) >= 4
    _check_memory_holds_whole_recordings(fleet, [c], key)
    assert len(_memory_rows(fleet, key)) == 6


def test_workers_flag_serves_the_proxy_from_supervised_processes(fleet: Fleet) -> None:
    proc, err = spawn_proxy(fleet.home, fleet.url, "--workers", "3", "--upstream", f"{ROUTE}={fleet.emu.url(ROUTE)}")
    try:
        root = proxy_root(proc, err)
        assert "(3 workers)" in err.read_text()

        first = children(proc.pid)
        assert len(first) == 3
        os.kill(first[0], signal.SIGKILL)
        wait_for(lambda: len(now := children(proc.pid)) == 3 and first[0] not in now, 60)
        since = len(fleet.emu.requests(ROUTE))
        c = Client("workers", "sk-workers-flag", [root] * 3)  # three connections: whichever worker accepts each
        for j in range(4):
            c.turn(f"workers turn {j}: list the files", first_worker=j)
        assert _check_every_request_restored_exactly(fleet.emu, [c], since) == c.sent
        _check_memory_holds_whole_recordings(fleet, [c], c.key)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    assert "every worker finished" in err.read_text()


def test_workers_on_state_db_share_the_memory_too(emulator: Any, hermes_home: Path) -> None:
    """One host without PostgreSQL: `--workers 2` on state.db, each request on a new connection
    (whichever worker accepts it); every restore exact, every turn recorded once."""
    proc, err = spawn_proxy(hermes_home, "", "--workers", "2", "--upstream", f"{ROUTE}={emulator.url(ROUTE)}")
    try:
        root = proxy_root(proc, err)
        since = len(emulator.requests(ROUTE))
        c = Client("state.db workers", "sk-state-db-workers", [root] * 4)
        for j in range(4):
            c.turn(f"state.db workers turn {j}: list the files", first_worker=j)
        assert _check_every_request_restored_exactly(emulator, [c], since) == c.sent
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    import sqlite3

    with sqlite3.connect(hermes_home / "state.db") as db:
        (n,) = db.execute("SELECT COUNT(*) FROM proxy_memory WHERE tenant = ?",
                          (tenant_of({"authorization": f"Bearer {c.key}"}, ROUTE),)).fetchone()
    db.close()
    assert n == len(c.thoughts)
