"""What one rejection teaches: a pure function of the error and the attempt it refused.

``classify(status, body_text, attempt)`` reads the error body (``mentions``) and the attempt
record the wire made of the refused request (``hermes.core.attempt``) — nothing else: no store, no
history, no request JSON. A carrier drop is learned only when the status is a shape-related
4xx, the error names a carrier as unknown, the attempt carried that field on an assistant
message (at the position the error gives, when it gives one; a top-level ``reasoning`` is a
different field) and nothing in the error asks for *more*. Naming ``reasoning_content`` drops
every carrier the attempt carried; naming ``reasoning`` / ``reasoning_details`` drops those
two; must-echo routes never drop ``reasoning_content``. Signature rejections suppress the
signed blobs the attempt carried, by content hash. A must-echo refusal teaches the opposite:
pad tool turns with ``reasoning_content``. Whether a lesson is *new* is decided at the edge
(``Lesson.without`` with what the store already knows, in ``ledger.recover``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.attempt import Attempt
from .vocabulary import CARRIERS, asks_echo, is_shape_status, is_signature_rejection, mentions

if TYPE_CHECKING:
    from ..replay import Learned

__all__ = ["Lesson", "classify"]

_SIGNED, _REDACTED = "anthropic.signature", "anthropic.redacted"
"""Stored kinds of Claude's signed thinking and redacted blocks (Bedrock stores them so too)."""


@dataclass(frozen=True, slots=True)
class Lesson:
    """What one rejection taught."""

    dropped: frozenset[str] = frozenset()
    suppressed: frozenset[str] = frozenset()
    echo: bool = False
    """Tool turns must carry ``reasoning_content`` on this (provider, host, model)."""
    evidence: str = ""

    def __bool__(self) -> bool:
        return bool(self.dropped or self.suppressed or self.echo)

    def without(self, known: Learned) -> Lesson:
        """Only what ``known`` does not hold yet: a known lesson is never a reason to retry."""
        return Lesson(self.dropped - known.dropped, self.suppressed - known.suppressed,
                      self.echo and not known.echo, self.evidence)


def _excerpt(body_text: str) -> str:
    return " ".join(body_text.split())[:300]


def classify(status: int, body_text: str, attempt: Attempt) -> Lesson:
    """What this error teaches about the route ``attempt`` went to — possibly nothing. Pure."""
    if not is_shape_status(status):
        return Lesson()
    if is_signature_rejection(status, body_text):
        carried = attempt.blobs()
        low = body_text.lower()
        if "redacted" in low and "signature" not in low:
            carried = {h: k for h, k in carried.items() if k == _REDACTED}
        elif "support the signature field" in low:
            carried = {h: k for h, k in carried.items() if k == _SIGNED}
        return Lesson(suppressed=frozenset(carried), evidence=_excerpt(body_text)) if carried else Lesson()
    if asks_echo(body_text):
        # only chat messages carry reasoning_content, so only there can a pad answer it
        if attempt.wire == "openai_chat" and attempt.tool_turns and not attempt.must_echo:
            return Lesson(echo=True, evidence=_excerpt(body_text))
        return Lesson()
    found, opposite = mentions(status, body_text)
    if opposite or not found:
        return Lesson()
    definite = {m.name for m in found if m.scope != "any"}
    found = [m for m in found if m.scope != "any" or m.name not in definite]  # structure wins over prose
    sent = {i: have for i, fields in attempt.fields().items() if (have := fields & set(CARRIERS))}
    anywhere = set().union(*sent.values()) if sent else set()
    named: set[str] = set()
    for m in found:
        if m.scope in ("top", "other") or m.name not in anywhere:
            continue
        if m.scope == "message" and m.index is not None and m.name not in sent.get(m.index, set()):
            continue  # points at a message that did not carry it: not our field
        if m.scope == "any" and m.name == "reasoning" and "reasoning" in attempt.top:
            continue  # could be the top-level `reasoning` parameter
        named.add(m.name)
    if attempt.must_echo:
        named.discard("reasoning_content")  # a value complaint there, never a schema one
    if not named:
        return Lesson()
    drop = set(anywhere) if "reasoning_content" in named else {"reasoning", "reasoning_details"} & anywhere
    if attempt.must_echo:
        drop.discard("reasoning_content")
    return Lesson(dropped=frozenset(drop), evidence=_excerpt(body_text)) if drop else Lesson()
