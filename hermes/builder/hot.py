"""Hot sessions: a per-process cache of recent conversations, so a turn on an active session
loads and builds only what is new.

A long-running server (the gateway, the proxy) runs many turns on the same sessions. Without
this, every turn loads the whole history from the store and plans and renders every message
again in a fresh ``Builder`` — a cold build per turn. ``HotSessions`` keeps, per session,
the history as it was after the last turn this process ran and that conversation's
``Builder``.

Correctness rests on one store fact: a session's messages are append-only (turns are
appended, never rewritten; compaction and branching append or copy), so the session's
message count is its version. ``checkout`` compares the cached count with the count the
store reports *under the session lock*:

* equal — the cached history is the stored one: nothing is loaded, the cache is warm;
* larger in the store — another worker (or process) committed turns since: only the new
  messages are loaded (``Store.load_tail``) and appended; the cache keeps its entries;
* anything else (smaller, a recreated session, no entry) — a full load and a new cache.

So a turn committed elsewhere is never missed. The row read under the lease is the only
version trusted: ``peek`` hands out the row the last turn saw, for checks a caller makes
*before* it takes the lease (a gateway refusing a request without writing), never as proof
that the history is current. A turn that fails is not checked back in:
its entry is gone and the next turn loads from the store. Entries are taken out while a turn
runs, so two threads never share one history list or ``Builder``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.messages import Message
from . import Builder

if TYPE_CHECKING:
    from ..store import SessionStore

__all__ = ["HotSessions"]


@dataclass(slots=True)
class _Entry:
    info: Any
    """The session row (``SessionInfo``) the last turn ran on; its ``created`` tells an id
    reused by a new session from the same session."""
    history: list[Message]
    builder: Builder


class HotSessions:
    """Most recently used sessions of this process: at most ``capacity`` sessions and
    ``max_messages`` messages in all (a build cache costs a few KB per message), least
    recently used out first."""

    def __init__(self, capacity: int = 64, max_messages: int = 200_000) -> None:
        self.capacity = capacity
        self.max_messages = max_messages
        self._messages = 0
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.tails = self.misses = 0
        """Counters: warm turns, turns that loaded only another worker's new messages, cold loads."""

    def __len__(self) -> int:
        return len(self._entries)

    def checkout(self, store: SessionStore, info: Any) -> tuple[list[Message], Builder]:
        """(history, builder) for a turn on session ``info`` (a fresh ``SessionInfo`` read
        under the session lock). The entry leaves the cache until ``checkin``."""
        with self._lock:
            e = self._entries.pop(info.id, None)
            if e is not None:
                self._messages -= len(e.history)
        count = info.message_count
        if e is not None and e.info.created == info.created:
            have = len(e.history)
            if have == count:
                self.hits += 1
                return list(e.history), e.builder
            if have < count:
                tail = store.load_tail(info.id, have)
                if have + len(tail) == count:
                    self.tails += 1
                    return [*e.history, *tail], e.builder
        self.misses += 1
        return store.load(info.id), Builder()

    def checkin(self, info: Any, history: list[Message], builder: Builder) -> None:
        """Keep the session's history after a turn that committed (``history`` is what is stored)."""
        with self._lock:
            old = self._entries.pop(info.id, None)
            if old is not None:
                self._messages -= len(old.history)
            self._entries[info.id] = _Entry(info, list(history), builder)
            self._messages += len(history)
            while len(self._entries) > self.capacity or (self._messages > self.max_messages and self._entries):
                _, gone = self._entries.popitem(last=False)
                self._messages -= len(gone.history)

    def peek(self, session_id: str) -> Any:
        """The session row the last turn checked in ran on (``None``: not hot here). Possibly
        stale: for early refusals only, ``checkout`` validates against a fresh row."""
        e = self._entries.get(session_id)
        return None if e is None else e.info

    def drop(self, session_id: str) -> None:
        with self._lock:
            e = self._entries.pop(session_id, None)
            if e is not None:
                self._messages -= len(e.history)
