"""What a session looks like to a person or a client: ``hermes sessions show`` and the gateway.

Blobs are never printed: a view shows their kind, length and a short hash, which is enough to
see that a signature came back byte-exact and where it came from.
"""

from __future__ import annotations

from typing import Any

from .messages import Compaction, Message, Reasoning, Text, ToolCall, ToolResult, part_to_dict
from .replay import blob_hash

__all__ = ["message_view", "part_view", "session_view"]


def part_view(p: Any, *, full: bool = False) -> dict[str, Any]:
    """One part as JSON-able data; reasoning text only when ``full``, blobs only as hashes."""
    if not isinstance(p, Reasoning):
        return part_to_dict(p)
    o = p.origin
    d: dict[str, Any] = {"kind": "reasoning", "origin": {"provider": o.provider, "host": o.host,
                                                         "model": o.model, "wire": o.wire},
                         "text_chars": len(p.text)}
    if full:
        d["text"] = p.text
    if p.blob is not None:
        d["blob"] = {"kind": p.blob_kind, "chars": len(p.blob), "sha256": blob_hash(p.blob)[:12]}
    if p.item_id:
        d["item_id"] = p.item_id
    if p.native:
        n = p.native
        nat: dict[str, Any] = {}
        if n.thought_signature:
            nat["thought_signature"] = {"chars": len(n.thought_signature), "sha256": blob_hash(n.thought_signature)[:12]}
        if n.tool_signatures:
            nat["tool_signatures"] = {cid: {"chars": len(s), "sha256": blob_hash(s)[:12]} for cid, s in n.tool_signatures}
        if n.reasoning_opaque:
            nat["reasoning_opaque"] = {"chars": len(n.reasoning_opaque), "sha256": blob_hash(n.reasoning_opaque)[:12]}
        if n.reasoning_text:
            nat["reasoning_text"] = {"chars": len(n.reasoning_text)} | ({"text": n.reasoning_text} if full else {})
        d["native"] = nat
    return d


def message_view(seq: int, m: Message, *, full: bool = False) -> dict[str, Any]:
    return {"seq": seq, "role": m.role, "parts": [part_view(p, full=full) for p in m.parts]}


def session_view(store: Any, session_id: str, *, full: bool = False) -> dict[str, Any]:
    """The session row plus every message with its reasoning carriers."""
    info = store.get_session(session_id)
    msgs = store.load(info.id)
    return {
        "id": info.id, "title": info.title, "provider": info.provider, "model": info.model,
        "base_url": info.base_url, "parent_id": info.parent_id, "created": info.created,
        "updated": info.updated, "model_config": store.model_config(info.id),
        "messages": [message_view(i, m, full=full) for i, m in enumerate(msgs)],
    }


def describe_part(p: Any, *, full: bool = False, width: int = 100) -> list[str]:
    """Human lines for one part (used by ``hermes sessions show``)."""
    def clip(s: str) -> str:
        s = s.replace("\n", " ⏎ ")
        return s if full or len(s) <= width else s[: width - 1] + "…"

    match p:
        case Text():
            return [f"text       {clip(p.text)!s}"]
        case ToolCall():
            return [f"tool_call  {p.name} {clip(p.arguments)}  (id {p.id})"]
        case ToolResult():
            flag = " ERROR" if p.is_error else ""
            return [f"result{flag:6} {p.name or p.call_id}: {clip(p.content)}"]
        case Compaction():
            return [f"checkpoint summary of {p.replaced} earlier messages: {clip(p.summary)}"]
        case Reasoning():
            o = p.origin
            lines = [f"reasoning  from {o.provider}@{o.host}/{o.model} ({o.wire}), {len(p.text)} chars"]
            if p.text and full:
                lines += [f"           │ {line}" for line in p.text.splitlines()]
            elif p.text:
                lines.append(f"           │ {clip(p.text)}")
            if p.blob is not None:
                lines.append(f"           blob {p.blob_kind}: {len(p.blob):,} chars sha256:{blob_hash(p.blob)[:12]}")
            if p.item_id:
                lines.append(f"           item {p.item_id}")
            if p.native:
                n = p.native
                bits = [f"{name} ({len(v):,} chars)" for name, v in
                        (("thought_signature", n.thought_signature), ("reasoning_opaque", n.reasoning_opaque),
                         ("reasoning_text", n.reasoning_text)) if v]
                if n.tool_signatures:
                    bits.append(f"tool signatures x{len(n.tool_signatures)}")
                lines.append(f"           native hermes.native_assistant: {', '.join(bits)}")
            return lines
    return [repr(p)]
