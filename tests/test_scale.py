"""Scale-out: several `hermes gateway` processes on one PostgreSQL, as if on several hosts.

Each worker is a real ``python -m hermes gateway`` process with its own port and
``HERMES_DATABASE_URL`` pointing at one database on the throw-away server the tests start.
What must hold:

* turns on one session alternating between workers, each of which keeps the session hot in
  its own process: every request carries every earlier turn, and every reasoning blob stored
  by whichever worker ran it, byte for byte (a hot entry that missed another worker's commit
  would send a shorter history);
* 8 clients x 25 turns on two shared sessions, every request sent to a different worker than
  the last: every message stored exactly once, each client's turns in order, nothing
  interleaved (the session's lease in the database serialises turns across processes);
* ``kill -9`` of a worker in the middle of a step's commit leaves no trace of that step, and
  the session continues on another worker once the dead worker's lease expires;
* a worker that was paused past its lease TTL while another took the session over cannot
  commit its step when it wakes up (fencing);
* ``hermes gateway --workers 3`` serves from three supervised processes on one port and
  replaces one that is killed.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from _procs import PgFleet, children, stop_all, wait_for
from test_gateway import _env, check_serialised, opaque_payloads, start_process, strings_in

from hermes.emulate import Emulator
from hermes.store.pg import PgStore

BENCH = Path(__file__).resolve().parent.parent / "bench"

pytestmark = pytest.mark.slow

ROUTE, MODEL = "openai-responses", "gpt-5"


@dataclass
class Fleet(PgFleet):
    bases: list[str] = field(default_factory=list)

    def start(self, *args: str, commit_delay: float = 0.0) -> tuple[subprocess.Popen[bytes], str]:
        """One gateway worker; ``commit_delay`` starts it through bench/commit_delay.py, which
        holds every appended turn's transaction open that long before COMMIT."""
        launcher = (str(BENCH / "commit_delay.py"), str(commit_delay)) if commit_delay else ("-m", "hermes")
        proc, base, _ = start_process(self.home, "--lock-wait", "60", "--allow-base-url", self.emu.root, *args,
                                      env={"HERMES_DATABASE_URL": self.url}, launcher=launcher)
        self.procs.append(proc)
        return proc, base

    def client(self, base: str) -> httpx.Client:
        from test_gateway import TOKEN

        return httpx.Client(base_url=base, headers={"authorization": f"Bearer {TOKEN}"}, timeout=120)

    def create(self, base: str | None = None) -> str:
        with self.client(base or self.bases[0]) as c:
            r = c.post("/v1/sessions", json={"provider": ROUTE, "model": MODEL, "base_url": self.emu.url(ROUTE)})
        assert r.status_code == 201, r.text
        return str(r.json()["id"])

    def store(self) -> PgStore:
        return PgStore(self.url)


