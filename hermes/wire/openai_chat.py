"""OpenAI Chat Completions wire: every OpenAI-compatible route, rendered from a replay plan.

Pure translation, no I/O. The planner (``replay``) already decided which reasoning carrier
fields, pads and native fields each assistant message carries; this module only renders them:

* ``to_wire`` — request body: ``model``, ``messages``, ``tools``, ``stream`` (+ usage in the
  stream) and the plan's ``request_fields`` (keep-thinking switches, effort) at the top level.
  Per-call signatures go where the row's ``call_signature`` path says (a dotted path inside
  the tool call); URL and extra headers come from the row too.
* ``decoder`` / ``from_wire`` / ``decode_event`` — the response side, which lives in
  ``chat_decode`` (one ``ChatDecoder`` for whole and streamed responses) and is re-exported
  here so this module is the whole :class:`~hermes.wire.Wire`.
* ``attempt`` — what a sent body carried back (``chat_attempt``), re-exported likewise.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

import orjson

from ..core.errors import UnsupportedPart
from ..core.messages import Compaction, Part, Text, ToolCall, ToolResult
from ..replay import PlannedMessage, ReplayPlan, Settings
from ..replay.chat import plan_chat
from ..replay.structure import Turns
from ..routing.resolve import Resolved
from ..routing.routes import at_path, deep_merge
from . import ToolSpec
from .chat_attempt import attempt
from .chat_decode import ChatDecoder, decode_event, decoder, from_wire, split_think

__all__ = [
    "ITEMS",
    "PLANNER",
    "SUMMARY_PREFIX",
    "TURNS",
    "ChatDecoder",
    "attempt",
    "decode_event",
    "decoder",
    "endpoint",
    "from_wire",
    "render_message",
    "split_think",
    "to_wire",
]

PLANNER = plan_chat
TURNS: Turns | None = None

ITEMS = "messages"  # see ``Wire.ITEMS``

SUMMARY_PREFIX = "Summary of the earlier conversation:\n"

_DEFAULT_SETTINGS = Settings()


# ----------------------------------------------------------------------------- request


def endpoint(resolved: Resolved, stream: bool = False) -> tuple[str, dict[str, str]]:
    """(URL, the row's extra headers) for one request; same URL streaming or not."""
    return f"{resolved.base_url.rstrip('/')}/chat/completions", dict(resolved.route.headers)


def to_wire(
    plan: ReplayPlan,
    *,
    tools: Sequence[ToolSpec] = (),
    settings: Settings = _DEFAULT_SETTINGS,
    stream: bool = False,
    rendered: Sequence[bytes] | None = None,
) -> dict[str, Any]:
    """The request body for ``plan``; nothing here decides what reasoning is replayed.
    ``rendered``: each planned message's ``render_message``, serialised (``builder.memo``),
    when the caller kept them: spliced into the body as bytes, after the plan's kept runs."""
    route = plan.target.route
    fragment = orjson.Fragment
    messages: list[Any] = [fragment(r.body) for r in plan.kept if r.body]  # kept runs: already built
    if rendered is None:
        sig_at = (route.call_signature, route.text_signature)
        messages += chain.from_iterable(_render(pm, sig_at) for pm in plan.messages)
    else:
        # one fragment per stored message (a message rendered as two chat messages splices
        # both, comma-separated); orjson copies each, which is fast for many small fragments
        messages += [fragment(r) for r in rendered if r]
    body: dict[str, Any] = {"model": plan.target.model, "messages": messages}
    if tools:
        body["tools"] = [_tool(t) for t in tools]
    body["stream"] = stream
    if stream:
        body["stream_options"] = {"include_usage": True}
    if plan.request_fields:
        body = deep_merge(body, plan.request_fields)
    return body


def _tool(t: ToolSpec) -> dict[str, Any]:
    fn: dict[str, Any] = {"name": t.name}
    if t.description:
        fn["description"] = t.description
    fn["parameters"] = dict(t.parameters)
    return {"type": "function", "function": fn}


def _render(pm: PlannedMessage, sig_at: tuple[str, str]) -> list[dict[str, Any]]:
    """One planned message → chat messages (a compaction becomes its own user message)."""
    out: list[dict[str, Any]] = []
    rest: list[Part] = []
    for p in pm.parts:
        if isinstance(p, Compaction):
            out.append({"role": "user", "content": SUMMARY_PREFIX + p.summary})
        else:
            rest.append(p)
    if not rest and out:
        return out
    match pm.role:
        case "system" | "user":
            out.append({"role": pm.role, "content": _text_only(pm, rest)})
        case "assistant":
            out.append(_assistant(pm, rest, sig_at))
        case "tool":
            out.extend(_tool_results(pm, rest))
        case _:  # pragma: no cover - Message validates roles
            raise UnsupportedPart(f"message #{pm.index}: role {pm.role!r} has no chat form")
    return out


def _unsupported(pm: PlannedMessage, p: Part) -> UnsupportedPart:
    return UnsupportedPart(f"message #{pm.index} ({pm.role}): a {p.kind} part has no place on the chat wire")


def _text_only(pm: PlannedMessage, parts: Sequence[Part]) -> str:
    texts = []
    for p in parts:
        if not isinstance(p, Text):
            raise _unsupported(pm, p)
        texts.append(p.text)
    return "".join(texts)


def _assistant(pm: PlannedMessage, parts: Sequence[Part], sig_at: tuple[str, str]) -> dict[str, Any]:
    """The assistant message: text, calls (each with its signature where the row's
    ``call_signature`` path says), the planned carrier fields, then the text turn's signature
    where the row's ``text_signature`` path says (Gemini-compat: ``extra_content.google``)."""
    call_at, text_at = sig_at
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for p in parts:
        match p:
            case Text():
                texts.append(p.text)
            case ToolCall():
                calls.append(_call(p, pm.tool_signatures.get(p.id), call_at))
            case _:
                raise _unsupported(pm, p)
    text = "".join(texts)
    msg: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else "")}
    if calls:
        msg["tool_calls"] = calls
    fields = dict(pm.fields)
    if isinstance(chunks := fields.pop("content", None), list):  # thinking chunks head the content list
        msg["content"] = [*chunks, *([{"type": "text", "text": text}] if text else [])]
    msg.update(fields)
    if pm.thought_signature and text_at:
        msg = deep_merge(msg, at_path(text_at, pm.thought_signature))
    return msg


def _call(c: ToolCall, sig: str | None, sig_at: str) -> dict[str, Any]:
    call: dict[str, Any] = {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
    if sig and sig_at:
        call = deep_merge(call, at_path(sig_at, sig))
    return call


def _tool_results(pm: PlannedMessage, parts: Sequence[Part]) -> list[dict[str, Any]]:
    out = []
    for p in parts:
        if not isinstance(p, ToolResult):
            raise _unsupported(pm, p)
        out.append({"role": "tool", "tool_call_id": p.call_id, "content": p.content})
    return out


def render_message(pm: PlannedMessage, route: Any) -> list[dict[str, Any]]:
    """One planned message as the chat messages ``to_wire`` sends for it: pure, so the
    builder memoises it per planned message (``builder.memo.render_with``); ``hermes proxy`` takes
    the reasoning keys from here, so it never places a field differently."""
    return _render(pm, (route.call_signature, route.text_signature))
