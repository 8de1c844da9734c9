"""The Messages door on a vendor's Anthropic-compatible route (policy ``keep``): its rules, applied.

The client already speaks the route's API, and the vendor's thinking is the client's own
``thinking`` blocks, readable: nothing to seal, the request is relayed after these rules
(docs/routes.md, "The vendors' own Anthropic-compatible endpoints"):

* ``redacted_thinking`` blocks (Anthropic's encrypted thinking, no text) are left out;
* ``cache_control`` on a thinking block is removed (the reference agent removes it everywhere);
* on a must-echo route (DeepSeek, Kimi, MiMo), whose services read a block's text and never its
  signature, every signature is removed — the door cannot tell the vendor's own from Claude's,
  and a foreign one must not reach them — and an assistant ``tool_use`` turn without a thinking
  block (or with an empty one) gets the ``" "`` pad block;
* MiniMax's own signed blocks pass as they came;
* ``thinking: {"type": "disabled"}`` is left out for a model that refuses it (``kimi-k2.7-code``:
  the route row says nothing for thinking off there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ..replay import PAD
from ..routing.routes import Route
from ..store.requestlog import log_event

__all__ = ["Applied", "apply_rules", "relayed"]


@dataclass(frozen=True, slots=True)
class Applied:
    body: dict[str, Any]
    unsigned: int = 0
    """Signatures removed."""
    redacted: int = 0
    """``redacted_thinking`` blocks left out."""
    padded: int = 0
    """Tool turns given the pad block."""
    changed: bool = False


def _turn(content: list[Any], echo: bool, counts: list[int]) -> list[Any]:
    out: list[Any] = []
    for b in content:
        if not isinstance(b, Mapping):
            out.append(b)
            continue
        kind = b.get("type")
        if kind == "redacted_thinking":
            counts[1] += 1
            continue
        if kind == "thinking":
            block = {k: v for k, v in b.items() if k != "cache_control" and not (echo and k == "signature")}
            counts[0] += echo and "signature" in b
            if echo and not (isinstance(block.get("thinking"), str) and block["thinking"]):
                block["thinking"] = PAD
            out.append(block)
            continue
        out.append(b)
    if echo and any(isinstance(b, Mapping) and b.get("type") == "tool_use" for b in out) \
            and not any(isinstance(b, Mapping) and b.get("type") == "thinking" for b in out):
        counts[2] += 1
        out.insert(0, {"type": "thinking", "thinking": PAD})
    return out


def apply_rules(body: dict[str, Any], row: Route, model: str) -> Applied:
    """``body`` as the ``keep`` route ``row`` takes it for ``model`` (``body`` itself when
    nothing changes)."""
    echo = row.must_echo
    counts = [0, 0, 0]
    messages = body.get("messages")
    out = body
    if isinstance(messages, list):
        sent = [{**m, "content": _turn(m["content"], echo, counts)}
                if isinstance(m, Mapping) and m.get("role") == "assistant" and isinstance(m.get("content"), list)
                else m for m in messages]
        if sent != messages:
            out = {**body, "messages": sent}
    thinking = body.get("thinking")
    if isinstance(thinking, Mapping) and thinking.get("type") == "disabled" and not row.for_model(model).thinking_off:
        out = {k: v for k, v in out.items() if k != "thinking"}
    return Applied(out, counts[0], counts[1], counts[2], changed=out is not body)


def relayed(raw: bytes, row: Route) -> bytes:
    """The request bytes the route gets: ``raw`` under ``apply_rules`` (as it is when it is not
    a JSON object, which the route refuses in its own words, or when nothing changes)."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw
    if not isinstance(body, dict):
        return raw
    applied = apply_rules(body, row, str(body.get("model") or ""))
    if not applied.changed:
        return raw
    log_event("proxy_door", door="messages", route=row.key, unsigned=applied.unsigned, redacted=applied.redacted,
              padded=applied.padded)
    return orjson.dumps(applied.body)
