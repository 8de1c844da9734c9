"""The session lease a CLI turn holds: the row lock in ``session_locks`` that the gateway takes.

A turn is a sequence of steps, each committed on its own; two turns on one session running at
once (``hermes chat -r ID`` in a terminal while a gateway serves the same session) would
interleave their steps. So every ``hermes chat`` turn, like every gateway turn, holds the
session's lease (``Store.acquire_lock``) from its first request to its last commit: it waits
for a running turn up to ``wait_s``, renews the lease every ``ttl_s / 3`` while it runs (a
crashed process's lease expires after ``ttl_s``), and always releases it.

The gateway's ``SessionLocks`` adds an in-process asyncio queue in front of the same row lock;
this module is the synchronous form for one-turn-at-a-time callers.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .errors import StoreError
from .logs import log_event

__all__ = ["LEASE_TTL_S", "LEASE_WAIT_S", "session_lease"]

LEASE_TTL_S = 30.0
LEASE_WAIT_S = 30.0
_POLL_MAX_S = 0.05


@contextmanager
def session_lease(store: Any, session_id: str, *, ttl_s: float = LEASE_TTL_S,
                  wait_s: float = LEASE_WAIT_S) -> Iterator[str]:
    """Hold ``session_id``'s turn lease for the ``with`` block; ``StoreError`` if it stays busy."""
    owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}:cli"
    deadline = time.monotonic() + wait_s
    delay = 0.002
    while not store.acquire_lock(session_id, owner, ttl_s):
        left = deadline - time.monotonic()
        if left <= 0:
            raise StoreError(f"session {session_id} is busy: another turn is running on it",
                             hint="a gateway or another `hermes chat` holds it; try again when it finishes")
        time.sleep(min(delay * (0.5 + secrets.randbelow(1000) / 1000), left))
        delay = min(delay * 2, _POLL_MAX_S)
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(ttl_s / 3):
            if not store.acquire_lock(session_id, owner, ttl_s):  # only if this process stalled past the TTL
                log_event("cli_lock_lost", session=session_id, owner=owner)

    renewer = threading.Thread(target=renew, name="hermes-lease", daemon=True)
    renewer.start()
    try:
        yield owner
    finally:
        stop.set()
        renewer.join()
        store.release_lock(session_id, owner)
