"""``session_view``: a stored session as JSON for people and tools — reasoning visible, blobs not.

Shared by ``GET /v1/sessions/{id}`` and ``hermes sessions show --json`` so both print the same
shape. Every part is its documented JSON form (``messages.part_to_dict``) except that opaque
payloads — ``Reasoning.blob`` and the signatures in a ``native`` record — are replaced by a
summary ``{blob_kind, chars, sha256}`` (a 12-hex-digit prefix of the sha256 the store files the
blob under). Those payloads can be megabytes, mean nothing to a reader, and a view is for
seeing *which* carrier a turn holds and whether two sessions share it, not for re-sending it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..messages import Reasoning, part_to_dict

__all__ = ["blob_summary", "session_view"]

_PREFIX = 12


def blob_summary(blob: str, blob_kind: str | None) -> dict[str, Any]:
    """What a reader needs to know of an opaque payload: its kind, size and identity."""
    digest = hashlib.sha256(blob.encode("utf-8")).hexdigest()[:_PREFIX]
    return {"blob_kind": blob_kind, "chars": len(blob), "sha256": digest}


def _part_view(part: Any) -> dict[str, Any]:
    d = part_to_dict(part)
    if not isinstance(part, Reasoning):
        return d
    if part.blob is not None:
        d["blob"] = blob_summary(part.blob, part.blob_kind)
    native = d.get("native")
    if native:
        if "thought_signature" in native:
            native["thought_signature"] = blob_summary(native["thought_signature"], "gemini.thought_signature")
        if "tool_signatures" in native:
            native["tool_signatures"] = [[cid, blob_summary(sig, "gemini.tool_signature")]
                                         for cid, sig in native["tool_signatures"]]
        if "reasoning_opaque" in native:
            native["reasoning_opaque"] = blob_summary(native["reasoning_opaque"], "copilot.reasoning_opaque")
    return d


def session_view(store: Any, session_id: str) -> dict[str, Any]:
    """``{session: {...}, messages: [{seq, role, parts}]}`` for one session (exact id or prefix).

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
        entry: dict[str, Any] = {"seq": seq, "role": m.role, "parts": [_part_view(p) for p in m.parts]}
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
