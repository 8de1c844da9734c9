"""Session leases with fencing tokens: one writer per session across threads, processes and hosts.

A lease is a row in ``session_locks`` (owner, expiry, fence) taken inside a store transaction.
Every *new* holder gets the session's counter ``sessions.lease_fence`` plus one; renewing keeps
it. A step commit made under a lease (``append_turn(..., fence=lease)``) re-reads the lease row
in the commit's own transaction and is refused with :class:`LeaseLost` unless the row still
names this owner and fence. So a worker that was paused or cut off past its TTL, whose lease
another worker has since taken, cannot write a step afterwards — the check and the write are
one transaction, not a check-then-act race.

Users of the store take a lease around a whole user turn: the gateway through
``hermes.gateway.locks.SessionLocks`` (async, polls while waiting), the CLI through
:func:`hold_lease` (a renewing thread). :class:`Fenced` is the store view the agent is given
while a lease is held, so every step it commits carries the lease without the agent knowing.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import StoreError
from .wrapper import StoreWrapper

if TYPE_CHECKING:
    from ..core.messages import Message, RouteKey
    from . import SessionStore
    from .records import NewSession

__all__ = ["Fenced", "Lease", "LeaseBusy", "LeaseLost", "check_fence", "dead_local_owner", "hold_lease",
           "owner_prefix"]


@dataclass(frozen=True, slots=True)
class Lease:
    """The right to commit steps on ``session_id`` while ``fence`` is its current token."""

    session_id: str
    owner: str
    fence: int


class LeaseLost(StoreError):
    """A step was offered under a lease that is no longer the session's current one."""


class LeaseBusy(StoreError):
    """Another process held the session's lease for longer than we were willing to wait."""


def check_fence(lease: Lease, row: Any) -> None:
    """Raise :class:`LeaseLost` unless ``row`` (the session's ``(owner, fence)`` lock row, read
    inside the committing transaction, or ``None``) is still ``lease``."""
    if row is None or (row[0], int(row[1])) != (lease.owner, lease.fence):
        now = "no lease" if row is None else f"fence {int(row[1])}"
        raise LeaseLost(
            f"session {lease.session_id}: this worker's lease (fence {lease.fence}) is no longer"
            f" current ({now}); the step was not stored",
            hint="another worker took the session over after this one stalled past the lock TTL",
        )


def owner_prefix(kind: str) -> str:
    """``kind:host:pid:nonce`` — unique per process, readable in ``session_locks``."""
    return f"{kind}:{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class Fenced(StoreWrapper):
    """A view of ``store`` whose ``append_turn`` on the leased session carries the lease.

    Everything else passes through unchanged (``StoreWrapper``), so code written against
    ``SessionStore`` (the agent, compaction, rejection memory) runs fenced without knowing
    about leases.
    """

    def __init__(self, store: SessionStore, lease: Lease) -> None:
        super().__init__(store)
        self.lease = lease

    def append_turn(self, session_id: str, messages: Sequence[Message], *, route_key: RouteKey | None = None,
                    usage: Mapping[str, Any] | None = None, fence: Lease | None = None,
                    create: NewSession | None = None) -> int:
        if session_id == self.lease.session_id and fence is None:
            fence = self.lease
        return self.inner.append_turn(session_id, messages, route_key=route_key, usage=usage, fence=fence,
                                      create=create)


def dead_local_owner(owner: str) -> bool:
    """True if ``owner`` (``…:host:pid:…``, as :func:`owner_prefix` and the gateway write it)
    names a process on this host that no longer exists — a killed ``hermes chat`` whose lease
    need not be waited out. A reused pid looks alive: then the TTL decides, as across hosts."""
    parts = owner.split(":")
    here = socket.gethostname()
    for i, part in enumerate(parts[:-1]):
        if part == here and parts[i + 1].isdigit():
            try:
                os.kill(int(parts[i + 1]), 0)
            except ProcessLookupError:
                return True
            except OSError:
                return False
            return False
    return False


@contextmanager
def hold_lease(store: SessionStore, session_id: str, *, ttl_s: float = 30.0, wait_s: float = 10.0,
               kind: str = "cli") -> Iterator[Lease]:
    """Take ``session_id``'s lease (waiting up to ``wait_s``), renew it every ``ttl_s / 3`` on a
    daemon thread while the body runs, release it at the end. Raises :class:`LeaseBusy`.
    A lease left by a killed process on this host is broken at once instead of waited out."""
    owner = f"{owner_prefix(kind)}:1"
    deadline = time.monotonic() + wait_s
    delay = 0.005
    while (fence := store.acquire_lease(session_id, owner, ttl_s)) is None:
        holder = store.lease_holder(session_id)
        if holder is not None and dead_local_owner(holder):
            store.release_lock(session_id, holder)
            continue
        if time.monotonic() >= deadline:
            raise LeaseBusy(f"session {session_id} is running a turn in another process",
                            hint="wait for it to finish, or branch the session and continue there")
        time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, 0.2)
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(ttl_s / 3):
            with contextlib.suppress(StoreError):  # the commit's fence check reports a lost lease
                store.acquire_lease(session_id, owner, ttl_s)

    thread = threading.Thread(target=renew, name=f"lease-{session_id}", daemon=True)
    thread.start()
    try:
        yield Lease(session_id, owner, fence)
    finally:
        stop.set()
        thread.join()
        store.release_lock(session_id, owner)
