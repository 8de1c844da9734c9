"""Planning for the native Gemini wire: thoughts go back as signatures, never as text.

Each call gets its own signature, the text turn its signature; a call with no signature of its
own gets Gemini's documented validator skip (not on a model that checks none: Gemma).
"""

from __future__ import annotations

from ..core.messages import Message, Part, Reasoning, ToolCall
from ..routing.resolve import Resolved
from .plan import GEMINI_SKIP_SIGNATURE, Decision, Learned, PlannedMessage
from .sendable import native_owned

__all__ = ["plan_gemini"]


def plan_gemini(index: int, m: Message, target: Resolved, learned: Learned, in_loop: bool) -> PlannedMessage:
    """Gemini rehydrates thoughts from signatures: send signatures, not thought text."""
    parts: list[Part] = []
    decisions: list[Decision] = []
    sigs: dict[str, str] = {}
    thought_sig: str | None = None
    for i, p in enumerate(m.parts):
        if not isinstance(p, Reasoning):
            parts.append(p)
            continue
        if p.native:
            owned, refusal = native_owned(p, target, learned)
            if owned:
                n = p.native
                sigs.update(dict(n.tool_signatures))
                thought_sig = n.thought_signature or thought_sig
                decisions.append(Decision(i, "native", tuple(owned), "own thought signatures"))
                continue
            decisions.append(Decision(i, "drop", (), refusal or "not owned"))
        else:
            decisions.append(Decision(i, "drop", (), "Gemini takes thoughts back as signatures only"))
    calls = [p for p in parts if isinstance(p, ToolCall)]
    if calls and not any(c.id in sigs for c in calls) and not target.profile.own_signatures:
        sigs[calls[0].id] = GEMINI_SKIP_SIGNATURE
        decisions.append(Decision(None, "pad", ("thoughtSignature",),
                                  "call has no signature of its own: documented validator skip"))
    sigs = {c.id: sigs[c.id] for c in calls if c.id in sigs}
    return PlannedMessage(index, m.role, tuple(parts), {}, sigs, thought_sig, tuple(decisions))
