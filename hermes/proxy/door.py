"""What every front door shares: envelopes in, envelopes out, around the one chat pipeline.

A front door (Responses, Anthropic Messages) turns its client's request into a chat-completions
body and sends it through ``Proxy.exchange`` — the same rewrite, planner, wire and rejection
memory as a chat client's request. Its client cannot carry ``reasoning_content`` or
``reasoning_details``, but it does carry back its own opaque field (a reasoning item's
``encrypted_content``, a thinking block's ``signature``). So the door puts there an **envelope**
(``seal``) holding the turn's reasoning parts exactly as the route returned them, and on the
next request opens it and hands the turn to the rewrite as recognised, by the index of its
message (``Proxy.exchange``'s ``extra``): restored byte for byte by the route's own rules, with no memory needed.

An envelope that does not open (altered, another tenant's or deployment's, expired) restores
nothing: the turn goes as unrecognised, and the route's fallback (the must-echo pad) applies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from ..core.errors import HermesError
from ..core.messages import Message, Part, Reasoning, Text, ToolCall, part_from_dict, part_to_dict
from .seal import Sealer

__all__ = ["ENVELOPE_VERSION", "open_turns", "seal_turn", "visible_parts"]

ENVELOPE_VERSION = 1


def seal_turn(parts: Sequence[Reasoning], sealer: Sealer, *, tenant: str, route: str) -> str | None:
    """An envelope of a turn's reasoning ``parts`` as recorded (text, blob, native fields) for
    ``tenant`` on ``route``; None when there is nothing to carry
    (or it would be past the envelope bound: the turn then goes back unrecognised)."""
    if not parts:
        return None
    payload = orjson.dumps({"v": ENVELOPE_VERSION, "parts": [part_to_dict(p) for p in parts]})
    try:
        return sealer.seal(payload, tenant=tenant, route=route)
    except ValueError:
        return None


def _opened(envelope: str, sealer: Sealer, tenant: str, route: str) -> tuple[Reasoning, ...] | None:
    raw = sealer.open(envelope, tenant=tenant, route=route)
    if raw is None:
        return None
    try:
        doc = orjson.loads(raw)
        if not isinstance(doc, dict) or doc.get("v") != ENVELOPE_VERSION or not isinstance(doc.get("parts"), list):
            return None
        parts = tuple(part_from_dict(d) for d in doc["parts"])
    except (orjson.JSONDecodeError, HermesError):
        return None
    return parts if all(isinstance(p, Reasoning) for p in parts) else None  # type: ignore[return-value]


def visible_parts(msg: Mapping[str, Any]) -> tuple[Part, ...]:
    """The text and tool calls of a chat assistant message a door built (well-formed by
    construction: ``content`` a string or None, each call a function call)."""
    out: list[Part] = []
    content = msg.get("content")
    if isinstance(content, str) and content:
        out.append(Text(content))
    for c in msg.get("tool_calls") or ():
        fn = c["function"]
        out.append(ToolCall(str(c["id"]), str(fn["name"]), str(fn["arguments"])))
    return tuple(out)


def open_turns(messages: Sequence[Mapping[str, Any]], envelopes: Mapping[int, Sequence[str]], sealer: Sealer, *,
               tenant: str, route: str) -> tuple[dict[int, Message], int]:
    """(index of an assistant message → its restored turn, envelopes that did not open) for
    the chat ``messages`` a door built, ``envelopes`` by the index of the assistant message
    they came with. Of a turn's envelopes the last that opens wins (each carries all its turn
    held when it was sealed). By index, not by what the turn shows: two turns that both said
    "Done." each get their own reasoning back."""
    out: dict[int, Message] = {}
    refused = 0
    for i, envs in envelopes.items():
        parts: tuple[Reasoning, ...] | None = None
        for env in envs:
            got = _opened(env, sealer, tenant, route)
            if got is None:
                refused += 1
            else:
                parts = got
        if parts:
            out[i] = Message("assistant", (*parts, *visible_parts(messages[i])))
    return out, refused
