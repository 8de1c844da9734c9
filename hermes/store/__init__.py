"""The session store: sessions, their histories, learned capabilities, session locks.

``Store`` is the SQLite implementation (``$HERMES_HOME/state.db``, WAL, 0600). Code that only
needs *a* store should type against :class:`SessionStore`, the narrow protocol a PostgreSQL
implementation for the gateway can follow: plain values in and out, no cursors, no SQL,
one method per unit of work (a turn is one call, one transaction).

Layout: ``migrations`` (the schema, as named functions), ``opening`` (create / refuse /
migrate), ``codec`` (part <-> row), ``ledger`` (capability facts), ``db`` (``Store``).
Documented in ``docs/store.md``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ..messages import Message, RouteKey
from .codec import blob_hash
from .db import Store, merge_patch
from .records import Capability, SessionInfo

__all__ = ["Capability", "SessionInfo", "SessionStore", "Store", "blob_hash", "merge_patch"]


@runtime_checkable
class SessionStore(Protocol):
    """What the rest of Hermes may ask of a store. Every method is one unit of work."""

    def close(self) -> None: ...

    # sessions
    def create_session(
        self,
        *,
        provider: str,
        model: str,
        base_url: str = "",
        title: str = "",
        model_config: Mapping[str, Any] | None = None,
    ) -> str: ...
    def get_session(self, ref: str) -> SessionInfo: ...
    def list_sessions(self, limit: int = 20) -> list[SessionInfo]: ...
    def latest_session(self) -> SessionInfo | None: ...
    def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        provider: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
    ) -> None: ...
    def delete_session(self, session_id: str) -> None: ...

    # history
    def load(self, session_id: str) -> list[Message]: ...
    def append_turn(
        self,
        session_id: str,
        messages: Sequence[Message],
        *,
        route_key: RouteKey | None = None,
        usage: Mapping[str, Any] | None = None,
    ) -> int: ...
    def branch(self, session_id: str, *, upto_seq: int | None = None, title: str = "") -> str: ...
    def export_jsonl(self, session_id: str) -> Iterator[bytes]: ...

    # per-session learned config
    def model_config(self, session_id: str) -> dict[str, Any]: ...
    def patch_model_config(self, session_id: str, patch: Mapping[str, Any]) -> dict[str, Any]: ...

    # global capability ledger
    def learn(
        self, provider: str, host: str, model: str, kind: str, value: Any, evidence: Mapping[str, Any]
    ) -> bool: ...
    def capabilities(self, provider: str, host: str, model: str) -> dict[str, Any]: ...
    def list_capabilities(self) -> list[Capability]: ...
    def forget(
        self, provider: str | None = None, host: str | None = None, model: str | None = None
    ) -> int: ...

    # gateway session locks
    def acquire_lock(self, session_id: str, owner: str, ttl_s: float) -> bool: ...
    def release_lock(self, session_id: str, owner: str) -> bool: ...
