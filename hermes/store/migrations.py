"""The schema of ``state.db`` as an ordered list of named migration functions.

Rules (llm's ``migrations.py`` habit):

* ``@migration`` appends a function to ``MIGRATIONS``; order of definition is order of
  application. Each one runs in its own ``BEGIN IMMEDIATE`` transaction together with the row
  that records its name in ``_migrations``, so a crash never leaves half a migration.
* An applied migration is **never edited**. A schema change is a new function at the end.
* Every column is commented in the SQL, because the SQL is the documentation of the file
  format (``docs/store.md`` summarises it).
* A database whose ``_migrations`` names a function this code does not know was written by a
  newer Hermes; :mod:`hermes.store.db` refuses to touch it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

__all__ = ["MIGRATIONS", "Migration", "migration", "run_script"]

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    """Register ``fn`` as the next migration; its ``__name__`` is what ``_migrations`` records."""
    if any(m.__name__ == fn.__name__ for m in MIGRATIONS):
        raise ValueError(f"duplicate migration name {fn.__name__!r}")
    MIGRATIONS.append(fn)
    return fn


def run_script(conn: sqlite3.Connection, sql: str) -> None:
    """Execute a multi-statement script inside the caller's transaction.

    ``Connection.executescript`` would COMMIT first, breaking the one-transaction-per-migration
    rule, so statements are split with ``sqlite3.complete_statement`` and run one by one.
    """
    buf: list[str] = []
    for line in sql.splitlines(keepends=True):
        buf.append(line)
        stmt = "".join(buf)
        if sqlite3.complete_statement(stmt):
            if stmt.strip(" \n;"):
                conn.execute(stmt)
            buf = []
    rest = "".join(buf).strip()
    if rest and not all(ln.strip().startswith("--") for ln in rest.splitlines() if ln.strip()):
        raise ValueError(f"incomplete SQL statement in migration: {rest[:80]!r}")


@migration
def m001_initial(conn: sqlite3.Connection) -> None:
    """Sessions, messages, parts, content-addressed blobs, turns, capabilities, session locks."""
    run_script(
        conn,
        """
CREATE TABLE sessions (
    id            TEXT PRIMARY KEY,      -- short random id (12 hex chars), shown to users
    created       REAL NOT NULL,         -- unix seconds when the session was created
    updated       REAL NOT NULL,         -- unix seconds of the last append / config change
    title         TEXT NOT NULL DEFAULT '', -- user-visible label, may be empty
    provider      TEXT NOT NULL,         -- route key / provider id the session talks to
    model         TEXT NOT NULL,         -- model id as given by the user
    base_url      TEXT NOT NULL DEFAULT '', -- explicit base URL override, '' = route default
    parent_id     TEXT REFERENCES sessions(id) ON DELETE SET NULL, -- session this one branched from
    branch_of_seq INTEGER,               -- last parent message seq copied into this branch
    model_config  TEXT NOT NULL DEFAULT '{}' -- JSON object: learned per-session facts (e.g.
                                         -- reasoning_rejected_carriers); never secrets
);
CREATE INDEX sessions_updated ON sessions(updated);    -- list / latest session
CREATE INDEX sessions_parent ON sessions(parent_id);      -- FK lookups when a parent goes

CREATE TABLE turns (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, -- owning session
    id         INTEGER NOT NULL,         -- turn number within the session, 1, 2, 3 ...
    first_seq  INTEGER NOT NULL,         -- seq of the first message this turn appended
    last_seq   INTEGER NOT NULL,         -- seq of the last message this turn appended
    route_key  TEXT,                     -- JSON {provider, host, model, wire} that served it, or NULL
    usage      TEXT,                     -- JSON object of token usage as reported, or NULL
    created    REAL NOT NULL,            -- unix seconds when the turn was committed
    PRIMARY KEY (session_id, id)
) WITHOUT ROWID;

