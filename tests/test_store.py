"""The session store: byte-exact round trips, shared blobs, whole turns, safe opening.

Every test taking the ``store`` fixture runs twice: on SQLite (``state.db``) and on a real
PostgreSQL server the tests start themselves (``pg_url`` in conftest.py). Tests of SQLite's
file handling take ``sqlite_store``."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.core.errors import StoreError
from hermes.core.messages import (
    Compaction,
    Message,
    NativeRecord,
    Reasoning,
    RouteKey,
    Text,
    ToolCall,
    ToolResult,
    dumps,
    load_jsonl,
)
from hermes.store import SessionStore, Store, blob_hash
from hermes.store.migrations import MIGRATIONS
from hermes.store.pg import PgStore

REPO = Path(__file__).resolve().parents[1]
ORIGIN = RouteKey("anthropic", "api.anthropic.com", "claude-sonnet-4-5", "anthropic")


def where(store: Any) -> str:
    """What opens the same database again: a file path or a connection URL."""
    return str(store.path) if isinstance(store, Store) else str(store._pool.conninfo)


def reopen(store: Any) -> Any:
    """A second store on the same database: what another process would hold."""
    return Store(store.path) if isinstance(store, Store) else PgStore(where(store))


def sql(store: Any, statement: str) -> list[tuple[Any, ...]]:
    """Run ``statement`` on a separate connection (committed) and return its rows."""
    if isinstance(store, Store):
        with sqlite3.connect(store.path) as c:
            rows = c.execute(statement).fetchall()
        c.close()
        return rows
    import psycopg

    with psycopg.connect(where(store), autocommit=True) as pc:
        cur = pc.execute(statement)
        return cur.fetchall() if cur.description else []


def count(store: Any, table: str) -> int:
    """Row count read through a separate connection: what another process would see."""
    return int(sql(store, f"SELECT COUNT(*) FROM {table}")[0][0])


def dumped(history: list[Message]) -> list[bytes]:
    return [dumps(m) for m in history]


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest) -> Any:
    s = Store() if request.param == "sqlite" else PgStore(request.getfixturevalue("pg_url"))
    yield s
    s.close()


@pytest.fixture
def sqlite_store() -> Any:
    s = Store()
    yield s
    s.close()


# ----------------------------------------------------------------------------- strategies

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63) + 1, 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
texts = st.text(max_size=40)  # unicode, empty strings, NULs; never lone surrogates
big = st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=4), st.integers(1, 60_000))
blobs = st.one_of(texts, big)
origins = st.builds(RouteKey, texts, texts, texts, st.sampled_from(["anthropic", "openai_chat", "gemini"]))
natives = st.builds(
    NativeRecord,
    thought_signature=st.none() | texts,
    tool_signatures=st.lists(st.tuples(texts, texts), max_size=3).map(tuple),
    reasoning_opaque=st.none() | blobs,
    reasoning_text=st.none() | texts,
)
blob_kinds = st.sampled_from(
    ["anthropic.signature", "anthropic.redacted", "openai.encrypted", "openrouter.details"]
)


@st.composite
def reasonings(draw: st.DrawFn) -> Reasoning:
    with_blob = draw(st.booleans())
    return Reasoning(
        text=draw(st.one_of(texts, big)),
        origin=draw(origins),
        blob=draw(blobs) if with_blob else None,
        blob_kind=draw(blob_kinds) if with_blob else None,
        item_id=draw(st.none() | texts),
        native=draw(st.none() | natives),
        extra=draw(st.dictionaries(st.text(max_size=8), json_values, max_size=4)),
    )


parts = st.one_of(
    st.builds(Text, texts),
    reasonings(),
    st.builds(ToolCall, texts, texts, texts),
    st.builds(ToolResult, texts, st.one_of(texts, big), texts, st.booleans()),
    st.builds(Compaction, texts, st.integers(0, 10_000)),
)
messages = st.builds(
    Message,
    st.sampled_from(["system", "user", "assistant", "tool"]),
    st.lists(parts, max_size=5).map(tuple),
)
histories = st.lists(st.lists(messages, min_size=1, max_size=4), min_size=1, max_size=4)


# ----------------------------------------------------------------------------- round trip


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=histories)
def test_load_is_byte_exact_and_branch_loads_identically(store: Store, turns: list[list[Message]]) -> None:
    sid = store.create_session(provider="anthropic", model="claude")
    for n, turn in enumerate(turns, 1):
        assert store.append_turn(sid, turn, route_key=ORIGIN, usage={"input_tokens": n}) == n
    appended = [m for turn in turns for m in turn]
    assert dumped(store.load(sid)) == dumped(appended)
    assert load_jsonl(store.export_jsonl(sid)) == store.load(sid)

    blobs_before = count(store, "blobs")
    child = store.branch(sid)
    assert count(store, "blobs") == blobs_before  # shared by hash, never copied
    assert dumped(store.load(child)) == dumped(appended)


def test_every_part_kind_round_trips_exactly(store: Store) -> None:
    sid = store.create_session(provider="anthropic", model="claude")
    history = [
        Message.system("ſyſtem ✓ \x00 nul"),
        Message.user(""),
        Message(
            "assistant",
            (
                Reasoning("", ORIGIN, blob="sig" * 50_000, blob_kind="anthropic.signature", item_id="rs_1"),
                Reasoning("plain", ORIGIN, extra={"z": [1, {"b": None, "a": 1.5}], "a": "ok"}),
                Reasoning(
                    "copilot",
                    RouteKey("copilot", "api.githubcopilot.com", "gpt-5", "openai_chat"),
                    native=NativeRecord("ts", (("c1", "s1"), ("c2", "s2")), "opaque", "rt"),
                ),
                Text(""),
                ToolCall("c1", "shell", '{"cmd": "ls"}'),
            ),
        ),
        Message("tool", (ToolResult("c1", "out", name="shell", is_error=True), ToolResult("c2", ""))),
        Message("assistant", ()),
        Message("user", (Compaction("summary of 4", replaced=4),)),
    ]
    store.append_turn(sid, history)
    assert dumped(store.load(sid)) == dumped(history)
    assert store.get_session(sid).message_count == len(history)


def test_load_issues_a_bounded_number_of_statements(sqlite_store: Store) -> None:
    store = sqlite_store
    sid = store.create_session(provider="openai", model="o3")
    origin = RouteKey("openai", "api.openai.com", "o3", "openai_responses")
    for n in range(500):
        store.append_turn(
            sid,
            [
                Message.user(f"q{n}"),
                Message("assistant", (Reasoning(f"t{n}", origin, blob=f"enc{n}", blob_kind="openai.encrypted"), ToolCall(f"c{n}", "f", "{}"))),
                Message("tool", (ToolResult(f"c{n}", "r"),)),
                Message("assistant", (Text(f"a{n}"),)),
            ],
        )
    fresh = Store(store.path)
    statements: list[str] = []
    fresh._c.set_trace_callback(statements.append)
    history = fresh.load(sid)
    fresh.close()
    assert len(history) == 2000
    assert len(statements) <= 3, statements


# ----------------------------------------------------------------------------- branches and blobs


def _signed_turn(n: int) -> list[Message]:
    return [
        Message.user(f"question {n}"),
        Message("assistant", (Reasoning(f"thought {n}", ORIGIN, blob=f"sig-{n}", blob_kind="anthropic.signature"), Text(f"answer {n}"))),
    ]


def test_branch_up_to_a_seq_shares_blobs_and_outlives_its_parent(store: Store) -> None:
    sid = store.create_session(provider="anthropic", model="claude", title="main")
    for n in range(3):
        store.append_turn(sid, _signed_turn(n))
    store.patch_model_config(sid, {"reasoning_rejected_carriers": [["x", "h", "m", ["reasoning"]]]})
    assert count(store, "blobs") == 3

    child = store.branch(sid, upto_seq=2, title="what if")
    info = store.get_session(child)
    assert (info.parent_id, info.branch_of_seq, info.title, info.message_count) == (sid, 2, "what if", 3)
    assert dumped(store.load(child)) == dumped(store.load(sid)[:3])
    assert store.model_config(child) == store.model_config(sid)
    assert count(store, "blobs") == 3

    # the branch's half-copied turn 2 ends at seq 2; appending continues at seq 3, turn 3
    assert store.append_turn(child, [Message.user("new")]) == 3
    assert store.load(child)[3] == Message.user("new")

    store.delete_session(sid)
    assert store.get_session(child).parent_id is None
    assert count(store, "blobs") == 1  # sig-1 and sig-2 were only the parent's
    assert dumped(store.load(child)[:3]) == dumped([*_signed_turn(0), _signed_turn(1)[0]])
    store.delete_session(child)
    assert (count(store, "blobs"), count(store, "parts"), count(store, "messages"), count(store, "turns")) == (0, 0, 0, 0)

    with pytest.raises(StoreError, match="no message seq 0"):
        store.branch(store.create_session(provider="p", model="m"), upto_seq=0)


def test_identical_blobs_are_stored_once(store: Store) -> None:
    a = store.create_session(provider="anthropic", model="claude")
    b = store.create_session(provider="anthropic", model="claude")
    store.append_turn(a, _signed_turn(7))
    store.append_turn(b, _signed_turn(7))
    assert sql(store, "SELECT hash, kind FROM blobs") == [(blob_hash("sig-7"), "anthropic.signature")]
    store.delete_session(a)
    assert count(store, "blobs") == 1


# ----------------------------------------------------------------------------- whole turns only


def _snapshot(store: Store) -> tuple[int, ...]:
    return tuple(count(store, t) for t in ("turns", "messages", "parts", "blobs"))


def test_a_part_that_fails_to_serialise_leaves_no_partial_turn(store: Store) -> None:
    sid = store.create_session(provider="anthropic", model="claude")
    store.append_turn(sid, _signed_turn(0))
    before, history, updated = _snapshot(store), dumped(store.load(sid)), store.get_session(sid).updated
    bad = Reasoning("x", ORIGIN, extra={"not json": object()})
    with pytest.raises(StoreError, match="append a turn"):
        # two whole messages (one with a new blob) are written before the bad part is reached
        store.append_turn(sid, [*_signed_turn(1), Message("assistant", (Text("ok"), bad))])
    assert _snapshot(store) == before
    assert dumped(store.load(sid)) == history
    assert store.get_session(sid).updated == updated
    assert store.append_turn(sid, _signed_turn(1)) == 2  # the store is still usable


def test_a_constraint_failure_mid_turn_rolls_the_whole_turn_back(store: Store) -> None:
    sid = store.create_session(provider="anthropic", model="claude")
    if isinstance(store, Store):  # a real abort, raised by the engine itself
        sql(store, "CREATE TRIGGER boom BEFORE INSERT ON parts WHEN NEW.text = 'boom'"
                   " BEGIN SELECT RAISE(ABORT, 'boom refused'); END")
    else:
        sql(store, "CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                   " IF NEW.text = convert_to('boom', 'UTF8') THEN RAISE EXCEPTION 'boom refused'; END IF;"
                   " RETURN NEW; END $$")
        sql(store, "CREATE TRIGGER boom BEFORE INSERT ON parts FOR EACH ROW EXECUTE FUNCTION boom()")
    with pytest.raises(StoreError, match="boom refused"):
        store.append_turn(sid, [*_signed_turn(0), Message.user("boom")])
    assert _snapshot(store) == (0, 0, 0, 0)
    assert store.load(sid) == []


_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from hermes.core.messages import Message, Reasoning, RouteKey, Text, ToolCall, ToolResult
    from hermes.store import Store
    from hermes.store.pg import PgStore

    origin = RouteKey("anthropic", "api.anthropic.com", "claude", "anthropic")
    where = sys.argv[1]
    store = PgStore(where) if where.startswith("postgresql:") else Store(Path(where))
    sid = sys.argv[2]
    n = len(store.load(sid)) // 4
    print("ready", flush=True)
    while True:
        n += 1
        store.append_turn(sid, [
            Message.user(f"turn {n}"),
            Message("assistant", (
                Reasoning(f"think {n}", origin, blob=f"sig {n} " + "x" * 20000, blob_kind="anthropic.signature"),
                ToolCall(f"call-{n}", "count", "{}"),
            )),
            Message("tool", (ToolResult(f"call-{n}", str(n)),)),
            Message("assistant", (Text(f"done {n}"),)),
        ])
    """
)


