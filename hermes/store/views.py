"""What a session looks like to a person or a client — reasoning visible, blobs not.

``session_view`` is shared by ``GET /v1/sessions/{id}`` and ``hermes sessions show --json`` so
both print the same shape; ``describe_part`` gives the human lines of ``hermes sessions show``. Every part is its documented JSON form (``messages.part_to_dict``) except that opaque
payloads — ``Reasoning.blob`` and the signatures in a ``native`` record — are replaced by a
summary ``{blob_kind, chars, sha256}`` (a 12-hex-digit prefix of the sha256 the store files the
blob under). Those payloads can be megabytes, mean nothing to a reader, and a view is for
seeing *which* carrier a turn holds and whether two sessions share it, not for re-sending it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.messages import Compaction, Reasoning, Text, ToolCall, ToolResult, part_to_dict
from ..replay import blob_hash

if TYPE_CHECKING:
    from . import SessionStore

__all__ = ["blob_summary", "describe_part", "session_view"]

_PREFIX = 12


def blob_summary(blob: str, blob_kind: str | None) -> dict[str, Any]:
    """What a reader needs to know of an opaque payload: its kind, size and identity."""
    digest = blob_hash(blob)[:_PREFIX]
    return {"blob_kind": blob_kind, "chars": len(blob), "sha256": digest}


def _part_view(part: Any, full: bool) -> dict[str, Any]:
    d = part_to_dict(part)
    if not isinstance(part, Reasoning):
        return d
    if not full:
        d["text_chars"] = len(d.pop("text"))
    if part.blob is not None:
        d["blob"] = blob_summary(part.blob, part.blob_kind)
    native = d.get("native")
    if native:
        if "thought_signature" in native:
            native["thought_signature"] = blob_summary(native["thought_signature"], "native.thought_signature")
        if "tool_signatures" in native:
            native["tool_signatures"] = [[cid, blob_summary(sig, "native.tool_signature")]
                                         for cid, sig in native["tool_signatures"]]
        if "reasoning_opaque" in native:
            native["reasoning_opaque"] = blob_summary(native["reasoning_opaque"], "native.reasoning_opaque")
        if "reasoning_text" in native and not full:
            native["reasoning_text"] = {"chars": len(native["reasoning_text"])}
    return d


def session_view(store: SessionStore, session_id: str, *, full: bool = True) -> dict[str, Any]:
    """``{session: {...}, messages: [{seq, role, parts}]}`` for one session (exact id or prefix).
    ``full=False`` shows reasoning text as its length only.

    ``carriers`` on a message lists the reasoning payload kinds it holds (``text`` for readable
    reasoning, a blob kind, or ``native.<field>``) so a reader can scan what would be replayed.
    """
    info = store.get_session(session_id)
    history = store.load(info.id)
    messages = []
    for seq, m in enumerate(history):
        carriers: list[str] = []
        for p in m.reasoning:
            if p.text:
                carriers.append("text")
            if p.blob_kind:
                carriers.append(p.blob_kind)
            if p.native:
                carriers.extend(f"native.{f}" for f in sorted(p.native.fields()))
        entry: dict[str, Any] = {"seq": seq, "role": m.role, "parts": [_part_view(p, full) for p in m.parts]}
        if carriers:
            entry["carriers"] = list(dict.fromkeys(carriers))
        messages.append(entry)
    return {
        "session": {
            "id": info.id, "title": info.title, "provider": info.provider, "model": info.model,
            "base_url": info.base_url, "created": info.created, "updated": info.updated,
            "parent_id": info.parent_id, "branch_of_seq": info.branch_of_seq,
            "message_count": len(history), "turn_count": info.turn_count,
        },
        "messages": messages,
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
