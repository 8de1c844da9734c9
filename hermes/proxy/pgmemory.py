"""``PgMemory``: the proxy's reasoning memory in a PostgreSQL store, shared by every proxy worker.

The table is ``proxy_memory`` of the PostgreSQL schema (migration ``m002_proxy_memory``, the
same columns as in ``state.db``); connections come from the ``PgStore``'s pool, so a proxy
process holds one pool for the capability ledger and the memory alike.

What it keeps of ``SqliteMemory``'s rules, and how across many processes and hosts:

* **Per tenant** — every statement names the tenant; one tenant's recordings are never read
  for another.
* **Whole recordings** — a recording is one row written in one transaction; a worker killed
  mid-write leaves nothing (the server rolls the transaction back when the connection drops).
* **Size bound** — the insert and the eviction of the tenant's oldest recordings beyond
  ``max_bytes`` run in one transaction under a per-tenant advisory lock, so two workers
  recording for one tenant at once cannot both decide nothing needs evicting.
* **Age bound** — ages are measured on the database's clock (hosts' clocks may disagree): a
  recording older than ``max_age_s`` is never restored, and the next prune deletes it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from ..core.errors import StoreError
from ..core.messages import Message
from ..store.pg import _NOW, PgStore
from ..store.shared import Closing
from .memory import Bounds, Decoded, fitting

__all__ = ["PgMemory"]

_PRUNE_EVERY = 256


class PgMemory(Closing):
    """``ReasoningMemory`` on a ``PgStore``'s connection pool (the store stays the caller's to close)."""

    def __init__(self, store: PgStore, bounds: Bounds = Bounds()) -> None:
        self.store = store
        self.bounds = bounds
        self.path = store.url
        self._decoded = Decoded()
        self._lock = threading.Lock()
        self._writes = 0
        self._closed = False

    def _check(self) -> None:
        if self._closed:
            raise StoreError(f"the proxy memory in {self.store.url} is closed")

    def recall(self, tenant: str, keys: Sequence[str]) -> dict[str, Message]:
        if not keys:
            return {}
        self._check()
        rows = self.store._read(f"SELECT key, message FROM proxy_memory WHERE tenant = %s AND key = ANY(%s)"
                                f" AND created >= {_NOW} - %s", (tenant, list(keys), self.bounds.max_age_s))
        return self._decoded.rows(rows)

    def remember(self, tenant: str, key: str, message: Message) -> None:
        self._check()
        data = fitting(message, self.bounds)
        with self.store._write("record in the proxy memory") as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("hermes-proxy-memory\x1f" + tenant,))
            cur.execute(f"INSERT INTO proxy_memory (tenant, key, message, size, created)"
                        f" VALUES (%s, %s, %s, %s, {_NOW}) ON CONFLICT (tenant, key) DO UPDATE SET"
                        f" message = excluded.message, size = excluded.size, created = excluded.created",
                        (tenant, key, data, len(data)))
            cur.execute("SELECT COALESCE(SUM(size), 0) FROM proxy_memory WHERE tenant = %s", (tenant,))
            if int(cur.fetchone()[0]) > self.bounds.max_bytes:
                cur.execute("DELETE FROM proxy_memory WHERE tenant = %(t)s AND key IN (SELECT key FROM ("
                            " SELECT key, SUM(size) OVER (ORDER BY created DESC, key) AS running"
                            " FROM proxy_memory WHERE tenant = %(t)s) AS r WHERE running > %(max)s)",
                            {"t": tenant, "max": self.bounds.max_bytes})
        with self._lock:
            self._writes += 1
            due = self._writes % _PRUNE_EVERY == 1
        if due:
            self.prune()

    def prune(self) -> int:
        self._check()
        with self.store._write("prune the proxy memory") as cur:
            cur.execute(f"DELETE FROM proxy_memory WHERE created < {_NOW} - %s", (self.bounds.max_age_s,))
            return int(cur.rowcount or 0)

    def stats(self, tenant: str) -> tuple[int, int]:
        """(recordings, bytes) held for ``tenant``."""
        self._check()
        rows: list[Any] = self.store._read(
            "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM proxy_memory WHERE tenant = %s", (tenant,))
        return int(rows[0][0]), int(rows[0][1])

    def close(self) -> None:
        """Stop using the store; the pool is the store's and closes with it."""
        self._closed = True
