"""The ``kept_runs`` table: a session's earlier messages kept already built (``builder.kept``).

A row is one run of stored messages for one request context (``hermes.builder.memo``): the
serialised request items the wire sends for them, their summed token cost, their
request-log tally and the digests of the messages they were built from. Only the session's
latest context and chain are kept: saving a run removes the session's rows of any other
context or window and the rows the new run absorbs; a run that does not continue the stored
chain (another process kept a different one meanwhile) is not saved.

Rows are a cache: a row that does not decode is left out (those messages are built again),
and nothing in one is a secret — it holds only what the request body itself carries.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["END_BEFORE", "FROM", "INSERT", "OTHER_CHAINS", "SELECT", "RunRow", "checked"]

RunRow = tuple[int, int, int, bytes, bytes, int, str]
"""(first seq, end seq, window seq, digests, body, cost, state JSON)."""

SELECT = ("SELECT first_seq, end_seq, window_seq, digests, body, cost, state FROM kept_runs"
          " WHERE session_id = ? AND context = ? ORDER BY first_seq")
OTHER_CHAINS = "DELETE FROM kept_runs WHERE session_id = ? AND (context <> ? OR window_seq <> ?)"
"""A session keeps one chain: runs of another context or window go."""
END_BEFORE = "SELECT MAX(end_seq) FROM kept_runs WHERE session_id = ? AND first_seq < ?"
"""Where the chain before a new run ends: it must end exactly where the run starts (else
another process kept a different chain meanwhile, and the run is not saved)."""
FROM = "DELETE FROM kept_runs WHERE session_id = ? AND first_seq >= ?"
"""The runs a new run absorbs or makes stale."""
INSERT = ("INSERT INTO kept_runs (session_id, context, first_seq, end_seq, window_seq, digests, body, cost, state)"
          " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")


def checked(rows: Iterable[Any]) -> list[RunRow]:
    """The rows whose columns have the types a run needs; any other row is left out."""
    out: list[RunRow] = []
    for first, end, window, digests, body, cost, state in rows:
        if isinstance(digests, memoryview):
            digests = bytes(digests)
        if isinstance(body, memoryview):
            body = bytes(body)
        if (type(first) is int and type(end) is int and type(window) is int and 0 <= window <= first < end
                and isinstance(digests, bytes) and len(digests) == 16 * (end - first) and isinstance(body, bytes)
                and body[:1] in (b"{", b"") and body[-1:] in (b"}", b"") and type(cost) is int
                and isinstance(state, str)):
            out.append((first, end, window, digests, body, cost, state))
    return out
