"""The proxy's reasoning memory on both backends: ``state.db`` and a real PostgreSQL server.

Every test taking ``backend`` runs twice, on SQLite and on the PostgreSQL server the tests
start themselves (``pg_url`` in conftest.py); the memory is opened the way ``hermes proxy``
opens it (``open_memory`` on the configured session store). Two memories on one database
stand for two proxy workers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from _procs import wait_for
from _proxy import TOOLS, openai_loop, running_proxy

from hermes.core.errors import StoreError
from hermes.core.messages import Message, Reasoning, RouteKey, ToolCall, dumps
from hermes.proxy import Bounds, SqliteMemory, message_key, open_memory, tenant_of
from hermes.proxy.pgmemory import PgMemory
from hermes.replay import PAD
from hermes.store import Store
from hermes.store.pg import PgStore

KEY = RouteKey("deepseek", "api.deepseek.com", "deepseek-v4", "openai_chat")


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> Iterator[Any]:
    s = Store() if request.param == "sqlite" else PgStore(request.getfixturevalue("pg_url"))
    yield s
    s.close()


def reopen(store: Any) -> Any:
    """A second store on the same database: what another worker process holds."""
    return Store(store.path) if isinstance(store, Store) else PgStore(str(store._pool.conninfo))


def turn(i: int, thought: str | None = None, size: int = 0) -> tuple[str, Message]:
    m = Message("assistant", (Reasoning(thought or f"thought {i} " + "x" * size, KEY),
                              ToolCall(f"call_{i}", "f", f'{{"i": {i}}}')))
    k = message_key(m)
    assert k is not None
    return k, m


def test_open_memory_follows_the_session_store(backend: Any) -> None:
    mem = open_memory(backend)
    try:
        assert isinstance(mem, PgMemory if isinstance(backend, PgStore) else SqliteMemory)
    finally:
        mem.close()


def test_recordings_round_trip_exactly_and_stay_with_their_tenant(backend: Any) -> None:
    mem = open_memory(backend)
    k, m = turn(1, "thinks \x00 with a NUL, ünïcode and \"quotes\"")
    k2, m2 = turn(2)
    try:
        mem.remember("tenant-a", k, m)
        mem.remember("tenant-a", k2, m2)
        got = mem.recall("tenant-a", [k, "not-recorded"])
        assert list(got) == [k] and dumps(got[k]) == dumps(m)
        assert mem.recall("tenant-b", [k, k2]) == {}, "another tenant never sees them"
        _, newer = turn(1, "second answer to the same call")
        mem.remember("tenant-a", k, newer)
        assert mem.recall("tenant-a", [k]) == {k: newer}, "a key recorded again is replaced"
        assert mem.stats("tenant-a")[0] == 2  # type: ignore[attr-defined]
    finally:
        mem.close()


def test_another_worker_sees_a_recording_at_once_and_its_replacement(backend: Any) -> None:
    other = reopen(backend)
    a, b = open_memory(backend), open_memory(other)
    k, m = turn(3)
    try:
        assert b.recall("t", [k]) == {}
        a.remember("t", k, m)
        assert b.recall("t", [k]) == {k: m}  # b's decode cache now holds m
        _, newer = turn(3, "replaced by worker a")
        a.remember("t", k, newer)
        assert b.recall("t", [k]) == {k: newer}, "a cached decode never hides the store's current row"
    finally:
        a.close()
        b.close()
        other.close()


def test_a_recording_another_worker_evicted_is_not_restored_from_what_this_one_holds(backend: Any) -> None:
    one = len(dumps(turn(0, size=300)[1]))
    other = reopen(backend)
    a, b = open_memory(backend, Bounds(max_bytes=2 * one + 10)), open_memory(other, Bounds(max_bytes=2 * one + 10))
    first = turn(0, size=300)
    try:
        b.remember("t", *first)  # b wrote it, so b holds it decoded
        assert b.recall("t", [first[0]]) == {first[0]: first[1]}
        for i in range(1, 4):
            time.sleep(0.002)
            a.remember("t", *turn(i, size=300))  # a's writes evict the oldest: b's
        assert b.recall("t", [first[0]]) == {}, "evicted everywhere, whatever a worker holds"
    finally:
        a.close()
        b.close()
        other.close()


def test_expired_recordings_are_never_restored_and_pruned(backend: Any) -> None:
    mem = open_memory(backend, Bounds(max_age_s=0.4))
    k, m = turn(4)
    try:
        mem.remember("t", k, m)
        assert mem.recall("t", [k]) == {k: m}
        time.sleep(0.5)
        assert mem.recall("t", [k]) == {}, "expired recordings are never restored"
        assert mem.prune() == 1
        assert mem.stats("t") == (0, 0)  # type: ignore[attr-defined]
    finally:
        mem.close()


def test_the_size_bound_evicts_the_oldest_first(backend: Any) -> None:
    one = len(dumps(turn(0, size=300)[1]))
    mem = open_memory(backend, Bounds(max_bytes=3 * one + 10))
    recorded = [turn(i, size=300) for i in range(6)]
    try:
        for k, m in recorded:
            mem.remember("t", k, m)
            time.sleep(0.002)  # distinct ages
        mem.remember("small", *turn(99))
        count, size = mem.stats("t")  # type: ignore[attr-defined]
        assert count == 3 and size <= 3 * one + 10
        kept = mem.recall("t", [k for k, _ in recorded])
        assert sorted(kept) == sorted(k for k, _ in recorded[3:]), "the three newest stay"
        assert mem.stats("small")[0] == 1, "one tenant's bound never evicts another's"  # type: ignore[attr-defined]
    finally:
        mem.close()


def test_workers_recording_at_once_keep_the_size_bound(backend: Any) -> None:
    one = len(dumps(turn(0, size=200)[1]))
    bound = 5 * one + 10
    stores = [backend, reopen(backend)]
    mems = [open_memory(s, Bounds(max_bytes=bound)) for s in stores]
    errors: list[BaseException] = []

    def work(w: int) -> None:
        try:
            for i in range(25):
                mems[w].remember("shared", *turn(w * 100 + i, size=200))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(w,)) for w in (0, 1, 0, 1)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        count, size = mems[1].stats("shared")  # type: ignore[attr-defined]
        biggest = len(dumps(turn(199, size=200)[1]))
        assert bound - biggest < size <= bound, (count, size)  # full to the bound, never past it
    finally:
        for m in mems:
            m.close()
        stores[1].close()


def test_a_row_that_does_not_decode_counts_as_not_recorded(backend: Any) -> None:
    mem = open_memory(backend)
    k, m = turn(5)
    try:
        mem.remember("t", k, m)
        if isinstance(backend, Store):
            import sqlite3

            with sqlite3.connect(backend.path) as c:
                c.execute("UPDATE proxy_memory SET message = '{\"not\": \"a message\"}'")
        else:
            import psycopg

            with psycopg.connect(str(backend._pool.conninfo), autocommit=True) as c:
                c.execute("UPDATE proxy_memory SET message = '{\"not\": \"a message\"}'")
        assert mem.recall("t", [k]) == {}
    finally:
        mem.close()


def test_a_closed_memory_refuses_instead_of_reading_elsewhere(backend: Any) -> None:
    mem = open_memory(backend)
    mem.close()
    with pytest.raises(StoreError):
        mem.recall("t", [turn(6)[0]])


def test_the_proxy_restores_from_either_backend(emulator: Any, backend: Any) -> None:
    model = "deepseek-v4-pro"
    with running_proxy(emulator, store=backend) as px:
        c = openai.OpenAI(base_url=px.url("deepseek"), api_key="sk-backend", max_retries=0)
        history = openai_loop(c, model, ("which backend keeps this",), False)
        before = len(emulator.requests("deepseek"))
        other = openai.OpenAI(base_url=px.url("deepseek"), api_key="sk-someone-else", max_retries=0)
        more = [*history, {"role": "user", "content": "and then?"}]
        c.chat.completions.create(model=model, messages=more, tools=TOOLS)
        other.chat.completions.create(model=model, messages=more, tools=TOOLS)
        mine, theirs = emulator.requests("deepseek")[before:]
    calls = [m for m in mine["body"]["messages"] if m.get("tool_calls")]
    assert "which backend keeps this" in calls[0]["reasoning_content"]
    assert next(m for m in theirs["body"]["messages"] if m.get("tool_calls"))["reasoning_content"] == PAD
    sql = "SELECT tenant, message FROM proxy_memory"
    mine_t = tenant_of({"authorization": "Bearer sk-backend"}, "deepseek")
    both = {mine_t, tenant_of({"authorization": "Bearer sk-someone-else"}, "deepseek")}

    def rows() -> list[Any]:
        return list(backend._read(sql) if isinstance(backend, PgStore) else backend._c.execute(sql).fetchall())

    wait_for(lambda: {t for t, _ in rows()} == both)  # the last recordings land on a worker thread
    rows_now = rows()
    assert not any("which backend keeps this" in m for t, m in rows_now if t != mine_t)
    assert not any("sk-" in m for _, m in rows_now), "no credential is stored"


def test_a_database_out_of_reach_costs_the_restore_not_the_request(emulator: Any, pg_url: str) -> None:
    import psycopg

    from hermes.store.requestlog import read_log

    model, db = "deepseek-v4-pro", pg_url.rsplit("/", 1)[1]
    admin = pg_url.rsplit("/", 1)[0] + "/postgres"
    store = PgStore(pg_url)
    try:
        with running_proxy(emulator, store=store) as px:
            c = openai.OpenAI(base_url=px.url("deepseek"), api_key="sk-outage", max_retries=0)
            history = openai_loop(c, model, ("before the outage",), False)
            tenant = tenant_of({"authorization": "Bearer sk-outage"}, "deepseek")
            wait_for(lambda: px.memory.stats(tenant)[0] == 2)  # written: not served from `pending`
            with psycopg.connect(admin, autocommit=True) as a:  # nobody may connect; open ones are cut
                a.execute(f'ALTER DATABASE "{db}" ALLOW_CONNECTIONS false')
                a.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (db,))
            try:
                before = len(emulator.requests("deepseek"))
                more = [*history, {"role": "user", "content": "during the outage"}]
                r = c.chat.completions.create(model=model, messages=more, tools=TOOLS)
                assert r.choices[0].message.tool_calls, "the client got its answer"
                sent = emulator.requests("deepseek")[before]
            finally:
                with psycopg.connect(admin, autocommit=True) as a:
                    a.execute(f'ALTER DATABASE "{db}" ALLOW_CONNECTIONS true')
            calls = [m for m in sent["body"]["messages"] if m.get("tool_calls")]
            assert calls[0]["reasoning_content"] == PAD, "the route's fallback while the memory is out of reach"
            history = openai_loop(c, model, ("after the outage",), False, messages=more[:-1])
            after = emulator.requests("deepseek")[-1]
        restored = [m["reasoning_content"] for m in after["body"]["messages"] if m.get("tool_calls")]
        assert "before the outage" in restored[0], "restores resume once the database is back"
    finally:
        store.close()
    errors = [r for r in read_log() if r["event"] == "proxy_error"]
    assert errors and all("sk-" not in r["error"] for r in errors)