@pytest.fixture(scope="module")
def fleet(pg_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with Emulator([ROUTE]) as emu:  # our own: tests here slow its streams down
        url = pg_cluster.create_database(f"scale_{secrets.token_hex(4)}")
        f = Fleet(tmp_path_factory.mktemp("scale-home"), url, emu)
        try:
            for _ in range(3):
                f.bases.append(f.start("--lock-ttl", "5")[1])
            yield f
        finally:
            stop_all(f.procs)


def test_eight_clients_on_shared_sessions_across_three_workers(fleet: Fleet) -> None:
    sessions = [fleet.create(), fleet.create(fleet.bases[1])]
    clients, turns = 8, 25

    def client(i: int) -> None:
        workers = [fleet.client(b) for b in fleet.bases]
        try:
            for j in range(turns):
                c = workers[(i + j) % 3]  # every turn on another worker than the last
                r = c.post(f"/v1/sessions/{sessions[i % 2]}/messages", json={"content": f"c{i} t{j}"})
                assert r.status_code == 200, r.text
                assert f"'c{i} t{j}'" in r.json()["answer"]
        finally:
            for c in workers:
                c.close()

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    with fleet.store() as s:
        for k, sid in enumerate(sessions):
            history = s.load(sid)
            check_serialised(history, [f"c{i} t{j}" for i in range(k, clients, 2) for j in range(turns)])
            assert s.get_session(sid).turn_count == clients // 2 * turns * 2  # two steps per turn
    assert fleet.sql("SELECT COUNT(*) FROM session_locks") == [(0,)]
    fences = fleet.sql("SELECT lease_fence FROM sessions WHERE id = ANY(%s)", sessions)
    assert all(f >= clients // 2 * turns for (f,) in fences)  # one lease per turn, across processes


def test_hot_workers_alternating_on_one_session_send_every_earlier_turn(fleet: Fleet) -> None:
    sid = fleet.create()
    order = [0, 0, 1, 0, 2, 2, 1, 1, 0, 2]  # hits (same worker again) and tails (another committed)
    workers = [fleet.client(b) for b in fleet.bases]
    try:
        for j, w in enumerate(order):
            with fleet.store() as s:
                stored = s.load(sid)
            n = len(fleet.emu.requests(ROUTE))
            r = workers[w].post(f"/v1/sessions/{sid}/messages", json={"content": f"turn {j}"})
            assert r.status_code == 200, r.text
            first = fleet.emu.requests(ROUTE)[n]["body"]
            users = [i for i in first["input"] if i.get("role") == "user"]
            assert len(users) == j + 1, f"turn {j} on worker {w} sent {len(users)} user turns, not {j + 1}"
            blobs = opaque_payloads(stored)
            assert len(blobs) >= j, "each earlier turn stored reasoning to replay"
            assert set(blobs) <= strings_in(first), f"turn {j} on worker {w} dropped stored reasoning"
    finally:
        for c in workers:
            c.close()
    with fleet.store() as s:
        assert s.get_session(sid).message_count == 4 * len(order)


def test_kill_9_mid_commit_leaves_no_partial_step_and_another_worker_continues(fleet: Fleet) -> None:
    slow, slow_base = fleet.start("--lock-ttl", "2", commit_delay=60)
    sid = fleet.create()
    with fleet.client(fleet.bases[0]) as c:
        assert c.post(f"/v1/sessions/{sid}/messages", json={"content": "c0 t0"}).status_code == 200
    with fleet.store() as s:
        before = [m.text for m in s.load(sid)]

    def doomed() -> None:
        with fleet.client(slow_base) as c, pytest.raises(httpx.TransportError):
            c.post(f"/v1/sessions/{sid}/messages", json={"content": "c0 t1"})

    t = threading.Thread(target=doomed)
    t.start()
    # the slow worker's first step has written its rows and sits before COMMIT: idle in a
    # transaction for a second or more (a read between statements is idle for microseconds)
    wait_for(lambda: fleet.sql("SELECT COUNT(*) FROM pg_stat_activity WHERE state = 'idle in transaction'"
                                " AND datname = current_database()"
                                " AND state_change < now() - interval '1 second'") != [(0,)])
    os.kill(slow.pid, signal.SIGKILL)
    slow.wait()
    t.join()
    wait_for(lambda: fleet.sql("SELECT COUNT(*) FROM pg_stat_activity WHERE state = 'idle in transaction'"
                                " AND datname = current_database()") == [(0,)])
    with fleet.store() as s:
        assert [m.text for m in s.load(sid)] == before  # no partial step: the transaction died with it
        assert s.get_session(sid).turn_count == 2
    # the killed worker never released its lease: the next turn must wait for it to run out
    # (by the clock the lease was written with, not by how long this test took to get here)
    held = fleet.sql("SELECT expires FROM session_locks WHERE session_id = %s", sid)
    assert held, "the killed worker's lease is gone: nothing left to wait for"
    with fleet.client(fleet.bases[1]) as c:
        r = c.post(f"/v1/sessions/{sid}/messages", json={"content": "c0 t1", "wait_s": 30})
    assert r.status_code == 200, r.text
    assert time.time() >= held[0][0], "the turn finished before the dead worker's lease ran out"
    with fleet.store() as s:
        check_serialised(s.load(sid), ["c0 t0", "c0 t1"])


def _slow_turn(fleet: Fleet, base: str, sid: str, text: str) -> tuple[threading.Thread, dict[str, Any]]:
    """A turn on a slowed emulator, started in a thread; returns once its lease is held and its
    first model call is in flight (the caller resets the emulator's delay)."""
    result: dict[str, Any] = {}
    sent: list[int] = []

    def turn() -> None:
        with fleet.client(base) as c:
            sent.append(len(fleet.emu.requests(ROUTE)))
            fleet.emu.state.set_control(ROUTE, delay=0.1)  # a streamed response takes ~1-2 s
            r = c.post(f"/v1/sessions/{sid}/messages", json={"content": text})
            result["status"], result["body"] = r.status_code, r.json()

    t = threading.Thread(target=turn)
    t.start()
    wait_for(lambda: bool(sent) and len(fleet.emu.requests(ROUTE)) > sent[0])
    return t, result


def test_a_live_turn_longer_than_its_lease_ttl_keeps_its_lease(fleet: Fleet) -> None:
    """The worker renews the leases its turns hold (one task per process, every ttl/3): a turn
    that outlives the TTL several times is never taken over, and commits."""
    _, base = fleet.start("--lock-ttl", "1")
    sid = fleet.create()
    try:
        t, result = _slow_turn(fleet, base, sid, "slow")
        time.sleep(1.5)  # past the TTL: only a renewal keeps it
        with fleet.store() as s:
            assert s.acquire_lease(sid, "intruder", 30) is None, "the live turn's lease was not renewed"
        t.join(timeout=60)
    finally:
        fleet.emu.state.set_control(ROUTE, delay=0.0)
    assert result["status"] == 200, result
    with fleet.store() as s:
        assert [m.role for m in s.load(sid)] == ["user", "assistant", "tool", "assistant"]


def test_a_paused_worker_whose_lease_was_taken_over_cannot_commit(fleet: Fleet) -> None:
    paused, base = fleet.start("--lock-ttl", "1")
    sid = fleet.create()
    try:
        t, result = _slow_turn(fleet, base, sid, "stale")  # lease held, model call in flight
        os.kill(paused.pid, signal.SIGSTOP)  # a GC pause, a VM migration, a partition
        time.sleep(1.5)  # past its TTL: nobody renews it
        with fleet.store() as s:
            fence = s.acquire_lease(sid, "intruder", 30)
            assert fence is not None and fence >= 2
            from hermes.core.messages import Message
            from hermes.store.lease import Lease

            s.append_turn(sid, [Message.user("intruder step")], fence=Lease(sid, "intruder", fence))
        os.kill(paused.pid, signal.SIGCONT)
        t.join(timeout=60)
    finally:
        fleet.emu.state.set_control(ROUTE, delay=0.0)
        os.kill(paused.pid, signal.SIGCONT)
    assert result["status"] >= 400, result
    assert re.search(r"lease \(fence \d+\) is no longer current", result["body"]["error"]["message"])
    with fleet.store() as s:
        assert [m.text for m in s.load(sid)] == ["intruder step"]  # nothing of the stale worker's turn
        assert s.release_lock(sid, "intruder")


def test_workers_flag_serves_from_supervised_processes(fleet: Fleet) -> None:
    err = fleet.home / "workers.err"
    env = {**_env(fleet.home), "HERMES_DATABASE_URL": fleet.url}
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "gateway", "--port", "0", "--workers", "3",
                             "--lock-ttl", "2", "--allow-base-url", fleet.emu.root], env=env, stdout=subprocess.DEVNULL, stderr=err.open("wb"))
    try:
        wait_for(lambda: "listening on " in err.read_text() or proc.poll() is not None, 60)
        text = err.read_text()
        assert "(3 workers)" in text, text
        base = text.split("listening on ", 1)[1].split()[0]

        first = children(proc.pid)
        assert len(first) == 3
        sid = fleet.create(base)
        os.kill(first[0], signal.SIGKILL)
        wait_for(lambda: len(now := children(proc.pid)) == 3 and first[0] not in now, 60)
        with ThreadPoolExecutor(4) as pool:
            codes = list(pool.map(lambda j: fleet.client(base).post(
                f"/v1/sessions/{sid}/messages", json={"content": f"c{j % 2} t{j // 2}", "wait_s": 30}).status_code,
                range(4)))
        assert codes == [200] * 4
        with fleet.store() as s:
            assert sorted(m.text for m in s.load(sid) if m.role == "user") == ["c0 t0", "c0 t1", "c1 t0", "c1 t1"]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    assert "every worker finished" in err.read_text()
