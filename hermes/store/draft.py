"""A new session held in memory until its first step commits.

``hermes chat`` opens a session before it knows whether the first request will work: the key
may be missing, the host unreachable, the turn cancelled. :class:`Drafting` is the store as the
chat sees it while that session is a draft: its id answers reads (no messages, the route and
title it will get), takes rejection lessons and a route switch in memory, and leases it
without a row. Its first ``append_turn`` writes the session row, the turn's lease and the step
in one transaction (``append_turn(..., create=...)``); from then on it is an ordinary stored
session. A turn that never got a step leaves nothing in the store.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..core.errors import StoreError
from .db import merge_patch
from .wrapper import StoreWrapper

if TYPE_CHECKING:
    from ..core.messages import Message, RouteKey
    from . import SessionStore
    from .lease import Lease
    from .records import NewSession, SessionInfo
    from .runs import RunRow

__all__ = ["DRAFT_FENCE", "Drafting", "new_session", "title_of"]

DRAFT_FENCE = 1
"""The fencing token of a draft's lease: the first any session gets (its counter starts at 0)."""


def new_session(*, provider: str, model: str, base_url: str = "", title: str = "") -> NewSession:
    """A draft's row, with a fresh 12-hex id (a taken one is refused when it commits)."""
    from .records import NewSession

    return NewSession(secrets.token_hex(6), provider, model, base_url, title, created=time.time())


def title_of(messages: Sequence[Message]) -> str:
    """A title for a session that was given none: the first line of its first user message."""
    for m in messages:
        if m.role == "user" and m.text.strip():
            return m.text.strip().splitlines()[0][:60]
    return ""


class Drafting(StoreWrapper):
    """``inner`` with one session, ``draft``, not stored yet (see the module doc)."""

    def __init__(self, inner: SessionStore, draft: NewSession) -> None:
        super().__init__(inner)
        self.draft: NewSession | None = draft
        self._owner: str | None = None
        self._ttl_s = draft.lease_ttl_s

    def pending(self, session_id: str) -> bool:
        """True while ``session_id`` is this draft and nothing of it is stored."""
        return self.draft is not None and self.draft.id == session_id

    def _info(self, d: NewSession) -> SessionInfo:
        from .records import SessionInfo

        return SessionInfo(d.id, d.created, d.created, d.title, d.provider, d.model, d.base_url, None, None, 0, 0)

    # sessions
    def get_session(self, ref: str) -> SessionInfo:
        if self.draft is not None and ref == self.draft.id:
            return self._info(self.draft)
        return self.inner.get_session(ref)

    def update_session(self, session_id: str, *, title: str | None = None, provider: str | None = None,
                       model: str | None = None, base_url: str | None = None) -> None:
        if self.draft is None or session_id != self.draft.id:
            return self.inner.update_session(session_id, title=title, provider=provider, model=model,
                                             base_url=base_url)
        d = self.draft
        self.draft = replace(d, title=d.title if title is None else title,
                             provider=d.provider if provider is None else provider,
                             model=d.model if model is None else model,
                             base_url=d.base_url if base_url is None else base_url)
        return None

    def delete_session(self, session_id: str) -> None:
        if self.pending(session_id):
            self.draft = None
            return
        self.inner.delete_session(session_id)

    # history
    def load(self, session_id: str) -> list[Message]:
        return [] if self.pending(session_id) else self.inner.load(session_id)

    def load_tail(self, session_id: str, start: int) -> list[Message]:
        return [] if self.pending(session_id) else self.inner.load_tail(session_id, start)

    def append_turn(self, session_id: str, messages: Sequence[Message], *, route_key: RouteKey | None = None,
                    usage: Mapping[str, Any] | None = None, fence: Lease | None = None,
                    create: NewSession | None = None) -> int:
        d = self.draft
        if d is None or session_id != d.id:
            return self.inner.append_turn(session_id, messages, route_key=route_key, usage=usage, fence=fence,
                                          create=create)
        row = replace(d, title=d.title or title_of(messages), lease_ttl_s=self._ttl_s)
        turn = self.inner.append_turn(session_id, messages, route_key=route_key, usage=usage, fence=fence,
                                      create=row)
        self.draft = None  # stored: from here on the inner store answers for it
        return turn

    def branch(self, session_id: str, *, upto_seq: int | None = None, title: str = "") -> str:
        if self.pending(session_id):
            raise StoreError(f"session {session_id} has no messages yet: there is nothing to branch",
                             hint="send a message first")
        return self.inner.branch(session_id, upto_seq=upto_seq, title=title)

    def export_jsonl(self, session_id: str) -> Iterator[bytes]:
        return iter(()) if self.pending(session_id) else self.inner.export_jsonl(session_id)

    # kept runs
    def load_runs(self, session_id: str, context: bytes) -> list[RunRow]:
        return [] if self.pending(session_id) else self.inner.load_runs(session_id, context)

    def save_run(self, session_id: str, context: bytes, row: RunRow) -> bool:
        return False if self.pending(session_id) else self.inner.save_run(session_id, context, row)

    # per-session learned config
    def model_config(self, session_id: str) -> dict[str, Any]:
        if self.draft is not None and session_id == self.draft.id:
            return dict(self.draft.model_config)
        return self.inner.model_config(session_id)

    def patch_model_config(self, session_id: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        if self.draft is None or session_id != self.draft.id:
            return self.inner.patch_model_config(session_id, patch)
        merged = dict(merge_patch(self.draft.model_config, patch))
        self.draft = replace(self.draft, model_config=merged)
        return dict(merged)

    # session leases: a draft's is held in memory and written with its first step
    def acquire_lock(self, session_id: str, owner: str, ttl_s: float) -> bool:
        return self.acquire_lease(session_id, owner, ttl_s) is not None

    def acquire_lease(self, session_id: str, owner: str, ttl_s: float) -> int | None:
        if not self.pending(session_id):
            return self.inner.acquire_lease(session_id, owner, ttl_s)
        if self._owner not in (None, owner):
            return None
        self._owner, self._ttl_s = owner, ttl_s
        return DRAFT_FENCE

    def lease_session(self, session_id: str, owner: str, ttl_s: float) -> tuple[int, SessionInfo] | None:
        if self.draft is None or session_id != self.draft.id:
            return self.inner.lease_session(session_id, owner, ttl_s)
        fence = self.acquire_lease(session_id, owner, ttl_s)
        return None if fence is None else (fence, self._info(self.draft))

    def lease_holder(self, session_id: str) -> str | None:
        return self._owner if self.pending(session_id) else self.inner.lease_holder(session_id)

    def release_lock(self, session_id: str, owner: str) -> bool:
        if not self.pending(session_id):
            return self.inner.release_lock(session_id, owner)
        held = self._owner == owner
        if held:
            self._owner = None
        return held
