"""Per-session turn locks that hold across threads *and* across gateway processes.

Two layers, because they solve different problems:

1. An in-process ``asyncio.Lock`` per session queues this process's requests without touching
   the database (no polling, FIFO among local waiters).
2. The store's lease (``acquire_lease``: owner + expiry + fencing token in ``session_locks``,
   taken in one transaction holding the session's write lock) excludes other processes and
   hosts sharing the store (``state.db`` or PostgreSQL). It is polled
   with capped exponential backoff until the caller's deadline, and renewed every ``ttl/3``
   while the turn runs, so a crashed process's lock expires after ``ttl`` instead of wedging
   the session, while a live but slow turn keeps it.

Every owner string is unique per turn (host:pid:nonce:counter), so a renew can never extend
someone else's lock and a release after expiry deletes nothing. ``hold`` yields the
:class:`~hermes.store.lease.Lease`; the turn commits its steps through
``Fenced(store, lease)``, so a worker whose lease was taken over cannot commit afterwards.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from ..logs import log_event
from ..store.lease import Lease

if TYPE_CHECKING:
    from ..store import SessionStore

__all__ = ["Busy", "SessionLocks"]


class Busy(Exception):
    """The session stayed locked by another turn past the wait deadline."""


@dataclass
class _Local:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


class SessionLocks:
    """``async with locks.hold(session_id):`` — exclusive right to run a turn on a session."""

    def __init__(self, store: SessionStore, *, ttl_s: float = 30.0, wait_s: float = 30.0,
                 poll_min_s: float = 0.002, poll_max_s: float = 0.02) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self.wait_s = wait_s
        self.poll_min_s = poll_min_s
        self.poll_max_s = poll_max_s
        self.prefix = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._seq = itertools.count(1)
        self._local: dict[str, _Local] = {}

    @asynccontextmanager
    async def hold(self, session_id: str, *, wait_s: float | None = None) -> AsyncIterator[Lease]:
        """Wait (up to ``wait_s``) for the session, yield the lease, always release."""
        deadline = time.monotonic() + (self.wait_s if wait_s is None else wait_s)
        local = self._local.setdefault(session_id, _Local())
        local.users += 1
        try:
            try:
                await asyncio.wait_for(local.lock.acquire(), timeout=max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                raise Busy(session_id) from None
            try:
                owner = f"{self.prefix}:{next(self._seq)}"
                fence = await self._acquire(session_id, owner, deadline)
                renewer = asyncio.create_task(self._renew(session_id, owner))
                try:
                    yield Lease(session_id, owner, fence)
                finally:
                    renewer.cancel()
                    with anyio.CancelScope(shield=True):
                        await anyio.to_thread.run_sync(self.store.release_lock, session_id, owner)
            finally:
                local.lock.release()
        finally:
            local.users -= 1
            if local.users == 0:
                self._local.pop(session_id, None)

    async def _acquire(self, session_id: str, owner: str, deadline: float) -> int:
        delay = self.poll_min_s
        while True:
            fence = await anyio.to_thread.run_sync(self.store.acquire_lease, session_id, owner, self.ttl_s)
            if fence is not None:
                return int(fence)
            left = deadline - time.monotonic()
            if left <= 0:
                raise Busy(session_id)
            # jitter keeps two processes polling the same row from moving in lock-step
            await asyncio.sleep(min(delay * (0.5 + secrets.randbelow(1000) / 1000), left))
            delay = min(delay * 2, self.poll_max_s)

    async def _renew(self, session_id: str, owner: str) -> None:
        while True:
            await asyncio.sleep(self.ttl_s / 3)
            ok = await anyio.to_thread.run_sync(self.store.acquire_lock, session_id, owner, self.ttl_s)
            if not ok:  # only possible if this process stalled past the TTL
                log_event("gateway_lock_lost", session=session_id, owner=owner)
