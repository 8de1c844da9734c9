"""``PgStore``: the session store on PostgreSQL, for many gateway workers on many hosts.

Chosen by ``HERMES_DATABASE_URL=postgresql://…`` or ``[store] url`` in config.toml
(:func:`hermes.store.open_store`). It keeps every guarantee of the SQLite ``Store``:

* **Whole steps only.** ``append_turn`` is one transaction; a killed worker's open transaction
  is rolled back by the server when its connection drops.
* **One session never interleaved.** ``append_turn``, ``acquire_lease`` and
  ``patch_model_config`` first lock the session's row (``SELECT … FOR UPDATE``), so seq
  numbers are allocated by one writer at a time and a lease takeover waits for an in-flight
  commit; a step carrying a lease is refused once another worker holds the session.
* **Byte-exact and content-addressed.** Part text and blobs are stored as UTF-8 ``bytea``
  (NUL-safe); blobs are keyed by sha256 and shared by branches.
* **Named migrations**, refusing a newer schema (:mod:`hermes.store.pg_schema`).
* **Database time** for lease expiry, so hosts with skewed clocks agree on who holds a lease.

Connections come from a ``psycopg_pool`` pool shared by the caller's threads; each method
borrows one connection for one unit of work. Error messages name the database by its URL
with any password removed.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import orjson

from ..core.errors import HermesError, StoreError, register_secret
from ..core.messages import Message, RouteKey, digest_of
from . import ledger
from .codec import messages_from_rows, part_to_row
from .db import _LOAD_SQL, _json, _route_json, merge_patch
from .lease import Lease, check_fence
from .pg_schema import migrate
from .records import Capability, NewSession, SessionInfo
from .runs import END_BEFORE, FROM, INSERT, OTHER_CHAINS, RunRow
from .shared import _INFO_ONE, SharedMethods
from .url import display_url, url_passwords

__all__ = ["PgStore", "display_url"]

_NOW = "extract(epoch from clock_timestamp())::float8"


class _Qmark:
    """A cursor that takes SQLite's ``?`` placeholders, so :mod:`hermes.store.ledger`'s
    portable SQL runs here unchanged."""

    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        return self.cur.execute(sql.replace("?", "%s"), args)


def _pg(sql: str) -> str:
    return sql.replace("?", "%s")


class PgStore(SharedMethods):
    """Sessions, messages, the capability ledger and session leases in one PostgreSQL database."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 16, timeout_s: float = 10.0) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise StoreError("a postgresql:// store needs psycopg",
                             hint="pip install 'hermes-replay[postgres]'") from None
        self._psycopg = psycopg
        for password in url_passwords(url):  # whatever libpq or the server may repeat of it
            register_secret(password)
        self.url = display_url(url)
        self.path = None
        try:  # one plain connection first: a wrong URL fails now, with the server's own reason
            with psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(timeout_s))) as conn:
                migrate(conn, self.url)
        except HermesError:
            raise
        except Exception as e:
            raise StoreError(f"cannot open {self.url}: {_connect_reason(e, psycopg)}",
                             hint="check HERMES_DATABASE_URL / [store] url and that the server is up") from None
        self._pool = ConnectionPool(url, min_size=min_size, max_size=max_size, open=False, timeout=timeout_s,
                                    kwargs={"autocommit": True}, name="hermes")
        self._pool.open(wait=False)

    # ------------------------------------------------------------------ plumbing

    def close(self) -> None:
        self._pool.close()

    @contextmanager
    def _write(self, what: str, *, pipelined: bool = False) -> Iterator[Any]:
        """One transaction on a pooled connection; any failure rolls it all back.

        ``pipelined``: statements (BEGIN included) are queued and sent together, and the
        server's replies are awaited only where a result is read — a hot write (a step, a
        lease) then costs two or three network round trips instead of one per statement."""
        try:
            with self._pool.connection() as conn, (conn.pipeline() if pipelined else nullcontext()), \
                    conn.transaction(), conn.cursor() as cur:
                yield cur
        except HermesError:
            raise
        except Exception as e:
            raise StoreError(f"cannot {what}: {_reason(e)} ({self.url})") from e

    @contextmanager
    def _reading(self, *, binary: bool = False) -> Iterator[Any]:
        """A cursor in autocommit mode: each statement sees the latest committed data."""
        try:
            with self._pool.connection() as conn, conn.cursor(binary=binary) as cur:
                yield cur
        except HermesError:
            raise
        except Exception as e:
            raise StoreError(f"cannot read {self.url}: {_reason(e)}") from None

    def _read(self, sql: str, args: Sequence[Any] | Mapping[str, Any] = (), *, binary: bool = False) -> list[Any]:
        with self._reading(binary=binary) as cur:
            cur.execute(_pg(sql), args)  # "?" placeholders too: SQL shared with Store reads here
            return list(cur.fetchall())


    def _lock_session(self, cur: Any, session_id: str) -> None:
        """Row-lock the session for the rest of the transaction (the per-session writer lock)."""
        cur.execute("SELECT 1 FROM sessions WHERE id = %s FOR UPDATE", (session_id,))
        if cur.fetchone() is None:
            raise self._unknown(session_id)

    def _new_id(self, cur: Any, insert: str, args: Mapping[str, Any]) -> str:
        while True:
            sid = secrets.token_hex(6)
            cur.execute(insert + " ON CONFLICT (id) DO NOTHING RETURNING id", {**args, "id": sid})
            if cur.fetchone() is not None:
                return sid

    # ------------------------------------------------------------------ sessions

    def create_session(self, *, provider: str, model: str, base_url: str = "", title: str = "",
                       model_config: Mapping[str, Any] | None = None) -> str:
        config = _json(dict(model_config or {}), "model_config")
        now = time.time()
        with self._write("create a session") as cur:
            return self._new_id(cur, "INSERT INTO sessions (id, created, updated, title, provider, model, base_url,"
                                " model_config) VALUES (%(id)s, %(now)s, %(now)s, %(title)s, %(provider)s, %(model)s,"
                                " %(base_url)s, %(config)s)",
                                {"now": now, "title": title, "provider": provider, "model": model,
                                 "base_url": base_url, "config": config})

    def update_session(self, session_id: str, *, title: str | None = None, provider: str | None = None,
                       model: str | None = None, base_url: str | None = None) -> None:
        fields = {"title": title, "provider": provider, "model": model, "base_url": base_url}
        sets = {k: v for k, v in fields.items() if v is not None}
        with self._write("update a session") as cur:
            self._lock_session(cur, session_id)
            cols = "".join(f"{k} = %s, " for k in sets)
            cur.execute(f"UPDATE sessions SET {cols}updated = %s WHERE id = %s",
                        (*sets.values(), time.time(), session_id))

    def delete_session(self, session_id: str) -> None:
        """Delete a session; blobs it referenced that nothing else references go too."""
        with self._write("delete a session") as cur:
            self._lock_session(cur, session_id)
            cur.execute("SELECT DISTINCT blob_hash FROM parts WHERE session_id = %s AND blob_hash IS NOT NULL",
                        (session_id,))
            hashes = [r[0] for r in cur.fetchall()]
            cur.execute("DELETE FROM sessions WHERE id = %s", (session_id,))
            if hashes:
                try:
                    with cur.connection.transaction():  # a savepoint: GC may lose a race, the delete may not
                        cur.execute("DELETE FROM blobs WHERE hash = ANY(%s) AND NOT EXISTS"
                                    " (SELECT 1 FROM parts p WHERE p.blob_hash = blobs.hash)", (hashes,))
                except self._psycopg.errors.ForeignKeyViolation:
                    pass  # a concurrent step just referenced one of them: it stays

    # ------------------------------------------------------------------ history

    def load_tail(self, session_id: str, start: int) -> list[Message]:
        """The messages from position ``start`` on, as :meth:`Store.load_tail` (``hermes.builder.hot``)."""
        with self._reading(binary=True) as cur, cur.connection.pipeline(), cur.connection.cursor(binary=True) as rows:
            cur.execute("SELECT 1 FROM sessions WHERE id = %s", (session_id,))
            rows.execute(_pg(_LOAD_SQL), (session_id, start))  # sent with the check: one round trip
            if cur.fetchone() is None:
                raise self._unknown(session_id)
            found = rows.fetchall()
        return messages_from_rows(found, binary=True)

    def append_turn(self, session_id: str, messages: Sequence[Message], *, route_key: RouteKey | None = None,
                    usage: Mapping[str, Any] | None = None, fence: Lease | None = None,
                    create: NewSession | None = None) -> int:
        """Append one step atomically under the session's row lock; returns its turn number.
        With ``create``, the session row (and ``fence``'s lease row) is written first, in the
        same transaction, as :meth:`Store.append_turn` does."""
        if not messages:
            raise StoreError("a turn needs at least one message")
        try:  # serialise outside the lock: a part that is not JSON fails before any write
            rows = [(i, pos, *part_to_row(p)) for i, m in enumerate(messages) for pos, p in enumerate(m.parts)]
            digests = [digest_of(m) for m in messages]
            texts = [r[3].encode() for r in rows]
            firsts: dict[str, tuple[bytes, str]] = {}
            for r in rows:
                if r[5] is not None and r[6] is not None and r[5] not in firsts:  # first kind wins
                    firsts[r[5]] = (r[6].encode(), r[7] or "")
            blobs = sorted(firsts.items())  # one lock order for every writer: no deadlocks
        except (TypeError, UnicodeEncodeError) as e:
            raise StoreError(f"cannot append a turn: {e} ({self.url})") from None
        rk = _route_json(route_key)
        use = None if usage is None else _json(dict(usage), "usage")
        new_config = None if create is None else _json(create.model_config, "model_config")
        with self._write("append a turn", pipelined=True) as cur, cur.connection.cursor() as after:
            if create is not None:  # a taken id fails the insert: the whole step is refused
                now = time.time()
                cur.execute("INSERT INTO sessions (id, created, updated, title, provider, model, base_url,"
                            " model_config, lease_fence) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                            (create.id, create.created or now, now, create.title, create.provider, create.model,
                             create.base_url, new_config, 0 if fence is None else fence.fence))
                if fence is not None:
                    cur.execute(f"INSERT INTO session_locks (session_id, owner, expires, fence)"
                                f" VALUES (%s, %s, {_NOW} + %s, %s)",
                                (create.id, fence.owner, create.lease_ttl_s, fence.fence))
            # sent together; the server runs them in order, so the second statement's snapshot
            # is taken after the row lock is granted: it sees every earlier writer's commit
            cur.execute("SELECT 1 FROM sessions WHERE id = %s FOR UPDATE", (session_id,))
            after.execute("SELECT (SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE session_id = %(s)s),"
                          " (SELECT COALESCE(MAX(id), 0) + 1 FROM turns WHERE session_id = %(s)s),"
                          " l.owner, l.fence FROM (SELECT 1) AS one"
                          " LEFT JOIN session_locks l ON l.session_id = %(s)s", {"s": session_id})
            if cur.fetchone() is None:
                raise self._unknown(session_id)
            first, turn, owner, held = after.fetchone()
            if fence is not None:
                check_fence(fence, None if owner is None else (owner, held))
            now = time.time()
            with cur.connection.pipeline():  # the rows, sent in one go; its end waits for them
                cur.execute("INSERT INTO turns (session_id, id, first_seq, last_seq, route_key, usage, created)"
                            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                            (session_id, turn, first, first + len(messages) - 1, rk, use, now))
                cur.execute("INSERT INTO messages (session_id, seq, turn_id, role, created, digest)"
                            " SELECT %s, s, %s, r, %s, d FROM unnest(%s::int[], %s::text[], %s::bytea[])"
                            " AS u(s, r, d)",
                            (session_id, turn, now, list(range(first, first + len(messages))),
                             [m.role for m in messages], digests))
                if blobs:
                    cur.execute("INSERT INTO blobs (hash, data, kind) SELECT * FROM"
                                " unnest(%s::text[], %s::bytea[], %s::text[]) ON CONFLICT (hash) DO NOTHING",
                                ([h for h, _ in blobs], [d for _, (d, _k) in blobs], [k for _, (_d, k) in blobs]))
                if rows:
                    cur.execute("INSERT INTO parts (session_id, seq, position, kind, text, data, blob_hash)"
                                " SELECT %s, s, p, k, t, d, b FROM unnest(%s::int[], %s::int[], %s::text[],"
                                " %s::bytea[], %s::text[], %s::text[]) AS u(s, p, k, t, d, b)",
                                (session_id, [first + r[0] for r in rows], [r[1] for r in rows],
                                 [r[2] for r in rows], texts, [r[4] for r in rows], [r[5] for r in rows]))
                cur.execute("UPDATE sessions SET updated = %s WHERE id = %s", (now, session_id))
        return int(turn)

    def branch(self, session_id: str, *, upto_seq: int | None = None, title: str = "") -> str:
        """A new session with the parent's messages ``seq <= upto_seq``; blobs shared by hash."""
        with self._write("branch a session") as cur:
            cur.execute("SELECT title, provider, model, base_url, model_config,"
                        " (SELECT MAX(seq) FROM messages WHERE session_id = %(s)s) FROM sessions WHERE id = %(s)s"
                        " FOR SHARE", {"s": session_id})
            parent = cur.fetchone()
            if parent is None:
                raise self._unknown(session_id)
            p_title, provider, model, base_url, config, last = parent
            upto = self._branch_upto(session_id, upto_seq, last)
            now = time.time()
            sid = self._new_id(cur, "INSERT INTO sessions (id, created, updated, title, provider, model, base_url,"
                               " parent_id, branch_of_seq, model_config) VALUES (%(id)s, %(now)s, %(now)s, %(title)s,"
                               " %(provider)s, %(model)s, %(base_url)s, %(parent)s, %(upto)s, %(config)s)",
                               {"now": now, "title": title or p_title, "provider": provider, "model": model,
                                "base_url": base_url, "parent": session_id, "upto": upto, "config": config})
            if upto is not None:
                args = {"new": sid, "old": session_id, "upto": upto}
                cur.execute("INSERT INTO turns (session_id, id, first_seq, last_seq, route_key, usage, created)"
                            " SELECT %(new)s, id, first_seq, LEAST(last_seq, %(upto)s), route_key, usage, created"
                            " FROM turns WHERE session_id = %(old)s AND first_seq <= %(upto)s", args)
                cur.execute("INSERT INTO messages (session_id, seq, turn_id, role, created, digest)"
                            " SELECT %(new)s, seq, turn_id, role, created, digest FROM messages"
                            " WHERE session_id = %(old)s AND seq <= %(upto)s", args)
                cur.execute("INSERT INTO parts (session_id, seq, position, kind, text, data, blob_hash)"
                            " SELECT %(new)s, seq, position, kind, text, data, blob_hash FROM parts"
                            " WHERE session_id = %(old)s AND seq <= %(upto)s", args)
        return sid

    # ------------------------------------------------------------------ build results

    def save_run(self, session_id: str, context: bytes, row: RunRow) -> bool:
        """As :meth:`Store.save_run` (under the session's row lock)."""
        first, window = row[0], row[2]
        with self._write("keep build results") as cur:
            cur.execute("SELECT 1 FROM sessions WHERE id = %s FOR UPDATE", (session_id,))
            if cur.fetchone() is None:
                return False  # deleted meanwhile: nothing to keep
            cur.execute(_pg(OTHER_CHAINS), (session_id, context, window))
            cur.execute(_pg(END_BEFORE), (session_id, first))
            if cur.fetchone()[0] != (None if first == window else first):
                return False
            cur.execute(_pg(FROM), (session_id, first))
            cur.execute(_pg(INSERT), (session_id, context, *row))
            return True

    # ------------------------------------------------------------------ per-session config

    def patch_model_config(self, session_id: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        _json(dict(patch), "model_config patch")
        with self._write("update model_config") as cur:
            cur.execute("SELECT model_config FROM sessions WHERE id = %s FOR UPDATE", (session_id,))
            row = cur.fetchone()
            if row is None:
                raise self._unknown(session_id)
            merged = merge_patch(orjson.loads(row[0]), patch)
            cur.execute("UPDATE sessions SET model_config = %s, updated = %s WHERE id = %s",
                        (_json(merged, "model_config"), time.time(), session_id))
        return dict(merged)

    # ------------------------------------------------------------------ capability ledger

    def learn(self, provider: str, host: str, model: str, kind: str, value: Any,
              evidence: Mapping[str, Any]) -> bool:
        key = ledger.norm_key(provider, host, model)
        _json(ledger.merge_value(None, value), "capability value")
        _json(dict(evidence), "capability evidence")
        with self._write("record a capability") as cur:
            # two workers learning the same new fact at once: the second waits, then merges
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("\x1f".join((*key, kind)),))
            return ledger.learn(_Qmark(cur), key, kind, value, evidence, time.time())

    def capabilities(self, provider: str, host: str, model: str) -> dict[str, Any]:
        with self._reading() as cur:
            return ledger.lookup(_Qmark(cur), ledger.norm_key(provider, host, model))

    def list_capabilities(self) -> list[Capability]:
        with self._reading() as cur:
            return ledger.list_capabilities(_Qmark(cur))

    def forget(self, provider: str | None = None, host: str | None = None, model: str | None = None) -> int:
        with self._write("forget capabilities") as cur:
            return ledger.forget(_Qmark(cur), provider, host, model)

    # ------------------------------------------------------------------ session leases

    def acquire_lease(self, session_id: str, owner: str, ttl_s: float) -> int | None:
        """Take or renew the session's lease; its fencing token, or ``None`` if another holds it.
        Expiry is measured on the database's clock, the one clock every host shares."""
        with self._write("lock a session", pipelined=True) as cur, cur.connection.cursor() as after:
            return self._lease(cur, after, session_id, owner, ttl_s)

    def lease_session(self, session_id: str, owner: str, ttl_s: float) -> tuple[int, SessionInfo] | None:
        """:meth:`acquire_lease` and the session's row, read in the same transaction (queued
        with the lease's statements: no extra round trip)."""
        with self._write("lock a session", pipelined=True) as cur, cur.connection.cursor() as after:
            fence = self._lease(cur, after, session_id, owner, ttl_s)
            if fence is None:
                return None
            cur.execute(_pg(_INFO_ONE), (session_id,))
            return fence, SessionInfo(*cur.fetchone())

    def _lease(self, cur: Any, after: Any, session_id: str, owner: str, ttl_s: float) -> int | None:
        cur.execute(f"SELECT lease_fence, {_NOW} FROM sessions WHERE id = %s FOR UPDATE", (session_id,))
        after.execute("SELECT owner, expires, fence FROM session_locks WHERE session_id = %s", (session_id,))
        row = cur.fetchone()
        if row is None:
            raise self._unknown(session_id)
        counter, now = row
        held = after.fetchone()
        if held is not None and held[0] != owner and held[1] > now:
            return None
        if held is not None and held[0] == owner:
            fence = held[2]  # a renewal keeps its token
        else:
            fence = counter + 1
            cur.execute("UPDATE sessions SET lease_fence = %s WHERE id = %s", (fence, session_id))
        cur.execute("INSERT INTO session_locks (session_id, owner, expires, fence) VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner,"
                    " expires = excluded.expires, fence = excluded.fence",
                    (session_id, owner, now + ttl_s, fence))
        return int(fence)

    def lease_holder(self, session_id: str) -> str | None:
        """The owner of the session's unexpired lease (by the database's clock), if any."""
        rows = self._read(f"SELECT owner FROM session_locks WHERE session_id = %s AND expires > {_NOW}",
                          (session_id,))
        return str(rows[0][0]) if rows else None

    def release_lock(self, session_id: str, owner: str) -> bool:
        # one statement, so autocommit: one round trip
        return bool(self._read("DELETE FROM session_locks WHERE session_id = %s AND owner = %s RETURNING 1",
                               (session_id, owner)))


def _reason(e: BaseException) -> str:
    """A one-line reason from a psycopg error (first line; no connection string in it)."""
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


_QUOTED = re.compile(r'"[^"]*"')


def _connect_reason(e: BaseException, psycopg: Any) -> str:
    """Why the first connection failed. libpq's URL parse errors (``ProgrammingError``) quote the
    token they stopped at, which may be the password (``invalid percent-encoded token:
    "<password>"``): those quotes are emptied."""
    line = _reason(e)
    return _QUOTED.sub('"…"', line) if isinstance(e, psycopg.ProgrammingError) else line
