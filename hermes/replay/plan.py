"""What a replay plan is made of: settings, lessons, decisions, planned messages, the plan.

A plan says *what* goes where in neutral terms — which parts stay, which carrier fields an
assistant message carries, which signature belongs to which call or text turn, which turns
merge or need a placeholder — and *why*, as ``Decision`` records that ``hermes replay`` prints.
Where in a wire's JSON a signature lands is the wire's business, never the plan's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..messages import Part
from ..resolve import Resolved
from ..routes import GEMINI_SKIP_SIGNATURE
from .runs import Run

__all__ = [
    "DETAILS",
    "GEMINI_SKIP_SIGNATURE",
    "PAD",
    "Action",
    "Decision",
    "Learned",
    "PlannedMessage",
    "ReplayPlan",
    "Settings",
]

PAD = " "
"""Must-echo placeholder: a single space (DeepSeek rejects ``""``)."""
DETAILS = "openrouter.details"
Action = Literal["native", "field", "text", "drop", "pad", "merge", "insert"]
"""Per part: ``native`` (a block as stored), ``field`` (a carrier field), ``text`` (readable text
only), ``drop``, ``pad`` (a must-echo or validator placeholder). Per message, for the wire's
turn structure: ``merge`` (joins the previous turn) and ``insert`` (a placeholder user turn
goes before — or, with field ``after``, after — this message)."""


@dataclass(frozen=True, slots=True)
class Learned:
    """What this (provider, host, model) has taught us; see ``rejections``."""

    dropped: frozenset[str] = frozenset()
    """Carrier fields the route rejected as unknown."""
    suppressed: frozenset[str] = frozenset()
    """``blob_hash`` of signed blobs the route rejected."""
    echo: bool = False
    """The route refused a tool turn without ``reasoning_content``: treat it as must-echo."""


@dataclass(frozen=True, slots=True)
class Settings:
    thinking: bool = True
    effort: str | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    part: int | None
    """Index into the stored message's parts; None for a message-level decision."""
    action: Action
    fields: tuple[str, ...]
    reason: str


@dataclass(slots=True)
class PlannedMessage:
    """One stored message as the wire must render it. Read-only by contract: planned messages
    are cached and shared between requests. Not ``frozen``: a cold build constructs one per
    stored message."""

    index: int
    """Position in the stored history."""
    role: str
    parts: tuple[Part, ...]
    """What the wire renders, in order; reasoning only where it goes as a native block."""
    fields: Mapping[str, Any] = field(default_factory=dict)
    """Chat-completions assistant carrier fields, in render order."""
    tool_signatures: Mapping[str, str] = field(default_factory=dict)
    """call id → the signature that goes with that call (the wire knows where it goes)."""
    thought_signature: str | None = None
    """The signature that goes with the message's text (the wire knows where it goes)."""
    decisions: tuple[Decision, ...] = ()
    joins: bool = field(default=False, kw_only=True)
    """Structure: this message joins the previous wire turn (same side, alternation required)."""
    placeholder: bool = field(default=False, kw_only=True)
    """Structure: a placeholder user turn goes before this message (alternation required)."""
    blobs: tuple[tuple[str, str, str], ...] = field(default=(), kw_only=True)
    """(field, blob kind, stored blob) of signed blobs merged into ``fields`` (chat routes'
    ``reasoning_details``), for the attempt record a rejection is judged against (hashed only
    there, when a request fails)."""
    key: tuple[Any, ...] | None = field(default=None, kw_only=True, compare=False, repr=False)
    """What this result was computed from, as a value (``replay.memo``): set when a
    ``BuildMemo`` planned it, so its render and cost are memoised under the same key."""


@dataclass(frozen=True, slots=True)
class ReplayPlan:
    target: Resolved
    messages: tuple[PlannedMessage, ...]
    request_fields: Mapping[str, Any]
    """Top-level body fields from the row: keep-thinking switches and effort."""
    thinking: bool
    notes: tuple[str, ...] = ()
    placeholder_after: bool = field(default=False, kw_only=True)
    """Structure: a placeholder user turn ends the conversation (it must not end on the model)."""
    kept: tuple[Run, ...] = field(default=(), kw_only=True)
    """Kept runs (``replay.runs``) that stand for the first messages of the window, already
    built: ``messages`` are the ones after them. Only a plan built with a ``BuildMemo``."""

    @property
    def first(self) -> int:
        """Index of the first stored message the request sends (the window start)."""
        return self.kept[0].first if self.kept else self.messages[0].index if self.messages else 0
