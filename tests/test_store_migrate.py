"""`hermes store migrate --to postgresql://…`: copy a state.db, verify it, re-run safely.

Real CLI processes, a real state.db and the tests' own PostgreSQL server. What must hold: every
session (branches and their shared blobs included) loads byte-for-byte the same from
PostgreSQL; the ledger comes along; a second run copies nothing twice; a destination that
kept going (more turns) still verifies; a destination whose content differs is reported and
the command fails.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
from _cli import cli

from hermes.core.messages import Message, Reasoning, RouteKey, Text, ToolCall, ToolResult, dumps
from hermes.proxy import SqliteMemory, message_key, open_memory
from hermes.store import Store
from hermes.store.pg import PgStore

ORIGIN = RouteKey("anthropic", "api.anthropic.com", "claude", "anthropic")


def _fill(path: Path) -> list[str]:
    with Store(path) as s:
        a = s.create_session(provider="anthropic", model="claude", title="main")
        for n in range(3):
            s.append_turn(a, [
                Message.user(f"q{n} \x00 nul"),
                Message("assistant", (Reasoning(f"t{n}", ORIGIN, blob=f"sig-{n}" * 100, blob_kind="anthropic.signature"),
                                      ToolCall(f"c{n}", "f", "{}"))),
                Message("tool", (ToolResult(f"c{n}", "r"),)),
                Message("assistant", (Text(f"a{n}"),)),
            ], route_key=ORIGIN, usage={"input_tokens": n})
        s.patch_model_config(a, {"reasoning_rejected_carriers": [["x", "h", "m", ["reasoning"]]]})
        b = s.branch(a, upto_seq=5, title="what if")
        s.append_turn(b, [Message.user("on the branch")])
        orphan_parent = s.create_session(provider="p", model="m")
        s.append_turn(orphan_parent, [Message.user("gone")])
        orphan = s.branch(orphan_parent)
        s.delete_session(orphan_parent)
        s.learn("openrouter", "openrouter.ai", "x/y", "rejected_carriers", ["reasoning"], {"status": 400})
        s.acquire_lease(a, "someone", 60)  # a lease is runtime state: not copied
    with SqliteMemory(path) as mem:  # what `hermes proxy` recorded on this machine
        for tenant, n in (("tenant-a", 0), ("tenant-a", 1), ("tenant-b", 0)):
            mem.remember(tenant, *_recording(n, f"{tenant} thought {n} \x00"))
    return [a, b, orphan]


def _recording(n: int, thought: str) -> tuple[str, Message]:
    m = Message("assistant", (Reasoning(thought, ORIGIN), ToolCall(f"call_{n}", "f", "{}")))
    key = message_key(m)
    assert key is not None
    return key, m


def test_migrate_copies_verifies_and_is_idempotent(hermes_home: Path, pg_url: str) -> None:
    sids = _fill(hermes_home / "state.db")
    first = cli(hermes_home, "store", "migrate", "--to", pg_url)
    assert "verified: 3 sessions" in first.stdout
    assert "sessions               3         3" in first.stdout
    assert "blobs                  3         3" in first.stdout  # shared by the branch, copied once
    assert "proxy_memory           3         3" in first.stdout
    with Store(hermes_home / "state.db") as src, PgStore(pg_url) as dst:
        for sid in sids:
            assert [dumps(m) for m in dst.load(sid)] == [dumps(m) for m in src.load(sid)]
            assert dst.get_session(sid) == src.get_session(sid)
            assert dst.model_config(sid) == src.model_config(sid)
        assert dst.list_capabilities() == src.list_capabilities()
        with SqliteMemory(hermes_home / "state.db") as there, open_memory(dst) as here:
            for tenant, n in (("tenant-a", 0), ("tenant-a", 1), ("tenant-b", 0)):
                key, m = _recording(n, f"{tenant} thought {n} \x00")
                assert here.recall(tenant, [key]) == there.recall(tenant, [key]) == {key: m}
            newer = _recording(1, "recorded again by a proxy worker on PostgreSQL")
            here.remember("tenant-a", *newer)
        assert dst.acquire_lease(sids[0], "new-worker", 30) == 2  # fences keep growing; no stale lease
        dst.release_lock(sids[0], "new-worker")

        again = cli(hermes_home, "store", "migrate", "--to", pg_url)
        assert again.stdout == first.stdout  # nothing copied twice
        dst.append_turn(sids[1], [Message.user("continued on postgres")])
        src.append_turn(sids[2], [Message.user("added to state.db later")])
    catch_up = cli(hermes_home, "store", "migrate", "--to", pg_url)
    assert "verified: 3 sessions" in catch_up.stdout
    with PgStore(pg_url) as dst:
        assert dst.load(sids[2])[-1] == Message.user("added to state.db later")
        assert dst.load(sids[1])[-1] == Message.user("continued on postgres")
        with open_memory(dst) as mem:  # a re-run never puts an older recording over a newer one
            assert mem.recall("tenant-a", [newer[0]]) == {newer[0]: newer[1]}


def test_a_destination_that_differs_is_reported(hermes_home: Path, pg_url: str) -> None:
    sids = _fill(hermes_home / "state.db")
    cli(hermes_home, "store", "migrate", "--to", pg_url)
    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute("UPDATE parts SET text = convert_to('edited', 'UTF8') WHERE session_id = %s AND seq = 3",
                  (sids[0],))
        c.execute("UPDATE blobs SET data = convert_to('tampered', 'UTF8')"
                  " WHERE hash = (SELECT min(hash) FROM blobs)")
        # same age as the source's, other text: a re-run cannot tell which is right, so it says so
        c.execute("UPDATE proxy_memory SET message = replace(message, 'thought', 'THOUGHT') WHERE tenant = 'tenant-b'")
        c.execute("DELETE FROM proxy_memory WHERE tenant = 'tenant-a' AND key = %s", (_recording(0, "")[0],))
    r = cli(hermes_home, "store", "migrate", "--to", pg_url, check=False)
    assert "proxy_memory           3         3" in r.stdout, "the deleted recording is copied again"
    assert f"proxy recording {_recording(0, '')[0][:12]} of tenant tenant-b: its text differs" in r.stderr
    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute("UPDATE proxy_memory SET created = 1e12 WHERE tenant = 'tenant-b'")
    r = cli(hermes_home, "store", "migrate", "--to", pg_url, check=False)
    assert "proxy recording" not in r.stderr, "a newer recording in the destination is no difference"
    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute("UPDATE proxy_memory SET created = 0 WHERE tenant = 'tenant-b'")
    r = cli(hermes_home, "store", "migrate", "--to", pg_url, check=False)
    assert "proxy recording" not in r.stderr, "an older one is replaced by the source's"
    with psycopg.connect(pg_url, autocommit=True) as c:
        assert c.execute("SELECT message LIKE '%tenant-b thought 0%' FROM proxy_memory"
                         " WHERE tenant = 'tenant-b'").fetchall() == [(True,)]
    assert r.returncode == 1 and "nothing was removed" in r.stderr  # the edited parts and blob remain
    assert f"session {sids[0]}: its first 12 messages differ" in r.stderr
    assert "do not hash to its address" in r.stderr
    assert "nothing was removed" in r.stderr


def test_migrate_refuses_a_missing_file_and_hides_a_password(hermes_home: Path, pg_cluster: object) -> None:
    r = cli(hermes_home, "store", "migrate", "--to", "postgresql://u:pw-secret-123@127.0.0.1:1/x", check=False)
    assert r.returncode == 1 and "state.db does not exist" in r.stderr
    (hermes_home / "state.db").parent.mkdir(parents=True, exist_ok=True)
    Store(hermes_home / "state.db").close()
    r = cli(hermes_home, "store", "migrate", "--to", "postgresql://u:pw-secret-123@127.0.0.1:1/x", check=False)
    assert r.returncode == 1 and "cannot open postgresql://u:***@127.0.0.1:1/x" in r.stderr
    assert "pw-secret-123" not in r.stderr + r.stdout
