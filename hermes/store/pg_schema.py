"""The PostgreSQL schema, as named migrations that mirror :mod:`hermes.store.migrations`.

Same rules as the SQLite file: one function per migration, applied in order, never edited,
recorded by name in ``_migrations``; a database naming a migration this code does not know
was written by a newer Hermes and is refused before anything is written. The names match the
SQLite ones, so both backends at the same Hermes version hold the same logical schema.

Differences from SQLite, and why:

* ``parts.text`` and ``blobs.data`` are ``bytea`` (UTF-8): model output may contain NUL,
  which a PostgreSQL ``text`` value cannot hold, and the store is byte-exact.
* JSON columns stay ``text``, not ``jsonb``: ``jsonb`` reorders object keys, and a stored
  part must dump back byte-for-byte.
* All migrations run in one transaction under an advisory lock, so workers starting at once
  against a fresh database apply each migration exactly once (PostgreSQL DDL is transactional).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..core.errors import StoreError

__all__ = ["PG_MIGRATIONS", "migrate"]

PgMigration = Callable[[Any], None]
PG_MIGRATIONS: list[PgMigration] = []
_LOCK_KEY = 0x6865726D6573  # pg_advisory_xact_lock key for schema changes ("hermes")


def _migration(fn: PgMigration) -> PgMigration:
    PG_MIGRATIONS.append(fn)
    return fn


@_migration
def m001_initial(cur: Any) -> None:
    """Sessions, turns, messages, parts, content-addressed blobs, capabilities, session locks.
    Column meanings are those of the SQLite migration of the same name."""
    cur.execute("""
CREATE TABLE sessions (
    id            text PRIMARY KEY,
    created       double precision NOT NULL,
    updated       double precision NOT NULL,
    title         text NOT NULL DEFAULT '',
    provider      text NOT NULL,
    model         text NOT NULL,
    base_url      text NOT NULL DEFAULT '',
    parent_id     text REFERENCES sessions(id) ON DELETE SET NULL,
    branch_of_seq integer,
    model_config  text NOT NULL DEFAULT '{}'
);
CREATE INDEX sessions_updated ON sessions(updated);
CREATE INDEX sessions_parent ON sessions(parent_id);

CREATE TABLE turns (
    session_id text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    id         integer NOT NULL,
    first_seq  integer NOT NULL,
    last_seq   integer NOT NULL,
    route_key  text,
    usage      text,
    created    double precision NOT NULL,
    PRIMARY KEY (session_id, id)
);

CREATE TABLE messages (
    session_id text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq        integer NOT NULL,
    turn_id    integer NOT NULL,
    role       text NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    created    double precision NOT NULL,
    PRIMARY KEY (session_id, seq),
    FOREIGN KEY (session_id, turn_id) REFERENCES turns(session_id, id) ON DELETE CASCADE
);
CREATE INDEX messages_turn ON messages(session_id, turn_id);

CREATE TABLE blobs (
    hash text PRIMARY KEY,   -- sha256 hex of data
    data bytea NOT NULL,     -- UTF-8 bytes of the payload exactly as received
    kind text NOT NULL
);

CREATE TABLE parts (
    session_id text NOT NULL,
    seq        integer NOT NULL,
    position   integer NOT NULL,
    kind       text NOT NULL,
    text       bytea NOT NULL,  -- UTF-8 bytes (may contain NUL)
    data       text,
    blob_hash  text REFERENCES blobs(hash),
    PRIMARY KEY (session_id, seq, position),
    FOREIGN KEY (session_id, seq) REFERENCES messages(session_id, seq) ON DELETE CASCADE
);
CREATE INDEX parts_blob ON parts(blob_hash);

CREATE TABLE capabilities (
    provider text NOT NULL,
    host     text NOT NULL,
    model    text NOT NULL,
    kind     text NOT NULL,
    value    text NOT NULL,
    evidence text NOT NULL,
    created  double precision NOT NULL,
    updated  double precision NOT NULL,
    PRIMARY KEY (provider, host, model, kind)
);

CREATE TABLE session_locks (
    session_id text PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    owner      text NOT NULL,
    expires    double precision NOT NULL
);
""")


@_migration
def m002_proxy_memory(cur: Any) -> None:
    """``hermes proxy``'s reasoning memory; columns as in the SQLite migration of the same name."""
    cur.execute("""
CREATE TABLE proxy_memory (
    tenant  text NOT NULL,
    key     text NOT NULL,
    message text NOT NULL,
    size    bigint NOT NULL,
    created double precision NOT NULL,
    PRIMARY KEY (tenant, key)
);
CREATE INDEX proxy_memory_tenant_age ON proxy_memory(tenant, created);
CREATE INDEX proxy_memory_age ON proxy_memory(created);
""")


@_migration
def m003_lease_fence(cur: Any) -> None:
    """Fencing tokens, as in SQLite: a per-session counter and each holder's granted value."""
    cur.execute("""
ALTER TABLE sessions ADD COLUMN lease_fence bigint NOT NULL DEFAULT 0;
ALTER TABLE session_locks ADD COLUMN fence bigint NOT NULL DEFAULT 0;
""")


@_migration
def m004_build_memo(cur: Any) -> None:
    """Message digests and per-message build results, as in the SQLite migration of the same name."""
    cur.execute("""
ALTER TABLE messages ADD COLUMN digest bytea;
CREATE TABLE renders (
    session_id text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    context    bytea NOT NULL,
    seq        bigint NOT NULL,
    digest     bytea NOT NULL,
    in_loop    boolean NOT NULL,
    body       bytea NOT NULL,
    basis      text NOT NULL,
    cost       bigint NOT NULL,
    summary    text NOT NULL,
    PRIMARY KEY (session_id, seq, in_loop)
);
""")



@_migration
def m005_kept_runs(cur: Any) -> None:
    """Kept runs replace per-message build results, as in the SQLite migration of the same name."""
    cur.execute("""
DROP TABLE renders;
CREATE TABLE kept_runs (
    session_id text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    context    bytea NOT NULL,
    first_seq  bigint NOT NULL,
    end_seq    bigint NOT NULL,
    window_seq bigint NOT NULL,
    digests    bytea NOT NULL,
    body       bytea NOT NULL,
    cost       bigint NOT NULL,
    state      text NOT NULL,
    PRIMARY KEY (session_id, first_seq)
);
""")

def migrate(conn: Any, where: str) -> None:
    """Refuse a newer schema, else apply what is pending — one transaction, one writer."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        cur.execute("SELECT to_regclass('_migrations') IS NOT NULL")
        row = cur.fetchone()
        applied: list[str] = []
        if row and row[0]:
            cur.execute("SELECT name FROM _migrations ORDER BY applied, name")
            applied = [r[0] for r in cur.fetchall()]
        known = [m.__name__ for m in PG_MIGRATIONS]
        unknown = [n for n in applied if n not in known]
        if unknown:
            raise StoreError(
                f"{where} was written by a newer Hermes (migration {unknown[0]}); upgrade hermes",
                hint="nothing was changed; upgrade hermes or point HERMES_DATABASE_URL elsewhere",
            )
        if len(applied) == len(known):
            return
        cur.execute("CREATE TABLE IF NOT EXISTS _migrations"
                    " (name text PRIMARY KEY, applied double precision NOT NULL)")
        for fn in PG_MIGRATIONS:
            if fn.__name__ not in applied:
                fn(cur)
                cur.execute("INSERT INTO _migrations (name, applied) VALUES (%s, %s)",
                            (fn.__name__, time.time()))
