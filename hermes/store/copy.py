"""``hermes store migrate --to postgresql://…``: copy a ``state.db`` into PostgreSQL, then verify.

Copied: sessions (with branch parents and learned ``model_config``), turns, messages, parts,
blobs, the capability ledger and the proxy's reasoning memory (``proxy_memory``). Not copied:
``session_locks`` — a lease is a running turn's, not data; the fencing counter
(``sessions.lease_fence``) is copied so tokens keep growing.

Idempotent: every row is inserted with ``ON CONFLICT DO NOTHING`` in one transaction, so a
re-run (after a crash, or after more turns were added to ``state.db``) adds only what is
missing. Verification then reads both sides back through the stores themselves:

* each source session exists in the destination and its history's JSONL export hashes the same
  over the source's messages (a destination session may have *more* turns — it kept going on
  PostgreSQL — but never different ones);
* each source blob exists and its bytes still hash to its content address;
* each ledger key exists; row counts per table are reported side by side;
* each proxy recording exists and its stored text hashes the same, unless the destination's
  is newer (a proxy worker on PostgreSQL recorded that turn again since): a re-run replaces
  a destination recording only with a newer one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import StoreError
from .db import Store
from .pg import PgStore

__all__ = ["CopyReport", "copy_store"]

_BATCH = 1000
_TABLES = ("sessions", "turns", "messages", "parts", "blobs", "capabilities", "proxy_memory")


@dataclass
class CopyReport:
    counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    """table → (rows in the source, rows of those now in the destination)."""
    sessions_verified: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _history_hash(lines: Any, n: int) -> str:
    h = hashlib.sha256()
    for i, line in enumerate(lines):
        if i >= n:
            break
        h.update(line)
    return h.hexdigest()


def _copy_rows(src: Store, cur: Any) -> None:
    c = src._c

    def batches(sql: str) -> Any:
        rows = c.execute(sql)
        while chunk := rows.fetchmany(_BATCH):
            yield chunk

    for chunk in batches("SELECT id, created, updated, title, provider, model, base_url, branch_of_seq,"
                         " model_config, lease_fence FROM sessions"):
        cur.executemany("INSERT INTO sessions (id, created, updated, title, provider, model, base_url, branch_of_seq,"
                        " model_config, lease_fence) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                        " ON CONFLICT (id) DO NOTHING", chunk)
    for chunk in batches("SELECT id, parent_id FROM sessions WHERE parent_id IS NOT NULL"):
        cur.executemany("UPDATE sessions SET parent_id = %s WHERE id = %s AND parent_id IS NULL",
                        [(parent, sid) for sid, parent in chunk])
    for chunk in batches("SELECT hash, data, kind FROM blobs"):
        cur.executemany("INSERT INTO blobs (hash, data, kind) VALUES (%s, %s, %s) ON CONFLICT (hash) DO NOTHING",
                        [(h, d.encode(), k) for h, d, k in chunk])
    for chunk in batches("SELECT session_id, id, first_seq, last_seq, route_key, usage, created FROM turns"):
        cur.executemany("INSERT INTO turns (session_id, id, first_seq, last_seq, route_key, usage, created)"
                        " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING", chunk)
    for chunk in batches("SELECT session_id, seq, turn_id, role, created, digest FROM messages"):
        cur.executemany("INSERT INTO messages (session_id, seq, turn_id, role, created, digest)"
                        " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING", chunk)
    for chunk in batches("SELECT session_id, seq, position, kind, text, data, blob_hash FROM parts"):
        cur.executemany("INSERT INTO parts (session_id, seq, position, kind, text, data, blob_hash)"
                        " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                        [(s, q, p, k, t.encode(), d, b) for s, q, p, k, t, d, b in chunk])
    for chunk in batches("SELECT provider, host, model, kind, value, evidence, created, updated FROM capabilities"):
        cur.executemany("INSERT INTO capabilities (provider, host, model, kind, value, evidence, created, updated)"
                        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING", chunk)
    for chunk in batches("SELECT tenant, key, message, size, created FROM proxy_memory"):
        cur.executemany("INSERT INTO proxy_memory (tenant, key, message, size, created) VALUES (%s, %s, %s, %s, %s)"
                        " ON CONFLICT (tenant, key) DO UPDATE SET message = excluded.message, size = excluded.size,"
                        " created = excluded.created WHERE excluded.created > proxy_memory.created", chunk)


def _count_present(src: Store, cur: Any) -> dict[str, tuple[int, int]]:
    """Per table: source rows, and how many rows with the same keys the destination holds."""
    keys = {"sessions": "id", "turns": "session_id, id", "messages": "session_id, seq",
            "parts": "session_id, seq, position", "blobs": "hash", "capabilities": "provider, host, model, kind",
            "proxy_memory": "tenant, key"}
    out = {}
    for table in _TABLES:
        rows = src._c.execute(f"SELECT {keys[table]} FROM {table}").fetchall()
        cols = [k.strip() for k in keys[table].split(",")]
        present = 0
        for start in range(0, len(rows), _BATCH):
            chunk = rows[start:start + _BATCH]
            arrays = [[r[i] for r in chunk] for i in range(len(cols))]
            types = ["int[]" if isinstance(chunk[0][i], int) else "text[]" for i in range(len(cols))]
            cur.execute(f"SELECT COUNT(*) FROM {table} t JOIN unnest("
                        + ", ".join(f"%s::{ty}" for ty in types) + f") AS k({', '.join(cols)})"
                        f" USING ({', '.join(cols)})", arrays)
            present += int(cur.fetchone()[0])
        out[table] = (len(rows), present)
    return out


def copy_store(src: Store, dst: PgStore) -> CopyReport:
    """Copy everything ``src`` holds into ``dst`` (one transaction), then verify it."""
    with dst._write("copy state.db into PostgreSQL") as cur:
        _copy_rows(src, cur)
    report = CopyReport()
    with dst._reading() as cur:
        report.counts = _count_present(src, cur)
    for table, (have, there) in report.counts.items():
        if there != have:
            report.problems.append(f"{table}: {have} rows in the source, {there} of them in the destination")
    for (sid,) in src._c.execute("SELECT id FROM sessions ORDER BY id").fetchall():
        n = src.get_session(sid).message_count
        try:
            theirs = _history_hash(dst.export_jsonl(sid), n)
        except StoreError as e:
            report.problems.append(f"session {sid}: {e}")
            continue
        if theirs != _history_hash(src.export_jsonl(sid), n):
            report.problems.append(f"session {sid}: its first {n} messages differ in the destination")
        else:
            report.sessions_verified += 1
    report.problems.extend(_check_recordings(src, dst))
    hashes = [h for (h,) in src._c.execute("SELECT hash FROM blobs").fetchall()]
    for start in range(0, len(hashes), _BATCH):
        rows = dst._read("SELECT hash, data FROM blobs WHERE hash = ANY(%s)", (hashes[start:start + _BATCH],))
        for h, data in rows:
            if hashlib.sha256(bytes(data)).hexdigest() != h:
                report.problems.append(f"blob {h[:12]}: its bytes do not hash to its address")
    return report


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _check_recordings(src: Store, dst: PgStore) -> list[str]:
    """Each source proxy recording, by content hash, in the destination (or a newer one there)."""
    problems: list[str] = []
    rows = src._c.execute("SELECT tenant, key, message, created FROM proxy_memory").fetchall()
    for start in range(0, len(rows), _BATCH):
        chunk = rows[start:start + _BATCH]
        there = {(t, k): (_digest(m), c) for t, k, m, c in dst._read(
            "SELECT p.tenant, p.key, p.message, p.created FROM proxy_memory p JOIN unnest(%s::text[], %s::text[])"
            " AS w(tenant, key) USING (tenant, key)", ([r[0] for r in chunk], [r[1] for r in chunk]))}
        for tenant, key, message, created in chunk:
            theirs = there.get((tenant, key))
            if theirs is not None and theirs[0] != _digest(message) and theirs[1] <= created:
                problems.append(f"proxy recording {key[:12]} of tenant {tenant[:10]}: its text differs")
    return problems