def _check_whole_turns(store: Store, sid: str) -> int:
    history = store.load(sid)
    assert len(history) % 4 == 0, f"partial turn: {len(history)} messages"
    for i in range(0, len(history), 4):
        n = i // 4 + 1
        user, thought, tool, answer = history[i : i + 4]
        assert user == Message.user(f"turn {n}")
        assert thought.reasoning[0].text == f"think {n}"
        assert thought.reasoning[0].blob == f"sig {n} " + "x" * 20000
        assert tool.parts == (ToolResult(f"call-{n}", str(n)),)
        assert answer.text == f"done {n}"
    return len(history) // 4


def test_kill_9_mid_append_leaves_only_whole_turns(store: Any) -> None:
    sid = store.create_session(provider="anthropic", model="claude")
    store.close()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    rng = random.Random(5)
    turns = 0
    for _ in range(6):
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, where(store), sid],
            stdout=subprocess.PIPE, env=env, cwd=REPO,
        )
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.02, 0.25))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        with reopen(store) as s:
            if isinstance(s, Store):
                assert s._c.execute("PRAGMA integrity_check").fetchone() == ("ok",)
                assert s._c.execute("PRAGMA foreign_key_check").fetchall() == []
            now = _check_whole_turns(s, sid)
            assert s.get_session(sid).turn_count == now
        assert now >= turns
        turns = now
    assert turns > 0


