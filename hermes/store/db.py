"""``Store``: the SQLite implementation of the session store (``$HERMES_HOME/state.db``).

Invariants:

* **Whole turns only.** ``append_turn`` writes a turn's messages, parts and blobs in one
  ``BEGIN IMMEDIATE`` transaction; any exception rolls it back, and a killed process leaves
  the last committed turn (WAL). Readers never see half a turn.
* **Byte-exact.** ``dumps`` of every loaded message equals ``dumps`` of the appended one.
* **Bounded reads.** ``load`` is two statements whatever the history length.
* **No secrets.** Nothing here takes a key or a header; ``model_config`` and the ledger hold
  learned facts only.

One ``Store`` holds one connection, guarded by a lock so threads (a gateway's worker pool)
may share it; each call is one unit of work. Processes sharing the file serialize writes
through SQLite's lock and ``busy_timeout``, and turns of one session through
:meth:`Store.acquire_lock`.
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from ..config.paths import db_path
from ..core.errors import HermesError, StoreError
from ..core.messages import Message, RouteKey, digest_of
from . import ledger
from .codec import messages_from_rows, part_to_row
from .lease import Lease, check_fence
from .opening import explain, open_db
from .records import Capability, NewSession, SessionInfo
from .runs import END_BEFORE, FROM, INSERT, OTHER_CHAINS, RunRow
from .shared import _INFO_SQL, SharedMethods

__all__ = ["Store"]

_LOAD_SQL = (
    "SELECT m.seq, m.role, m.digest, p.kind, p.text, p.data, b.data"
    " FROM messages m"
    " LEFT JOIN parts p ON p.session_id = m.session_id AND p.seq = m.seq"
    " LEFT JOIN blobs b ON b.hash = p.blob_hash"
    " WHERE m.session_id = ? AND m.seq >= ? ORDER BY m.seq, p.position"
)


_LEASE_AND_INFO = (
    _INFO_SQL.replace("SELECT ", "SELECT s.lease_fence, l.owner, l.expires, l.fence, ", 1)
    + " LEFT JOIN session_locks l ON l.session_id = s.id WHERE s.id = ?"
)
"""A session's lease counter, its lease row (if any) and then its ``SessionInfo`` columns."""


def _json(value: Any, what: str) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError as e:
        raise StoreError(f"{what} is not JSON-serialisable: {e}") from None


