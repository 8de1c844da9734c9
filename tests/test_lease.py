"""Session leases with fencing tokens, on SQLite and on a real PostgreSQL.

What must hold: a new holder always gets a larger fencing token than every earlier holder;
a step offered under a lease that was taken over is refused and writes nothing, even though
the stale holder still believes it holds the session; the CLI takes the same lease as a
gateway worker, so a CLI turn on a session another process is running is refused, not
interleaved.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from _cli import cli
from test_store import count, reopen

from hermes.core.errors import StoreError
from hermes.core.messages import Message, Text
from hermes.store import Store
from hermes.store.lease import Fenced, Lease, LeaseBusy, LeaseLost, hold_lease
from hermes.store.pg import PgStore


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest) -> Any:
    s = Store() if request.param == "sqlite" else PgStore(request.getfixturevalue("pg_url"))
    yield s
    s.close()


def step(n: int) -> list[Message]:
    return [Message.user(f"q{n}"), Message("assistant", (Text(f"a{n}"),))]


def test_a_worker_whose_lease_was_taken_over_cannot_commit(store: Any) -> None:
    sid = store.create_session(provider="p", model="m")
    with reopen(store) as other:  # the second worker: another connection, as another process has
        fence_a = store.acquire_lease(sid, "worker-a", 0.2)
        a = Lease(sid, "worker-a", fence_a)
        assert store.append_turn(sid, step(1), fence=a) == 1  # while it holds the lease: fine
        assert other.acquire_lease(sid, "worker-b", 30) is None  # still held
        time.sleep(0.3)  # worker-a stalls past its TTL (a GC pause, a partition)
        fence_b = other.acquire_lease(sid, "worker-b", 30)
        assert fence_b is not None and fence_b > fence_a
        before = tuple(count(store, t) for t in ("turns", "messages", "parts"))
        with pytest.raises(LeaseLost, match=f"fence {fence_a}.*no longer current.*not stored"):
            store.append_turn(sid, step(2), fence=a)
        assert tuple(count(store, t) for t in ("turns", "messages", "parts")) == before
        assert other.append_turn(sid, step(2), fence=Lease(sid, "worker-b", fence_b)) == 2
        assert [m.text for m in store.load(sid)] == ["q1", "a1", "q2", "a2"]
        # worker-a comes back and renews: it does not get the session back while b holds it
        assert store.acquire_lease(sid, "worker-a", 30) is None


def test_fencing_tokens_only_grow_and_renewals_keep_theirs(store: Any) -> None:
    sid = store.create_session(provider="p", model="m")
    first = store.acquire_lease(sid, "a", 30)
    assert store.acquire_lease(sid, "a", 30) == first  # renewal
    assert store.release_lock(sid, "a")
    second = store.acquire_lease(sid, "b", 30)
    assert second is not None and first is not None and second > first  # released, not reset
    assert store.release_lock(sid, "b")
    # a released lease is gone: even its last owner cannot commit under it
    with pytest.raises(LeaseLost, match="no lease"):
        store.append_turn(sid, step(1), fence=Lease(sid, "b", second))
    assert store.load(sid) == []
    other = store.create_session(provider="p", model="m")
    assert store.acquire_lease(other, "a", 30) == 1  # per session


def test_lease_session_takes_the_lease_and_reads_the_row_in_one_transaction(store: Any) -> None:
    """What a gateway turn takes: the fence acquire_lease would give, and the row as it is
    under that lease (its counts are the version hot sessions are checked against)."""
    sid = store.create_session(provider="p", model="m", title="t")
    store.append_turn(sid, step(1))
    fence, row = store.lease_session(sid, "a", 30)
    assert fence == 1 and row == store.get_session(sid)
    assert (row.id, row.title, row.message_count, row.turn_count) == (sid, "t", 2, 1)
    assert store.lease_session(sid, "b", 30) is None  # held by a: refused, nothing read
    assert store.append_turn(sid, step(2), fence=Lease(sid, "a", fence)) == 2
    assert store.lease_session(sid, "a", 30) == (fence, store.get_session(sid))  # a renewal keeps its token
    assert store.get_session(sid).message_count == 4
    assert store.release_lock(sid, "a")
    fence_b, _ = store.lease_session(sid, "b", 30)
    assert fence_b == fence + 1
    with pytest.raises(StoreError, match="unknown session"):
        store.lease_session("no-such-session", "a", 30)


def test_fenced_view_fences_only_its_session(store: Any) -> None:
    sid = store.create_session(provider="p", model="m")
    free = store.create_session(provider="p", model="m")
    lease = Lease(sid, "w", store.acquire_lease(sid, "w", 30))
    view = Fenced(store, lease)
    assert view.append_turn(sid, step(1)) == 1
    assert view.append_turn(free, step(1)) == 1  # another session: not leased, not fenced
    assert view.get_session(sid).turn_count == 1  # everything else passes through
    store.release_lock(sid, "w")
    with pytest.raises(LeaseLost):
        view.append_turn(sid, step(2))


def test_hold_lease_waits_then_reports_busy_and_releases(store: Any) -> None:
    sid = store.create_session(provider="p", model="m")
    with hold_lease(store, sid, ttl_s=0.3, wait_s=0.1) as lease:
        assert lease.fence == 1
        time.sleep(0.5)  # longer than the TTL: the renewing thread keeps it
        with pytest.raises(LeaseBusy, match="running a turn in another process"), \
                hold_lease(store, sid, wait_s=0.1):
            pass
        assert store.append_turn(sid, step(1), fence=lease) == 1
    assert count(store, "session_locks") == 0
    with hold_lease(store, sid, wait_s=0.1) as again:
        assert again.fence == 2


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_cli_turn_on_a_session_another_process_runs_is_refused(
        backend: str, emulator: Any, hermes_home: Path, request: pytest.FixtureRequest,
        monkeypatch: pytest.MonkeyPatch) -> None:
    if backend == "postgres":
        monkeypatch.setenv("HERMES_DATABASE_URL", request.getfixturevalue("pg_url"))
    base = ["-p", "deepseek", "-m", "deepseek-v4-pro", "-u", emulator.url("deepseek")]
    out = cli(hermes_home, "chat", "-q", "first", "--json", *base)
    import orjson

    sid = orjson.loads(out.stdout)["session_id"]
    from hermes.store import open_store

    with open_store() as s:
        assert s.acquire_lease(sid, "gateway:elsewhere:1", 60) is not None
        r = cli(hermes_home, "chat", "-q", "second", "--resume", sid, check=False)
        assert r.returncode != 0 and "running a turn in another process" in r.stderr
        assert [m.text for m in s.load(sid) if m.role == "user"] == ["first"]
        assert s.release_lock(sid, "gateway:elsewhere:1")
    cli(hermes_home, "chat", "-q", "second", "--resume", sid)
    with open_store() as s:
        assert [m.text for m in s.load(sid) if m.role == "user"] == ["first", "second"]
        assert count(s, "session_locks") == 0  # the CLI released its lease


def test_a_lease_left_by_a_killed_local_process_is_broken_at_once(store: Any) -> None:
    import os
    import socket
    import subprocess
    import sys

    sid = store.create_session(provider="p", model="m")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_owner = f"cli:{socket.gethostname()}:{int(dead.stdout)}:abcd:1"
    assert store.acquire_lease(sid, dead_owner, 60) == 1
    assert store.lease_holder(sid) == dead_owner
    started = time.monotonic()
    with hold_lease(store, sid, wait_s=5) as lease:
        assert lease.fence == 2 and time.monotonic() - started < 2  # not waited out
    # a live holder on this host (this very process) is waited for, then reported
    live_owner = f"cli:{socket.gethostname()}:{os.getpid()}:ef01:1"
    assert store.acquire_lease(sid, live_owner, 60) == 3
    with pytest.raises(LeaseBusy), hold_lease(store, sid, wait_s=0.2):
        pass
    # and one on another host is left to its TTL
    assert store.release_lock(sid, live_owner)
    assert store.acquire_lease(sid, "cli:elsewhere:1:ab:1", 60) == 4
    with pytest.raises(LeaseBusy), hold_lease(store, sid, wait_s=0.2):
        pass