# ----------------------------------------------------------------------------- opening safely


def test_fresh_file_is_0600_wal_and_migrated(hermes_home: Path) -> None:
    with Store() as s:
        assert s.path == hermes_home / "state.db"
        s.append_turn(s.create_session(provider="p", model="m"), [Message.user("hi")])
        assert s._c.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert s._c.execute("PRAGMA foreign_keys").fetchone() == (1,)
        names = [r[0] for r in s._c.execute("SELECT name FROM _migrations ORDER BY rowid")]
        assert names == [m.__name__ for m in MIGRATIONS]
        for name in ("state.db", "state.db-wal", "state.db-shm"):
            assert (hermes_home / name).stat().st_mode & 0o777 == 0o600, name
    with Store() as s:  # reopening applies nothing twice
        assert s.list_sessions()[0].message_count == 1
        assert s._c.execute("SELECT COUNT(*) FROM _migrations").fetchone() == (len(MIGRATIONS),)


def open_at_once(opener: Any, n: int = 4) -> list[Any]:
    """``n`` threads each open a store at the same moment; every one must succeed."""
    errors: list[Exception] = []
    stores: list[Any] = []

    def open_it() -> None:
        try:
            stores.append(opener())
        except Exception as e:  # pragma: no cover - the failure we test against
            errors.append(e)

    threads = [threading.Thread(target=open_it) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    return stores


def test_two_processes_opening_a_fresh_file_migrate_once(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    stores = open_at_once(lambda: Store(path))
    with sqlite3.connect(path) as c:
        assert c.execute("SELECT COUNT(*) FROM _migrations").fetchone() == (len(MIGRATIONS),)
    for s in stores:
        s.close()


def test_newer_schema_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with Store(path) as s:
        s.create_session(provider="p", model="m")
    with sqlite3.connect(path) as c:
        c.execute("INSERT INTO _migrations (name, applied) VALUES ('m999_from_the_future', 0)")
    c.close()
    before = path.read_bytes()
    with pytest.raises(StoreError) as e:
        Store(path)
    assert "written by a newer Hermes (migration m999_from_the_future); upgrade hermes" in str(e.value)
    assert path.read_bytes() == before


def test_a_file_that_is_not_a_database_is_refused_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"these are my notes, not SQLite\n" * 200)
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not a Hermes state database") as e:
        Store(path)
    assert str(path) in str(e.value) and "move the file aside" in e.value.hint
    assert path.read_bytes() == before


def test_unopenable_path_names_the_path(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match=r"cannot create .*file/state\.db"):
        Store(tmp_path / "file" / "state.db")


def _open_in_child(path: Path, *, as_nobody: bool) -> str:
    """Open ``path`` in a forked child (as ``nobody`` when we are root: root ignores
    permission bits) and report what happened."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.close(r)
            if as_nobody:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            out = ""
            try:
                with Store(path) as s:
                    out = f"opened with {len(s.list_sessions())} sessions; "
                    s.create_session(provider="p", model="m", base_url="", title="")
                    out += "written"
            except StoreError as e:
                out += f"StoreError: {e}"
            os.write(w, out.encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read().decode()
    os.waitpid(pid, 0)
    return out


@pytest.mark.parametrize("existing", [False, True])
def test_read_only_home_is_a_store_error(existing: bool) -> None:
    base = Path(tempfile.mkdtemp())
    home = base / "home"
    try:
        home.mkdir()
        if existing:
            Store(home / "state.db").close()
            (home / "state.db").chmod(0o644)
        os.chmod(base, 0o755)
        os.chmod(home, 0o555)
        out = _open_in_child(home / "state.db", as_nobody=os.geteuid() == 0)
        assert "StoreError:" in out and str(home / "state.db") in out, out
        if not existing:
            assert out.startswith("StoreError:") and "Permission denied" in out
        else:  # reads work read-only (sessions list); a write says why it cannot
            assert out.startswith("opened with 0 sessions; StoreError:") and "readonly" in out, out
    finally:
        os.chmod(home, 0o755)
        for f in home.iterdir():
            f.unlink()
        home.rmdir()
        base.rmdir()


# ----------------------------------------------------------------------------- sessions API


def test_sessions_list_latest_prefix_and_unknown(store: Store) -> None:
    assert store.latest_session() is None
    a = store.create_session(provider="deepseek", model="deepseek-reasoner", base_url="", title="a")
    b = store.create_session(provider="openrouter", model="x/y", base_url="https://or.example/api/v1")
    store.append_turn(a, [Message.user("later")])
    assert [s.id for s in store.list_sessions()] == [a, b]
    assert store.latest_session() is not None and store.latest_session().id == a  # type: ignore[union-attr]
    assert store.get_session(a[:6]).id == a
    assert store.get_session(b).base_url == "https://or.example/api/v1"
    store.update_session(b, title="renamed", model="x/z")
    assert (store.get_session(b).title, store.get_session(b).model) == ("renamed", "x/z")
    for call in (store.get_session, store.load, store.model_config, store.delete_session):
        with pytest.raises(StoreError, match="unknown session 'nope'") as e:
            call("nope")
        assert "hermes sessions list" in e.value.hint
    with pytest.raises(StoreError, match="unknown session"):
        store.append_turn("nope", [Message.user("x")])
    with pytest.raises(StoreError, match="at least one message"):
        store.append_turn(a, [])


def test_ambiguous_prefix_lists_candidates(store: Store) -> None:
    ids = {store.create_session(provider="p", model="m") for _ in range(40)}
    prefix = next(p for p in (i[:1] for i in ids) if sum(x.startswith(p) for x in ids) > 1)
    with pytest.raises(StoreError, match="ambiguous"):
        store.get_session(prefix)


def test_model_config_patch_is_a_json_merge(store: Store) -> None:
    sid = store.create_session(provider="p", model="m", model_config={"keep": 1, "nested": {"a": 1}})
    assert store.patch_model_config(sid, {"nested": {"b": 2}, "keep": None, "new": [1]}) == {"nested": {"a": 1, "b": 2}, "new": [1]}
    assert store.model_config(sid) == {"nested": {"a": 1, "b": 2}, "new": [1]}
    with pytest.raises(StoreError, match="not JSON"):
        store.patch_model_config(sid, {"x": object()})
    assert store.model_config(sid) == {"nested": {"a": 1, "b": 2}, "new": [1]}


def test_capability_ledger_learns_once_and_merges_sets(store: Store) -> None:
    ev = {"status": 400, "error": "Extra inputs are not permitted: messages.1.reasoning"}
    assert store.learn(" OpenRouter", "OR.example", "x/y ", "rejected_carriers", {"reasoning_details", "reasoning"}, ev)
    assert not store.learn("openrouter", "or.example", "x/y", "rejected_carriers", ["reasoning"], {})
    assert store.learn("openrouter", "or.example", "x/y", "rejected_carriers", ["reasoning_content"], {"status": 400})
    assert store.learn("openrouter", "or.example", "x/y", "token_factor", 1.25, {})
    assert store.learn("openrouter", "or.example", "x/z", "suppressed_blobs", [blob_hash("sig")], {})
    assert store.capabilities("OPENROUTER", "or.example", "x/y") == {
        "rejected_carriers": ["reasoning", "reasoning_details", "reasoning_content"],
        "token_factor": 1.25,
    }
    assert store.capabilities("openrouter", "or.example", "x/other") == {}
    row = next(c for c in store.list_capabilities() if c.kind == "rejected_carriers")
    assert row.evidence == {"status": 400} and row.updated >= row.created

    with reopen(store) as other:  # a new process sees it: "a new session need not pay the 400 again"
        assert other.capabilities("openrouter", "or.example", "x/z") == {"suppressed_blobs": [blob_hash("sig")]}
    assert store.forget(model="x/z") == 1
    assert store.forget(provider="OpenRouter") == 2
    assert store.list_capabilities() == []


def test_session_locks_serialize_owners_across_connections(store: Store) -> None:
    sid = store.create_session(provider="p", model="m")
    with reopen(store) as other:
        assert store.acquire_lock(sid, "worker-a", ttl_s=30)
        assert not other.acquire_lock(sid, "worker-b", ttl_s=30)
        assert store.acquire_lock(sid, "worker-a", ttl_s=30)  # renew
        assert not other.release_lock(sid, "worker-b")
        assert store.release_lock(sid, "worker-a")
        assert other.acquire_lock(sid, "worker-b", ttl_s=0.05)
        assert not store.acquire_lock(sid, "worker-a", ttl_s=30)
        time.sleep(0.08)
        assert store.acquire_lock(sid, "worker-a", ttl_s=30)  # expired: stolen
    with pytest.raises(StoreError, match="unknown session"):
        store.acquire_lock("nope", "worker-a", ttl_s=1)


def test_store_follows_the_protocol_and_takes_no_secrets(store: Store) -> None:
    import inspect

    assert isinstance(store, SessionStore)
    for name, fn in inspect.getmembers(type(store), inspect.isfunction):
        params = inspect.signature(fn).parameters
        assert not any(w in p for p in params for w in ("api_key", "token", "header", "secret", "password")), name


# ----------------------------------------------------------------------------- PostgreSQL opening


def test_postgres_schema_newer_than_this_code_is_refused_untouched(pg_url: str) -> None:
    with PgStore(pg_url) as s:
        s.create_session(provider="p", model="m")
        sql(s, "INSERT INTO _migrations (name, applied) VALUES ('m999_from_the_future', 0)")
        before = sql(s, "SELECT name FROM _migrations ORDER BY name")
    with pytest.raises(StoreError, match=r"newer Hermes \(migration m999_from_the_future\)") as e:
        PgStore(pg_url)
    assert "nothing was changed" in e.value.hint
    import psycopg

    with psycopg.connect(pg_url) as c:
        assert c.execute("SELECT name FROM _migrations ORDER BY name").fetchall() == before
        assert c.execute("SELECT COUNT(*) FROM sessions").fetchone() == (1,)


def test_postgres_workers_opening_a_fresh_database_migrate_once(pg_url: str) -> None:
    from hermes.store.pg_schema import PG_MIGRATIONS

    stores = open_at_once(lambda: PgStore(pg_url))
    assert [m.__name__ for m in PG_MIGRATIONS] == [m.__name__ for m in MIGRATIONS]  # one schema history
    assert count(stores[0], "_migrations") == len(PG_MIGRATIONS)
    for s in stores:
        s.close()


def test_unreachable_postgres_is_a_store_error_without_the_password() -> None:
    from hermes.store import open_store

    url = "postgresql://hermes:s3cret-pw@127.0.0.1:1/none"
    os.environ["HERMES_DATABASE_URL"] = url
    try:
        with pytest.raises(StoreError) as e:
            open_store()
    finally:
        del os.environ["HERMES_DATABASE_URL"]
    assert "127.0.0.1:1" in str(e.value) and "s3cret-pw" not in str(e.value)
    assert "HERMES_DATABASE_URL" in e.value.hint
