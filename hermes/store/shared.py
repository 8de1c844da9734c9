"""Store methods that are the same whatever the backend: defined once over the protocol's
other methods, so ``Store`` (SQLite) and ``PgStore`` (PostgreSQL) cannot drift apart."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Self

import orjson

from ..core.errors import StoreError
from ..core.messages import Message, dumps
from .records import SessionInfo
from .runs import SELECT, RunRow, checked

__all__ = ["HINT_LIST", "Closing", "SharedMethods"]

HINT_LIST = "list sessions with `hermes sessions list`"
_INFO_SQL = (
    "SELECT s.id, s.created, s.updated, s.title, s.provider, s.model, s.base_url, s.parent_id,"
    " s.branch_of_seq,"
    " (SELECT COALESCE(MAX(m.seq) + 1, 0) FROM messages m WHERE m.session_id = s.id),"
    " (SELECT COALESCE(MAX(t.id), 0) FROM turns t WHERE t.session_id = s.id)"
    " FROM sessions s"
)
"""Counts as the last seq + 1 and the last turn id: messages are numbered 0, 1, 2 … and turns
1, 2, 3 … with no gaps (appends take the next number, a branch copies a prefix, nothing is
deleted alone), so these equal ``COUNT(*)`` — read from the primary key's end in one probe
instead of counting every row (a gateway reads the row every turn)."""
_INFO_ONE = _INFO_SQL + " WHERE s.id = ?"
"""One session's row by its exact id."""


class Closing:
    """``with`` it: ``close`` at the end of the block (the stores, their views, the proxy's memories)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SharedMethods(Closing):
    """Mixed into both stores; relies on ``close``, ``load_tail``, ``acquire_lease``, ``_read``."""

    def load_tail(self, session_id: str, start: int) -> list[Message]:
        raise NotImplementedError

    def load(self, session_id: str) -> list[Message]:
        """The whole history, in order: one existence check plus one joined query."""
        return self.load_tail(session_id, 0)

    def acquire_lease(self, session_id: str, owner: str, ttl_s: float) -> int | None:
        raise NotImplementedError

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        """One query with ``?`` placeholders; both stores accept them."""
        raise NotImplementedError

    @staticmethod
    def _unknown(session_id: str) -> StoreError:
        return StoreError(f"unknown session {session_id!r}", hint=HINT_LIST)

    @staticmethod
    def _branch_upto(session_id: str, upto_seq: int | None, last: int | None) -> int | None:
        """The last seq a branch keeps: ``upto_seq``, checked against the parent's ``last``."""
        if upto_seq is not None and (last is None or not 0 <= upto_seq <= last):
            raise StoreError(f"session {session_id!r} has no message seq {upto_seq}"
                             f" (last seq is {last if last is not None else 'none: it is empty'})")
        return last if upto_seq is None else upto_seq

    def model_config(self, session_id: str) -> dict[str, Any]:
        """Learned per-session facts (e.g. ``reasoning_rejected_carriers``)."""
        rows = self._read("SELECT model_config FROM sessions WHERE id = ?", (session_id,))
        if not rows:
            raise self._unknown(session_id)
        value: dict[str, Any] = orjson.loads(rows[0][0])
        return value

    def get_session(self, ref: str) -> SessionInfo:
        """The session ``ref`` names: an exact id or a unique prefix of one (as users type it)."""
        rows = self._read(_INFO_ONE, (ref,))
        if not rows and ref:
            pattern = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            rows = self._read(_INFO_SQL + " WHERE s.id LIKE ? ESCAPE '\\' ORDER BY s.id LIMIT 6", (pattern,))
            if len(rows) > 1:
                ids = ", ".join(r[0] for r in rows[:5])
                raise StoreError(f"session prefix {ref!r} is ambiguous ({ids} ...)", hint=HINT_LIST)
        if not rows:
            raise self._unknown(ref)
        return SessionInfo(*rows[0])

    def list_sessions(self, limit: int = 20, *, include_empty: bool = True) -> list[SessionInfo]:
        """Most recently updated first; without ``include_empty``, only sessions with messages."""
        where = "" if include_empty else " WHERE EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)"
        rows = self._read(_INFO_SQL + where + " ORDER BY s.updated DESC, s.id LIMIT ?", (limit,))
        return [SessionInfo(*r) for r in rows]

    def latest_session(self) -> SessionInfo | None:
        """The session ``--continue`` resumes: the last one with messages; ``None`` when there is none."""
        found = self.list_sessions(1, include_empty=False)
        return found[0] if found else None

    def export_jsonl(self, session_id: str) -> Iterator[bytes]:
        """The history as JSONL lines (``messages.dumps`` + newline): exactly what
        ``hermes.core.messages.load_jsonl`` / ``hermes replay FILE`` read back. Loads eagerly so
        an unknown session fails here, not mid-write."""
        history = self.load(session_id)
        return (dumps(m) + b"\n" for m in history)

    def load_runs(self, session_id: str, context: bytes) -> list[RunRow]:
        """The session's kept runs for request context ``context`` (``hermes.builder.kept``), in
        order; rows that do not decode are left out (a miss: those messages are built again)."""
        return checked(self._read(SELECT, (session_id, context)))

    def acquire_lock(self, session_id: str, owner: str, ttl_s: float) -> bool:
        """Take (or renew) the per-session turn lock for ``ttl_s`` seconds.

        True if ``owner`` now holds it; False if another owner holds an unexpired lock.
        An expired lock is stolen — a crashed gateway worker cannot wedge a session.
        """
        return self.acquire_lease(session_id, owner, ttl_s) is not None
