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

from ..core.messages import Part
from ..routing.resolve import Resolved
from ..routing.routes import GEMINI_SKIP_SIGNATURE

__all__ = [
    "DETAILS",
    "GEMINI_SKIP_SIGNATURE",
    "PAD",
    "Action",
    "Decision",
    "Learned",
    "PlannedMessage",
    "ReplayPlan",
    "Run",
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
    """What this result was computed from, as a value (``hermes.builder.memo``): set when a
    ``Builder`` planned it, so its render and cost are memoised under the same key."""


@dataclass(frozen=True, slots=True)
class Run:
    """Stored messages ``first`` … ``end - 1`` as one request would carry them, already built
    (``hermes.builder.kept``)."""

    first: int
    end: int
    window: int
    """The window start the chain begins at (a run is only used after the runs before it)."""
    digests: bytes
    """The messages' digests (``Message.digest``, 16 bytes each), concatenated: the run is used
    only for exactly these message values."""
    body: bytes
    """The wire's request items for these messages (chat messages, or Anthropic turns),
    serialised and comma-separated; ``b""`` when they render nothing."""
    system: str
    """System text these messages add (a wire that sends system text beside the messages)."""
    cost: int
    """Summed raw token cost (``estimate.message_cost``) on the context's pricing basis."""
    tally: Any
    """The request-log tally of these messages (a ``logs.Tally``, read-only: read back and
    checked once, when the run is restored)."""
    opens: str | None
    """Side of the first turn the run opens (``"user"``/``"assistant"``), None if it opens none."""
    closes: str | None
    """Side of the last turn the run opens, None if it opens none."""
    renamed: Mapping[str, str]
    """Stored id → id sent, for each tool-call id of the run that the route's id rule renamed
    (``routing.toolids``): the mapping the run was built under, which a request grows to use it."""
    as_is: tuple[str, ...]
    """The run's tool-call ids sent as they are, on a route with an id rule (none on a route
    without one, where no id is ever renamed): ids a later renamed id must step around."""

    @property
    def size(self) -> int:
        return self.end - self.first


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
    """Kept runs that stand for the first messages of the window, already built: ``messages``
    are the ones after them. Only a ``Builder``'s plan has them; ``plan_replay``'s is whole."""

    @property
    def first(self) -> int:
        """Index of the first stored message the request sends (the window start)."""
        return self.kept[0].first if self.kept else self.messages[0].index if self.messages else 0
