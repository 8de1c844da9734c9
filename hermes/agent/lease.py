"""The session lease a CLI turn holds: a thin name over :func:`hermes.store.lease.hold_lease`.

A turn is a sequence of steps, each committed on its own; two turns on one session running at
once (``hermes chat -r ID`` in a terminal while a gateway serves the same session) would
interleave their steps. So every CLI turn, REPL ``/compress`` and ``hermes sessions compress``
holds the session's lease — the same fenced lease gateway workers take (``session_locks`` row
plus fencing token, on SQLite and PostgreSQL alike) — from its first request to its last
commit. It waits for a running turn up to ``wait_s``, renews every ``ttl_s / 3``, and always
releases it. Steps must be committed through ``Fenced(store, lease)`` so a lease lost mid-turn
refuses the write (``leased_turn`` in :mod:`hermes.cli._common` does that for agent turns).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..store.lease import Fenced, Lease, hold_lease

if TYPE_CHECKING:
    from ..store import SessionStore

__all__ = ["LEASE_TTL_S", "LEASE_WAIT_S", "Fenced", "Lease", "session_lease"]

LEASE_TTL_S = 30.0
LEASE_WAIT_S = 10.0


@contextmanager
def session_lease(store: SessionStore, session_id: str, *, ttl_s: float = LEASE_TTL_S,
                  wait_s: float = LEASE_WAIT_S) -> Iterator[Lease]:
    """Hold ``session_id``'s fenced lease for the ``with`` block; ``LeaseBusy`` if it stays busy."""
    with hold_lease(store, session_id, ttl_s=ttl_s, wait_s=wait_s, kind="cli") as lease:
        yield lease