CREATE TABLE messages (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, -- owning session
    seq        INTEGER NOT NULL,         -- 0-based position in the session's history
    turn_id    INTEGER NOT NULL,         -- turns.id (same session) that appended this message
    role       TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')), -- Message.role
    created    REAL NOT NULL,            -- unix seconds when the message was stored
    PRIMARY KEY (session_id, seq),
    FOREIGN KEY (session_id, turn_id) REFERENCES turns(session_id, id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX messages_turn ON messages(session_id, turn_id); -- FK lookups when turns go

CREATE TABLE blobs (
    hash TEXT PRIMARY KEY,               -- sha256 hex of the blob's UTF-8 bytes (content address)
    data TEXT NOT NULL,                  -- the opaque payload exactly as received (signature,
                                         -- encrypted_content, redacted data, details JSON)
    kind TEXT NOT NULL                   -- blob_kind of the first part that stored it (informational;
                                         -- each part keeps its own blob_kind in parts.data)
) WITHOUT ROWID;

CREATE TABLE parts (
    session_id TEXT NOT NULL,            -- owning session (with seq: the message)
    seq        INTEGER NOT NULL,         -- messages.seq of the message holding the part
    position   INTEGER NOT NULL,         -- 0-based order of the part inside the message
    kind       TEXT NOT NULL,            -- text | reasoning | tool_call | tool_result | compaction
    text       TEXT NOT NULL,            -- the part's readable text: Text.text, Reasoning.text,
                                         -- ToolCall.arguments, ToolResult.content, Compaction.summary
    data       TEXT,                     -- JSON: the rest of the part's documented JSON form
                                         -- (docs/history-format.md) minus kind, text and blob; NULL if empty
    blob_hash  TEXT REFERENCES blobs(hash), -- Reasoning.blob lives in blobs; NULL = no blob
    PRIMARY KEY (session_id, seq, position),
    FOREIGN KEY (session_id, seq) REFERENCES messages(session_id, seq) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX parts_blob ON parts(blob_hash); -- blob GC and FK checks look parts up by hash

CREATE TABLE capabilities (
    provider TEXT NOT NULL,              -- provider id, lower-cased and stripped
    host     TEXT NOT NULL,              -- base URL host name, lower-cased
    model    TEXT NOT NULL,              -- model id, stripped
    kind     TEXT NOT NULL,              -- what was learned, e.g. rejected_carriers,
                                         -- suppressed_blobs, token_factor
    value    TEXT NOT NULL,              -- JSON value; lists are merged as sets on re-learning
    evidence TEXT NOT NULL,              -- JSON object: why (status, error excerpt, session id ...)
    created  REAL NOT NULL,              -- unix seconds when first learned
    updated  REAL NOT NULL,              -- unix seconds when the value last changed
    PRIMARY KEY (provider, host, model, kind)
) WITHOUT ROWID;

CREATE TABLE session_locks (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE, -- locked session
    owner      TEXT NOT NULL,            -- opaque holder id (gateway worker, pid@host ...)
    expires    REAL NOT NULL             -- unix seconds after which another owner may steal it
) WITHOUT ROWID;
""",
    )


@migration
def m002_proxy_memory(conn: sqlite3.Connection) -> None:
    """What ``hermes proxy`` saw in responses, so it can restore reasoning clients drop."""
    run_script(
        conn,
        """
CREATE TABLE proxy_memory (
    tenant  TEXT NOT NULL,               -- sha256 of (client API key, route key): never the key itself
    key     TEXT NOT NULL,               -- recognition key: hash of the assistant turn's tool calls
                                         -- (ids, names, arguments) or, without calls, its visible text
    message TEXT NOT NULL,               -- the assistant turn as the route sent it, in the documented
                                         -- JSON form of one message (docs/history-format.md)
    size    INTEGER NOT NULL,            -- bytes of message (the per-tenant size bound sums these)
    created REAL NOT NULL,               -- unix seconds when recorded (the age bound reads it)
    PRIMARY KEY (tenant, key)
) WITHOUT ROWID;
CREATE INDEX proxy_memory_tenant_age ON proxy_memory(tenant, created); -- oldest first per tenant
CREATE INDEX proxy_memory_age ON proxy_memory(created);                -- expiry across tenants
""",
    )


@migration
def m003_lease_fence(conn: sqlite3.Connection) -> None:
    """Fencing tokens for session leases: a per-session counter that grows by one for every new
    holder, and the value each current holder was granted. A step commit that carries a lease
    is refused unless that lease is still the session's current one."""
    run_script(
        conn,
        """
ALTER TABLE sessions ADD COLUMN lease_fence INTEGER NOT NULL DEFAULT 0; -- fencing token of the
                                         -- latest lease granted on this session (never decreases)
ALTER TABLE session_locks ADD COLUMN fence INTEGER NOT NULL DEFAULT 0; -- sessions.lease_fence
                                         -- when this owner took the lease
""",
    )


@migration
def m004_build_memo(conn: sqlite3.Connection) -> None:
    """Each message's value fingerprint, and the per-message build results of each session's
    latest request context, so a new process builds a long session's request without planning
    and rendering it again (``hermes.replay.memo``, ``docs/replay.md``)."""
    run_script(
        conn,
        """
ALTER TABLE messages ADD COLUMN digest BLOB; -- messages.message_digest of the stored message
                                         -- (16 bytes); NULL for rows written before this migration
CREATE TABLE renders (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, -- owning session
    context    BLOB NOT NULL,            -- replay.memo.context of the request: route row, host, model,
                                         -- profile, lessons, build format (one per session is kept)
    seq        INTEGER NOT NULL,         -- position of the message in the session
    digest     BLOB NOT NULL,            -- the message's digest when it was built: a row for
                                         -- another value is never used
    in_loop    INTEGER NOT NULL,         -- 1: built inside the open tool loop, 0: before it
    body       BLOB NOT NULL,            -- the wire's render of the message: its JSON items, serialised,
                                         -- comma-separated (only what the request itself carries)
    basis      TEXT NOT NULL,            -- pricing basis of cost (estimate.Basis.label)
    cost       INTEGER NOT NULL,         -- raw token cost of the planned message on that basis
    summary    TEXT NOT NULL,            -- JSON: what it carried, for the request log (logs.message_summary)
    PRIMARY KEY (session_id, seq, in_loop)
) WITHOUT ROWID;
""",
    )


@migration
def m005_kept_runs(conn: sqlite3.Connection) -> None:
    """Kept build results as runs of messages built in one piece (``hermes.replay.runs``):
    a new process splices a long session's earlier messages whole instead of visiting each."""
    run_script(
        conn,
        """
DROP TABLE renders;                      -- per-message results: replaced by runs (a cache: nothing lost)
CREATE TABLE kept_runs (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, -- owning session
    context    BLOB NOT NULL,            -- replay.memo.context of the requests: route row, host, model,
                                         -- profile, lessons, build format (one per session is kept)
    first_seq  INTEGER NOT NULL,         -- first message of the run
    end_seq    INTEGER NOT NULL,         -- the message after its last
    window_seq INTEGER NOT NULL,         -- where the chain of runs begins (the window start)
    digests    BLOB NOT NULL,            -- the messages' digests when built, concatenated: a run for
                                         -- other message values is never used
    body       BLOB NOT NULL,            -- the wire's request items for them, serialised, comma-separated
                                         -- (only what the request itself carries)
    cost       INTEGER NOT NULL,         -- their summed raw token cost (estimate.message_cost)
    state      TEXT NOT NULL,            -- JSON: system text, request-log tally (logs.Tally), the sides of
                                         -- the first and last turn it opens, whether every tool-call id is
                                         -- one the route takes
    PRIMARY KEY (session_id, first_seq)
) WITHOUT ROWID;
""",
    )
