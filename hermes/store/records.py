"""Plain records the store hands out: what a session row and a learned capability look like.

They are frozen value objects, not live handles, so the CLI and gateway can pass them around
without holding a connection, and a PostgreSQL store can return the same shapes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Capability", "NewSession", "SessionInfo"]


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One row of ``sessions`` plus its message and turn counts."""

    id: str
    created: float
    """Unix seconds."""
    updated: float
    """Unix seconds of the last appended turn or metadata change."""
    title: str
    provider: str
    model: str
    base_url: str
    """Explicit base URL override; ``""`` means the route's default."""
    parent_id: str | None
    """The session this one was branched from (``None`` once the parent is deleted)."""
    branch_of_seq: int | None
    """Last parent message seq copied into this branch."""
    message_count: int
    turn_count: int


@dataclass(frozen=True, slots=True)
class Capability:
    """One learned fact of the global ledger, keyed by (provider, host, model, kind)."""

    provider: str
    host: str
    model: str
    kind: str
    """E.g. ``rejected_carriers``, ``suppressed_blobs``, ``token_factor``."""
    value: Any
    """JSON value; list values grow as sets when the same fact is learned again."""
    evidence: dict[str, Any]
    """Why it was learned (status, error excerpt, session id ...), from the last change."""
    created: float
    updated: float


@dataclass(frozen=True, slots=True)
class NewSession:
    """A session row to write with its first step (``append_turn(..., create=...)``), so a turn
    that never got a step leaves nothing behind (``hermes.store.draft``)."""

    id: str
    provider: str
    model: str
    base_url: str = ""
    title: str = ""
    model_config: dict[str, Any] = field(default_factory=dict)
    created: float = 0.0
    """Unix seconds when the session was opened (not when its first step committed)."""
    lease_ttl_s: float = 30.0
    """Expiry of the lease row written with it when the step is fenced."""