def _route_json(route_key: RouteKey | None) -> str | None:
    if route_key is None:
        return None
    return _json({"provider": route_key.provider, "host": route_key.host, "model": route_key.model,
                  "wire": route_key.wire}, "route_key")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch: objects merge recursively, ``None`` deletes a key."""
    if not isinstance(patch, Mapping):
        return patch
    out = dict(target) if isinstance(target, Mapping) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


class Store(SharedMethods):
    """Sessions, their messages, the capability ledger and session locks in one SQLite file."""

    def __init__(self, path: Path | None = None, *, timeout_s: float = 10.0) -> None:
        self.path = Path(path) if path is not None else db_path()
        self._c = open_db(self.path, timeout_s=timeout_s)
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ plumbing

    def close(self) -> None:
        with self._lock:
            self._c.close()

    @contextmanager
    def _write(self, what: str) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction: the write lock is taken up front, so reads inside it
        (next seq, lock owner) cannot be invalidated by another process before COMMIT."""
        c = self._c
        with self._lock:
            try:
                c.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as e:
                raise StoreError(f"cannot {what}: {explain(e, self.path)} ({self.path})") from None
            try:
                yield c
                c.execute("COMMIT")
            except BaseException as e:
                if c.in_transaction:
                    c.execute("ROLLBACK")
                if isinstance(e, HermesError) or not isinstance(e, Exception):
                    raise
                raise StoreError(f"cannot {what}: {explain(e, self.path)} ({self.path})") from e

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        try:
            with self._lock:
                return self._c.execute(sql, args).fetchall()
        except sqlite3.Error as e:
            raise StoreError(f"cannot read {self.path}: {e}") from None

    @staticmethod
    def _new_id(c: sqlite3.Connection) -> str:
        """12 random hex chars no session has yet (short enough to type)."""
        while True:
            sid = secrets.token_hex(6)
            if not c.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone():
                return sid

    def _require(self, c: sqlite3.Connection, session_id: str) -> None:
        if not c.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
            raise self._unknown(session_id)

    # ------------------------------------------------------------------ sessions

    def create_session(
        self,
        *,
        provider: str,
        model: str,
        base_url: str = "",
        title: str = "",
        model_config: Mapping[str, Any] | None = None,
    ) -> str:
        """A new empty session; the id is 12 random hex chars (short enough to type)."""
        config = _json(dict(model_config or {}), "model_config")
        now = time.time()
        with self._write("create a session") as c:
            sid = self._new_id(c)
            c.execute(
                "INSERT INTO sessions (id, created, updated, title, provider, model, base_url,"
                " model_config) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (sid, now, now, title, provider, model, base_url, config),
            )
        return sid

    def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        provider: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
    ) -> None:
        """Rename, or record that the session now talks to another provider/model."""
        fields = {"title": title, "provider": provider, "model": model, "base_url": base_url}
        sets = {k: v for k, v in fields.items() if v is not None}
        with self._write("update a session") as c:
            self._require(c, session_id)
            cols = "".join(f"{k} = ?, " for k in sets)
            c.execute(
                f"UPDATE sessions SET {cols}updated = ? WHERE id = ?",
                (*sets.values(), time.time(), session_id),
            )

    def delete_session(self, session_id: str) -> None:
        """Delete a session with its turns, messages and parts; blobs no other session
        references go too (content-addressed, so a branch keeps the ones it shares)."""
        with self._write("delete a session") as c:
            self._require(c, session_id)
            c.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            c.execute(
                "DELETE FROM blobs WHERE NOT EXISTS"
                " (SELECT 1 FROM parts p WHERE p.blob_hash = blobs.hash)"
            )

    # ------------------------------------------------------------------ history

    def load_tail(self, session_id: str, start: int) -> list[Message]:
        """The messages from position ``start`` on (``load`` is ``start=0``): what a process that
        holds the first ``start`` messages (``hermes.builder.hot``) needs after another one committed."""
        if not self._read("SELECT 1 FROM sessions WHERE id = ?", (session_id,)):
            raise self._unknown(session_id)
        return messages_from_rows(self._read(_LOAD_SQL, (session_id, start)))

    def append_turn(
        self,
        session_id: str,
        messages: Sequence[Message],
        *,
        route_key: RouteKey | None = None,
        usage: Mapping[str, Any] | None = None,
        fence: Lease | None = None,
        create: NewSession | None = None,
    ) -> int:
        """Append one turn's messages atomically; returns the turn number (1, 2, ...).

        Everything — serialising parts included — happens inside the transaction, so any
        failure (a part that is not JSON, a constraint, a kill) leaves no trace of the turn.
        With ``fence``, the lease is re-checked in the same transaction (:class:`LeaseLost`).
        With ``create``, the session row (and ``fence``'s lease row) is written in that same
        transaction first: a session exists only with its first step.
        """
        if not messages:
            raise StoreError("a turn needs at least one message")
        with self._write("append a turn") as c:
            if create is not None:
                self._insert_new(c, create, fence)
            # the lease row in the same statement (as on PostgreSQL): a gateway commits two
            # steps a turn, each one statement fewer
            first, turn, exists, owner, held = c.execute(
                "SELECT (SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE session_id = :s),"
                " (SELECT COALESCE(MAX(id), 0) + 1 FROM turns WHERE session_id = :s),"
                " EXISTS (SELECT 1 FROM sessions WHERE id = :s), l.owner, l.fence"
                " FROM (SELECT 1) LEFT JOIN session_locks l ON l.session_id = :s",
                {"s": session_id},
            ).fetchone()
            if not exists:
                raise self._unknown(session_id)
            if fence is not None:
                check_fence(fence, None if owner is None else (owner, held))
            now = time.time()
            rk = _route_json(route_key)
            c.execute(
                "INSERT INTO turns (session_id, id, first_seq, last_seq, route_key, usage, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (session_id, turn, first, first + len(messages) - 1, rk,
                 None if usage is None else _json(dict(usage), "usage"), now),
            )
            for i, m in enumerate(messages):
                self._insert_message(c, session_id, first + i, turn, m, now)
            c.execute("UPDATE sessions SET updated = ? WHERE id = ?", (now, session_id))
        return int(turn)

    @staticmethod
    def _insert_new(c: sqlite3.Connection, new: NewSession, fence: Lease | None) -> None:
        """The row of a session created with its first step; a taken id is refused."""
        if c.execute("SELECT 1 FROM sessions WHERE id = ?", (new.id,)).fetchone():
            raise StoreError(f"session {new.id!r} already exists: the new session's first step was not stored")
        c.execute(
            "INSERT INTO sessions (id, created, updated, title, provider, model, base_url, model_config,"
            " lease_fence) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (new.id, new.created or time.time(), time.time(), new.title, new.provider, new.model, new.base_url,
             _json(new.model_config, "model_config"), 0 if fence is None else fence.fence),
        )
        if fence is not None:
            c.execute("INSERT INTO session_locks (session_id, owner, expires, fence) VALUES (?, ?, ?, ?)",
                      (new.id, fence.owner, time.time() + new.lease_ttl_s, fence.fence))

    @staticmethod
    def _insert_message(
        c: sqlite3.Connection, sid: str, seq: int, turn: int, m: Message, now: float
    ) -> None:
        c.execute(
            "INSERT INTO messages (session_id, seq, turn_id, role, created, digest) VALUES (?, ?, ?, ?, ?, ?)",
            (sid, seq, turn, m.role, now, digest_of(m)),
        )
        rows = []
        blobs = []
        for pos, part in enumerate(m.parts):
            kind, text, data, bhash, blob, blob_kind = part_to_row(part)
            if bhash is not None:
                blobs.append((bhash, blob, blob_kind))
            rows.append((sid, seq, pos, kind, text, data, bhash))
        if blobs:
            c.executemany("INSERT OR IGNORE INTO blobs (hash, data, kind) VALUES (?, ?, ?)", blobs)
        if rows:
            c.executemany(
                "INSERT INTO parts (session_id, seq, position, kind, text, data, blob_hash)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def branch(self, session_id: str, *, upto_seq: int | None = None, title: str = "") -> str:
        """A new session holding the parent's messages ``seq <= upto_seq`` (all by default).

        Rows are copied (so the branch survives its parent's deletion) but blobs are shared
        by hash, never copied. ``model_config`` — learned rejections — comes along, so the
        branch does not pay the same 400 again.
        """
        with self._write("branch a session") as c:
            parent = c.execute(
                "SELECT title, provider, model, base_url, model_config,"
                " (SELECT MAX(seq) FROM messages WHERE session_id = ?) FROM sessions WHERE id = ?",
                (session_id, session_id),
            ).fetchone()
            if parent is None:
                raise self._unknown(session_id)
            p_title, provider, model, base_url, config, last = parent
            upto = self._branch_upto(session_id, upto_seq, last)
            sid = self._new_id(c)
            now = time.time()
            c.execute(
                "INSERT INTO sessions (id, created, updated, title, provider, model, base_url,"
                " parent_id, branch_of_seq, model_config) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (sid, now, now, title or p_title, provider, model, base_url, session_id, upto, config),
            )
            if upto is not None:
                args = (sid, session_id, upto)
                c.execute(
                    "INSERT INTO turns (session_id, id, first_seq, last_seq, route_key, usage, created)"
                    " SELECT ?1, id, first_seq, MIN(last_seq, ?3), route_key, usage, created"
                    " FROM turns WHERE session_id = ?2 AND first_seq <= ?3",
                    args,
                )
                c.execute(
                    "INSERT INTO messages (session_id, seq, turn_id, role, created, digest)"
                    " SELECT ?1, seq, turn_id, role, created, digest FROM messages"
                    " WHERE session_id = ?2 AND seq <= ?3",
                    args,
                )
                c.execute(
                    "INSERT INTO parts (session_id, seq, position, kind, text, data, blob_hash)"
                    " SELECT ?1, seq, position, kind, text, data, blob_hash FROM parts"
                    " WHERE session_id = ?2 AND seq <= ?3",
                    args,
                )
        return sid

    # ------------------------------------------------------------------ build results

    def save_run(self, session_id: str, context: bytes, row: RunRow) -> bool:
        """Keep ``row`` as the next run of the session's chain for ``context`` (one chain per
        session: runs of another context or window go, the runs it absorbs go). False, and
        nothing saved, when it does not continue the stored chain or the session is gone."""
        first, window = row[0], row[2]
        with self._write("keep build results") as c:
            if not c.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
                return False  # deleted meanwhile: nothing to keep
            c.execute(OTHER_CHAINS, (session_id, context, window))
            if c.execute(END_BEFORE, (session_id, first)).fetchone()[0] != (None if first == window else first):
                return False
            c.execute(FROM, (session_id, first))
            c.execute(INSERT, (session_id, context, *row))
            return True

    # ------------------------------------------------------------------ per-session config

    def patch_model_config(self, session_id: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        """Merge ``patch`` (RFC 7396: ``None`` deletes) atomically; returns the new config.

        Read-modify-write under the write lock, so two processes learning different facts
        for one session both keep theirs.
        """
        _json(dict(patch), "model_config patch")
        with self._write("update model_config") as c:
            row = c.execute("SELECT model_config FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row is None:
                raise self._unknown(session_id)
            merged = merge_patch(orjson.loads(row[0]), patch)
            c.execute(
                "UPDATE sessions SET model_config = ?, updated = ? WHERE id = ?",
                (_json(merged, "model_config"), time.time(), session_id),
            )
        return dict(merged)

    # ------------------------------------------------------------------ capability ledger

    def learn(
        self,
        provider: str,
        host: str,
        model: str,
        kind: str,
        value: Any,
        evidence: Mapping[str, Any],
    ) -> bool:
        """Record a learned fact; True if it is new (list/set values grow as sets).

        False means "already known": the caller must not retry on it (no loops).
        """
        key = ledger.norm_key(provider, host, model)
        _json(ledger.merge_value(None, value), "capability value")
        _json(dict(evidence), "capability evidence")
        with self._write("record a capability") as c:
            return ledger.learn(c, key, kind, value, evidence, time.time())

    def capabilities(self, provider: str, host: str, model: str) -> dict[str, Any]:
        """``{kind: value}`` learned for one (provider, host, model)."""
        try:
            with self._lock:
                return ledger.lookup(self._c, ledger.norm_key(provider, host, model))
        except sqlite3.Error as e:
            raise StoreError(f"cannot read {self.path}: {e}") from None

    def list_capabilities(self) -> list[Capability]:
        try:
            with self._lock:
                return ledger.list_capabilities(self._c)
        except sqlite3.Error as e:
            raise StoreError(f"cannot read {self.path}: {e}") from None

    def forget(
        self, provider: str | None = None, host: str | None = None, model: str | None = None
    ) -> int:
        """Drop learned facts (``None`` = any); returns how many rows went."""
        with self._write("forget capabilities") as c:
            return ledger.forget(c, provider, host, model)

    # ------------------------------------------------------------------ session locks

    def acquire_lease(self, session_id: str, owner: str, ttl_s: float) -> int | None:
        """:meth:`acquire_lock` returning the lease's fencing token (``None``: held by another).

        A new holder gets ``sessions.lease_fence + 1``; a renewal keeps its token. Steps
        committed with ``append_turn(..., fence=Lease(...))`` are refused once the token is
        no longer current (``hermes.store.lease``).
        """
        with self._write("lock a session") as c:
            return self._lease(c, session_id, owner, ttl_s)[0]

    def lease_session(self, session_id: str, owner: str, ttl_s: float) -> tuple[int, SessionInfo] | None:
        """:meth:`acquire_lease` and the session's row, read in the same transaction (a gateway
        turn needs both: one transaction instead of two)."""
        with self._write("lock a session") as c:
            fence, info = self._lease(c, session_id, owner, ttl_s)
            return None if fence is None else (fence, SessionInfo(*info))

    def _lease(self, c: sqlite3.Connection, session_id: str, owner: str,
               ttl_s: float) -> tuple[int | None, tuple[Any, ...]]:
        """Take or renew the lease in transaction ``c``: (its fence, or None when another owner
        holds it; the session's row, read by the same statement — nothing below changes it)."""
        row = c.execute(_LEASE_AND_INFO, (session_id,)).fetchone()
        if row is None:
            raise self._unknown(session_id)
        counter, held_by, expires, fence = row[:4]
        info = tuple(row[4:])
        now = time.time()
        if held_by is not None and held_by != owner and expires > now:
            return None, info
        if held_by != owner:
            fence = counter + 1
            c.execute("UPDATE sessions SET lease_fence = ? WHERE id = ?", (fence, session_id))
        c.execute(
            "INSERT INTO session_locks (session_id, owner, expires, fence) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner,"
            " expires = excluded.expires, fence = excluded.fence",
            (session_id, owner, now + ttl_s, fence),
        )
        return int(fence), info

    def lease_holder(self, session_id: str) -> str | None:
        """The owner of the session's unexpired lease, if any."""
        rows = self._read("SELECT owner FROM session_locks WHERE session_id = ? AND expires > ?",
                          (session_id, time.time()))
        return str(rows[0][0]) if rows else None

    def release_lock(self, session_id: str, owner: str) -> bool:
        """Release the lock if ``owner`` holds it; True if a lock was released. One statement,
        so its own transaction (as on PostgreSQL): one call into SQLite instead of three, each
        of which lets go of the GIL — a gateway releases a lease after every turn."""
        try:
            with self._lock:
                cur = self._c.execute("DELETE FROM session_locks WHERE session_id = ? AND owner = ?",
                                      (session_id, owner))
                return cur.rowcount > 0
        except sqlite3.Error as e:
            raise StoreError(f"cannot unlock a session: {explain(e, self.path)} ({self.path})") from None
