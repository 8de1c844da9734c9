"""Planning for chat-completions routes: reasoning leaves the parts and becomes carrier fields.

Exactly the row's carriers minus learned rejections; must-echo rows get the stored text or a
pad; ``reasoning_details`` and the private native record only back to their own origin. The
Gemini-compat and Copilot signatures are planned as neutral intents (``tool_signatures``,
``thought_signature``); the chat wire puts them where the row says.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import Any

import orjson

from ..core.messages import Message, Reasoning, ToolCall
from ..routing.resolve import Resolved
from .plan import DETAILS, PAD, Decision, Learned, PlannedMessage
from .sendable import blob_allowed, native_owned

__all__ = ["plan_chat"]


def _readable(parts: Sequence[tuple[int, Reasoning]]) -> str:
    texts = [p.text for _, p in parts if p.text.strip()]
    return texts[0] if len(texts) == 1 else "\n\n".join(texts)


def plan_chat(index: int, m: Message, target: Resolved, learned: Learned, in_loop: bool) -> PlannedMessage:
    route = target.route
    reasoning = [(i, p) for i, p in enumerate(m.parts) if isinstance(p, Reasoning)]
    others = tuple(p for p in m.parts if not isinstance(p, Reasoning))
    carriers = route.carriers - learned.dropped
    must_echo = route.must_echo or learned.echo
    if must_echo and not route.strict:
        carriers |= {"reasoning_content"}
    decisions: list[Decision] = []
    if route.thinking_chunks and any(fnmatchcase(target.model.lower(), g) for g in route.thinking_chunks):
        own = [(i, p) for i, p in reasoning if p.origin.provider == route.key and p.text.strip()]
        decisions += [Decision(i, "field", ("content",), "its own thinking, as a content chunk") for i, _ in own]
        decisions += [Decision(i, "drop", (), f"{route.key} takes back only its own thinking chunks")
                      for i, p in reasoning if (i, p) not in own]
        chunk = [{"type": "thinking", "thinking": [{"type": "text", "text": _readable(own)}]}] if own else []
        return PlannedMessage(index, m.role, others, {"content": chunk} if chunk else {}, decisions=tuple(decisions))
    if route.strict:
        decisions += [Decision(i, "drop", (), f"{route.key} is a strict schema: no reasoning key") for i, _ in reasoning]
        return PlannedMessage(index, m.role, others, decisions=tuple(decisions))

    text = _readable(reasoning)
    fields: dict[str, Any] = {}
    text_fields = tuple(f for f in ("reasoning_content", "reasoning") if f in carriers)
    if text and text_fields:
        for f in text_fields:
            fields[f] = text
    elif must_echo and "reasoning_content" in carriers:
        fields["reasoning_content"] = PAD
        decisions.append(Decision(None, "pad", ("reasoning_content",), f"{route.key} must echo: placeholder {PAD!r}"))

    details: list[Any] = []
    blobs: list[tuple[str, str, str]] = []
    tool_sigs: dict[str, str] = {}
    native_fields: dict[str, Any] = {}
    thought_sig: str | None = None
    for i, p in reasoning:
        sent: list[str] = [f for f in text_fields if p.text.strip() and text]
        why = []
        if p.blob_kind == DETAILS and "reasoning_details" in carriers:
            refusal = blob_allowed(p, target, learned)
            if refusal is None:
                details.extend(orjson.loads(p.blob or "[]"))
                blobs.append(("reasoning_details", DETAILS, p.blob or ""))
                sent.append("reasoning_details")
            else:
                why.append(refusal)
        elif p.blob is not None:
            why.append(blob_allowed(p, target, learned) or f"{route.key} takes no {p.blob_kind} on this wire")
        if p.native:
            owned, refusal = native_owned(p, target, learned)
            if refusal:
                why.append(refusal)
            sent += owned
            thought_sig = _lift_native(p, owned, native_fields, tool_sigs) or thought_sig
        if sent:
            reason = "; ".join(["as carried by this route", *why]) if why else "as carried by this route"
            decisions.append(Decision(i, "field", tuple(sent), reason))
        elif not p.text.strip() and p.blob is None and not p.native:
            decisions.append(Decision(i, "drop", (), "empty reasoning"))
        else:
            missing = "route reads none of its carriers" if not text_fields else "nothing sendable"
            decisions.append(Decision(i, "drop", (), "; ".join(why) or missing))
    if details:
        fields["reasoning_details"] = details
    fields.update(native_fields)
    calls = [p for p in others if isinstance(p, ToolCall)]
    if route.signature_pad and calls and not any(c.id in tool_sigs for c in calls) \
            and not target.profile.own_signatures:
        tool_sigs[calls[0].id] = route.signature_pad
        decisions.append(Decision(None, "pad", ("thought_signature",),
                                  f"call has no signature of its own: the row's signature_pad {route.signature_pad!r}"))
    return PlannedMessage(index, m.role, others, fields, tool_sigs, thought_sig, tuple(decisions),
                          blobs=tuple(blobs))


def _lift_native(p: Reasoning, owned: Sequence[str], out: dict[str, Any], tool_sigs: dict[str, str]) -> str | None:
    """Copy the owned native fields: Copilot's own carrier fields into ``out``, call signatures
    into ``tool_sigs``; returns the text turn's signature, if owned (the wire places it)."""
    n = p.native
    assert n is not None
    if "reasoning_text" in owned and n.reasoning_text:
        out["reasoning_text"] = n.reasoning_text
    if "reasoning_opaque" in owned and n.reasoning_opaque:
        out["reasoning_opaque"] = n.reasoning_opaque
    if "tool_signatures" in owned:
        tool_sigs.update(dict(n.tool_signatures))
    return n.thought_signature if "thought_signature" in owned and n.thought_signature else None
