"""A store that passes every call on to another: the base of the store views.

:class:`~hermes.store.lease.Fenced` (steps carry a lease) and
:class:`~hermes.store.draft.Drafting` (a session held in memory until its first step) each
change a few calls of ``SessionStore`` and answer the rest from the store they wrap. Each call
is a method here, spelled as the protocol spells it, so mypy checks a view against the protocol
and a method added to it must be added here too; nothing is forwarded by attribute lookup.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .shared import Closing

if TYPE_CHECKING:
    from ..core.messages import Message, RouteKey
    from . import SessionStore
    from .lease import Lease
    from .records import Capability, NewSession, SessionInfo
    from .runs import RunRow

__all__ = ["StoreWrapper"]


class StoreWrapper(Closing):
    """``inner`` as it is; a subclass overrides what its view changes."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner

    # plumbing
    def close(self) -> None:
        self.inner.close()

    # sessions
    def create_session(self, *, provider: str, model: str, base_url: str = "", title: str = "",
                       model_config: Mapping[str, Any] | None = None) -> str:
        return self.inner.create_session(provider=provider, model=model, base_url=base_url, title=title,
                                         model_config=model_config)

    def get_session(self, ref: str) -> SessionInfo:
        return self.inner.get_session(ref)

    def list_sessions(self, limit: int = 20, *, include_empty: bool = True) -> list[SessionInfo]:
        return self.inner.list_sessions(limit, include_empty=include_empty)

    def latest_session(self) -> SessionInfo | None:
        return self.inner.latest_session()

    def update_session(self, session_id: str, *, title: str | None = None, provider: str | None = None,
                       model: str | None = None, base_url: str | None = None) -> None:
        self.inner.update_session(session_id, title=title, provider=provider, model=model, base_url=base_url)

    def delete_session(self, session_id: str) -> None:
        self.inner.delete_session(session_id)

    # history
    def load(self, session_id: str) -> list[Message]:
        return self.inner.load(session_id)

    def load_tail(self, session_id: str, start: int) -> list[Message]:
        return self.inner.load_tail(session_id, start)

    def append_turn(self, session_id: str, messages: Sequence[Message], *, route_key: RouteKey | None = None,
                    usage: Mapping[str, Any] | None = None, fence: Lease | None = None,
                    create: NewSession | None = None) -> int:
        return self.inner.append_turn(session_id, messages, route_key=route_key, usage=usage, fence=fence,
                                      create=create)

    def branch(self, session_id: str, *, upto_seq: int | None = None, title: str = "") -> str:
        return self.inner.branch(session_id, upto_seq=upto_seq, title=title)

    def export_jsonl(self, session_id: str) -> Iterator[bytes]:
        return self.inner.export_jsonl(session_id)

    # kept runs
    def load_runs(self, session_id: str, context: bytes) -> list[RunRow]:
        return self.inner.load_runs(session_id, context)

    def save_run(self, session_id: str, context: bytes, row: RunRow) -> bool:
        return self.inner.save_run(session_id, context, row)

    # per-session learned config
    def model_config(self, session_id: str) -> dict[str, Any]:
        return self.inner.model_config(session_id)

    def patch_model_config(self, session_id: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        return self.inner.patch_model_config(session_id, patch)

    # global capability ledger
    def learn(self, provider: str, host: str, model: str, kind: str, value: Any,
              evidence: Mapping[str, Any]) -> bool:
        return self.inner.learn(provider, host, model, kind, value, evidence)

    def capabilities(self, provider: str, host: str, model: str) -> dict[str, Any]:
        return self.inner.capabilities(provider, host, model)

    def list_capabilities(self) -> list[Capability]:
        return self.inner.list_capabilities()

    def forget(self, provider: str | None = None, host: str | None = None, model: str | None = None) -> int:
        return self.inner.forget(provider, host, model)

    # session leases
    def acquire_lock(self, session_id: str, owner: str, ttl_s: float) -> bool:
        return self.inner.acquire_lock(session_id, owner, ttl_s)

    def acquire_lease(self, session_id: str, owner: str, ttl_s: float) -> int | None:
        return self.inner.acquire_lease(session_id, owner, ttl_s)

    def lease_session(self, session_id: str, owner: str, ttl_s: float) -> tuple[int, SessionInfo] | None:
        return self.inner.lease_session(session_id, owner, ttl_s)

    def lease_holder(self, session_id: str) -> str | None:
        return self.inner.lease_holder(session_id)

    def release_lock(self, session_id: str, owner: str) -> bool:
        return self.inner.release_lock(session_id, owner)
