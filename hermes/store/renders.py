"""The ``renders`` table: per-message build results kept next to a session's messages.

A row is one stored message's render for one request context (``hermes.replay.memo``): the
serialised JSON items the wire sends for it, its token cost and its log summary, under the
message's digest. A new process that resumes a long session loads them and splices the bytes
instead of planning and rendering every message again. Only the session's latest context is
kept (a route or lesson change replaces the rows), so the table holds at most two rows per
stored message (before and inside the open tool loop).

Rows are a cache: a row that does not decode is left out (the message is built again), and
nothing in one is a secret — it holds only what the request body itself carries.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["DELETE_OTHERS", "INSERT_PG", "INSERT_SQLITE", "SELECT", "Built", "checked"]

Built = tuple[int, bytes, bool, bytes, str, int, str]
"""(seq, digest, in_loop, body, basis, cost, summary JSON)."""

SELECT = ("SELECT seq, digest, in_loop, body, basis, cost, summary FROM renders"
          " WHERE session_id = ? AND context = ?")
DELETE_OTHERS = "DELETE FROM renders WHERE session_id = ? AND context <> ?"
_COLUMNS = "(session_id, context, seq, digest, in_loop, body, basis, cost, summary)"
INSERT_SQLITE = f"INSERT OR REPLACE INTO renders {_COLUMNS} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
INSERT_PG = (f"INSERT INTO renders {_COLUMNS} VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
             " ON CONFLICT (session_id, seq, in_loop) DO UPDATE SET context = excluded.context,"
             " digest = excluded.digest, body = excluded.body, basis = excluded.basis, cost = excluded.cost,"
             " summary = excluded.summary")


def checked(rows: Iterable[Any]) -> list[Built]:
    """The rows whose columns have the types a result needs; any other row is left out."""
    out: list[Built] = []
    for seq, digest, loop, body, basis, cost, summary in rows:
        if isinstance(digest, memoryview):
            digest = bytes(digest)
        if isinstance(body, memoryview):
            body = bytes(body)
        if (type(seq) is int and isinstance(digest, bytes) and len(digest) == 16 and isinstance(body, bytes)
                and body[:1] in (b"{", b"") and body[-1:] in (b"}", b"") and isinstance(basis, str)
                and type(cost) is int and isinstance(summary, str)):
            out.append((seq, digest, bool(loop), body, basis, cost, summary))
    return out
