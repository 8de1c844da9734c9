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
someone else's lock and a release after expiry deletes nothing. The turn commits its steps
through ``Fenced(store, lease)``, so a worker whose lease was taken over cannot commit
afterwards.

Two ways to hold a session:

* ``run(session_id, attempt, limiter=...)`` — a turn. The local lock is taken on the event
  loop; then *one* worker-thread call (``anyio.to_thread``) does everything else: ``attempt(take)`` runs its checks, calls
  ``take()`` (one lease transaction, which also reads the session's row), runs the turn and releases the lease (one more) before
  it returns. Only a lease another process holds costs more: ``take`` says so, the call
  returns, and the loop polls again after a backoff without holding a thread.
* ``async with hold(session_id) as lease`` — the same lease around async code (``/compress``).

Leases taken by ``run`` are renewed by one task per process (every ``ttl/3``, all held
leases), not a task per turn; a renewal and a release are ordered by a lock, so a renewal can
never bring back a lease its turn has already released.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import secrets
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import anyio
import anyio.to_thread

from ..store.lease import Lease
from ..store.requestlog import log_event

if TYPE_CHECKING:
    from ..store import SessionInfo, SessionStore

__all__ = ["Busy", "LeaseHeld", "SessionLocks", "Take", "run_to_end"]

T = TypeVar("T")
Take = Callable[[], tuple[Lease, "SessionInfo"]]
"""Take the session's store lease now, on the worker thread, with the session's row read in
the same transaction (held by another process: the attempt is abandoned before it wrote
anything and ``run`` polls again)."""


async def run_to_end(fn: Callable[[], T], limiter: anyio.CapacityLimiter) -> T:
    """``fn()`` on one of anyio's worker threads (at most ``limiter``'s tokens at once), awaited
    to its end: a caller cancelled meanwhile is cancelled only once ``fn`` has returned (anyio
    shields its own cancel scopes, not a plain ``Task.cancel``). A turn needs that: the
    session's local lock stays held until the thread has released the lease."""
    call = asyncio.ensure_future(anyio.to_thread.run_sync(fn, limiter=limiter))
    try:
        return await asyncio.shield(call)
    except asyncio.CancelledError:
        while not call.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({call})
        raise


class LeaseHeld(BaseException):
    """``take`` found the lease held elsewhere: give the thread back, poll again later. A
    ``BaseException`` so no ``except Exception`` in an attempt can swallow it."""


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
        self._held: dict[str, str] = {}
        """owner -> session id of each lease ``run`` holds now (what the renewer renews)."""
        self._held_lock = threading.Lock()
        self._renewer: asyncio.Task[None] | None = None

    @asynccontextmanager
    async def _local_turn(self, session_id: str, deadline: float) -> AsyncIterator[None]:
        """This process's FIFO queue for the session (no database): one turn at a time."""
        local = self._local.setdefault(session_id, _Local())
        local.users += 1
        try:
            try:
                if local.lock.locked():  # wait_for costs a task: only when there is a wait
                    await asyncio.wait_for(local.lock.acquire(), timeout=max(0.0, deadline - time.monotonic()))
                else:
                    await local.lock.acquire()
            except TimeoutError:
                raise Busy(session_id) from None
            try:
                yield
            finally:
                local.lock.release()
        finally:
            local.users -= 1
            if local.users == 0:
                self._local.pop(session_id, None)

    async def run(self, session_id: str, attempt: Callable[[Take], T], *, limiter: anyio.CapacityLimiter,
                  wait_s: float | None = None) -> T:
        """``attempt(take)`` on a worker thread (``run_to_end``; ``limiter`` bounds the turns
        running at once), in this process's queue for the session: it must call ``take()``
        before it writes anything; the lease it gets is released when ``attempt`` returns or
        raises (still on its thread). Busy after ``wait_s``."""
        deadline = time.monotonic() + (self.wait_s if wait_s is None else wait_s)
        if self._renewer is None or self._renewer.done():
            self._renewer = asyncio.create_task(self._renew_held())
        delay = self.poll_min_s
        async with self._local_turn(session_id, deadline):
            while True:
                try:
                    return await run_to_end(lambda: self.attempt(session_id, attempt), limiter)
                except LeaseHeld:
                    pass
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Busy(session_id)
                await asyncio.sleep(min(delay * (0.5 + secrets.randbelow(1000) / 1000), left))
                delay = min(delay * 2, self.poll_max_s)

    def attempt(self, session_id: str, attempt: Callable[[Take], T]) -> T:
        """``attempt(take)`` once, on the calling thread; ``take()`` raises ``LeaseHeld`` when
        another owner holds the session's lease. The lease it gets is released when
        ``attempt`` returns or raises, and renewed meanwhile by ``run``'s renewer."""
        held: list[Lease] = []

        def take() -> tuple[Lease, SessionInfo]:
            owner = f"{self.prefix}:{next(self._seq)}"
            got = self.store.lease_session(session_id, owner, self.ttl_s)
            if got is None:
                raise LeaseHeld
            lease = Lease(session_id, owner, int(got[0]))
            with self._held_lock:
                self._held[owner] = session_id
            held.append(lease)
            return lease, got[1]

        try:
            return attempt(take)
        finally:
            for lease in held:
                with self._held_lock:  # after this no renewal of it can start
                    self._held.pop(lease.owner, None)
                self.store.release_lock(session_id, lease.owner)

    async def _renew_held(self) -> None:
        """Renew every lease ``run`` holds, every ``ttl/3``; the held-lock is kept across each
        renewal so a release (which takes it first) never races one."""

        def renew_all() -> None:
            with self._held_lock:
                for owner, session_id in list(self._held.items()):
                    try:
                        ok = self.store.acquire_lock(session_id, owner, self.ttl_s)
                    except Exception as e:  # a store hiccup: the next round tries again
                        ok = False
                        log_event("gateway_lock_renew_failed", session=session_id, error=type(e).__name__)
                    if not ok:  # only possible if this process stalled past the TTL
                        log_event("gateway_lock_lost", session=session_id, owner=owner)

        while True:
            await asyncio.sleep(self.ttl_s / 3)
            if self._held:
                await anyio.to_thread.run_sync(renew_all)

    def close(self) -> None:
        """Stop the renewal task (at shutdown, once no turn runs)."""
        if self._renewer is not None:
            self._renewer.cancel()

    @asynccontextmanager
    async def hold(self, session_id: str, *, wait_s: float | None = None) -> AsyncIterator[Lease]:
        """Wait (up to ``wait_s``) for the session, yield the lease, always release."""
        deadline = time.monotonic() + (self.wait_s if wait_s is None else wait_s)
        async with self._local_turn(session_id, deadline):
            owner = f"{self.prefix}:{next(self._seq)}"
            fence = await self._acquire(session_id, owner, deadline)
            renewer = asyncio.create_task(self._renew(session_id, owner))
            try:
                yield Lease(session_id, owner, fence)
            finally:
                renewer.cancel()
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(self.store.release_lock, session_id, owner)

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
