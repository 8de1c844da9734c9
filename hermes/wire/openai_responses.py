"""OpenAI Responses API (and xAI's): pure translation between a ``ReplayPlan`` and ``/responses``.

Why it looks the way it does (facts from the Responses API reference and observed exchanges):

* Requests are stateless (``store: false``) and ask for ``reasoning.encrypted_content``, so
  every later request carries the model's reasoning items itself: ``{"type": "reasoning",
  "id", "summary", "encrypted_content"}``, byte-exact, placed right before the item that
  followed them (a function call or a message). The API rejects a reasoning item without
  its following item, so one is never sent alone (``UnsupportedPart``).
* Input items carry only keys the API accepts back: output-only keys such as ``status``
  make it answer ``Unknown parameter: 'input[1].status'.``.
* When streaming, ``encrypted_content`` in ``response.output_item.added`` may be partial;
  the blob is taken whole from ``response.output_item.done`` (``blob_mode="replace"``).
* Readable reasoning: the summary texts (joined by a blank line), or — for servers that
  return raw reasoning instead — the ``reasoning_text`` content parts.

``decode_event`` is stateless; every streamed delta is keyed by its output item id, so the
fold of a stream equals the parse of the completed response.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from ..core.attempt import Attempt, Carried, build, signed
from ..core.errors import StreamError, UnsupportedPart
from ..core.messages import Compaction, Part, Reasoning, Text, ToolCall, ToolResult
from ..core.stream import Delta, FinishDelta, ReasoningDelta, TextDelta, ToolCallDelta, UsageDelta
from ..replay import PlannedMessage, ReplayPlan, Settings
from ..replay.blocks import plan_blocks
from ..replay.structure import Turns
from ..routing.resolve import Resolved
from ..routing.routes import deep_merge
from . import FunctionDecoder, ToolSpec

__all__ = [
    "BLOB_KIND",
    "ITEMS",
    "PLANNER",
    "SEPARATOR",
    "SUMMARY_PARTS",
    "TURNS",
    "attempt",
    "decode_event",
    "decoder",
    "endpoint",
    "from_wire",
    "render_message",
    "to_wire",
]

PLANNER = plan_blocks
TURNS: Turns | None = None


ITEMS = "input"  # see ``Wire.ITEMS``

BLOB_KIND = "openai.encrypted"
SEPARATOR = "\n\n"
SUMMARY_PARTS = "openai.summary"
"""``Reasoning.extra`` key: the summary parts as returned, so they go back as the same parts
(the readable ``text`` is them joined with ``SEPARATOR``)."""
"""Between summary parts (or raw reasoning parts) of one reasoning item."""
COMPACTION_PREFIX = "Summary of the conversation so far:\n"
_DEFAULT_SETTINGS = Settings()


def endpoint(resolved: Resolved, *, stream: bool) -> tuple[str, dict[str, str]]:
    """``{base}/responses``; streaming asks for server-sent events."""
    headers = {"accept": "text/event-stream"} if stream else {"accept": "application/json"}
    return f"{resolved.base_url}/responses", {**headers, **resolved.route.headers}


# ----------------------------------------------------------------------------- request


def to_wire(
    plan: ReplayPlan,
    *,
    tools: Sequence[ToolSpec] = (),
    settings: Settings = _DEFAULT_SETTINGS,
    stream: bool = False,
    rendered: Sequence[bytes] | None = None,
) -> dict[str, Any]:
    """The request body for ``plan``: input items in the stored order, nothing re-decided.
    ``rendered``: each planned message's ``render_message``, serialised (``builder.memo``),
    when the caller kept them: spliced into the body as bytes, after the plan's kept runs."""
    fragment = orjson.Fragment
    items: list[Any] = [fragment(r.body) for r in plan.kept if r.body]  # kept runs: already built
    if rendered is None:
        for m in plan.messages:
            items += render_message(m)
    else:  # one fragment per stored message (its items, comma-separated)
        items += [fragment(r) for r in rendered if r]
    body: dict[str, Any] = {"model": plan.target.model, "input": items}
    if tools:
        body["tools"] = [
            {"type": "function", "name": t.name, "description": t.description, "parameters": dict(t.parameters)}
            for t in tools
        ]
    body["store"] = False
    body["stream"] = stream
    if plan.thinking:
        body["include"] = ["reasoning.encrypted_content"]
        reasoning: dict[str, Any] = {"summary": "auto"}
        if settings.effort and plan.target.profile.takes_effort(settings.effort):
            reasoning = {"effort": settings.effort, **reasoning}
        body["reasoning"] = reasoning
    if plan.request_fields:
        body = deep_merge(body, plan.request_fields)
    return body


def render_message(pm: PlannedMessage, route: object = None) -> list[dict[str, Any]]:
    """One planned message as its input items: pure, so the builder memoises it per planned
    message and a session's runs keep it (``builder.kept``)."""
    if pm.role == "assistant":
        return _assistant_items(pm.parts, pm.index)
    if pm.role == "tool":
        return _tool_items(pm.parts, pm.index)
    return _input_items(pm.role, pm.parts, pm.index)


def _input_items(role: str, parts: Sequence[Part], index: int) -> list[dict[str, Any]]:
    """System and user messages: one message item with ``input_text`` content."""
    content: list[dict[str, Any]] = []
    for p in parts:
        match p:
            case Text():
                content.append({"type": "input_text", "text": p.text})
            case Compaction():
                content.append({"type": "input_text", "text": COMPACTION_PREFIX + p.summary})
            case _:
                raise UnsupportedPart(f"message #{index}: a {role} message cannot carry a {p.kind} part "
                                      "on the Responses wire")
    if not content:
        return []
    return [{"role": "user" if role == "user" else "system", "content": content}]


def _tool_items(parts: Sequence[Part], index: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in parts:
        if not isinstance(p, ToolResult):
            raise UnsupportedPart(f"message #{index}: a tool message holds only tool results, not {p.kind}")
        out.append({"type": "function_call_output", "call_id": p.call_id, "output": p.content})
    return out


def _reasoning_item(p: Reasoning, index: int) -> dict[str, Any]:
    if p.blob_kind != BLOB_KIND or p.blob is None:
        raise UnsupportedPart(
            f"message #{index}: the Responses wire carries reasoning only as {BLOB_KIND} items; "
            f"got {p.blob_kind or 'readable text without a blob'} (the planner should have dropped it)")
    if not p.item_id:
        raise UnsupportedPart(f"message #{index}: a reasoning item needs its id to be replayed")
    parts = p.extra.get(SUMMARY_PARTS)
    if not (isinstance(parts, list) and all(isinstance(t, str) for t in parts) and SEPARATOR.join(parts) == p.text):
        parts = [p.text] if p.text else []  # text from elsewhere (or edited): one part
    summary = [{"type": "summary_text", "text": t} for t in parts]
    return {"type": "reasoning", "id": p.item_id, "summary": summary, "encrypted_content": p.blob}


def _assistant_items(parts: Sequence[Part], index: int) -> list[dict[str, Any]]:
    """Assistant output items in their original order; reasoning right before its follower."""
    out: list[dict[str, Any]] = []
    for p in parts:
        match p:
            case Reasoning():
                out.append(_reasoning_item(p, index))
            case Text():
                if p.text:
                    out.append({"type": "message", "role": "assistant",
                                "content": [{"type": "output_text", "text": p.text}]})
            case ToolCall():
                out.append({"type": "function_call", "call_id": p.id, "name": p.name, "arguments": p.arguments})
            case Compaction():
                out.append({"role": "user", "content": [{"type": "input_text",
                                                         "text": COMPACTION_PREFIX + p.summary}]})
            case _:
                raise UnsupportedPart(f"message #{index}: an assistant message cannot carry a {p.kind} part")
    if out and out[-1].get("type") == "reasoning":
        raise UnsupportedPart(
            f"message #{index}: reasoning item {out[-1]['id']!r} would be sent without its required "
            "following item (a reasoning-only turn must be dropped by the planner)")
    return out


# ----------------------------------------------------------------------------- response


def _key(item: Mapping[str, Any], position: int) -> str:
    ident = item.get("id")
    return ident if isinstance(ident, str) and ident else f"out{position}"


def _reasoning_text(item: Mapping[str, Any]) -> str:
    summary = [s.get("text", "") for s in item.get("summary") or [] if isinstance(s, Mapping)]
    if summary:
        return SEPARATOR.join(summary)
    content = [c.get("text", "") for c in item.get("content") or []
               if isinstance(c, Mapping) and c.get("type") == "reasoning_text"]
    return SEPARATOR.join(content)


def _summary_parts(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """The summary parts of a finished reasoning item, kept so they go back as returned."""
    parts = [s.get("text") for s in item.get("summary") or [] if isinstance(s, Mapping)]
    if len(parts) > 1 and all(isinstance(t, str) for t in parts):
        return {SUMMARY_PARTS: parts}
    return None


def _message_text(item: Mapping[str, Any]) -> str:
    out = []
    for c in item.get("content") or []:
        if isinstance(c, Mapping):
            if c.get("type") == "output_text":
                out.append(c.get("text") or "")
            elif c.get("type") == "refusal":
                out.append(c.get("refusal") or "")
    return "".join(out)


def _item_deltas(item: Mapping[str, Any], position: int) -> list[Delta]:
    key = _key(item, position)
    match item.get("type"):
        case "reasoning":
            blob = item.get("encrypted_content")
            return [ReasoningDelta(key, _reasoning_text(item), blob=blob if isinstance(blob, str) else None,
                                   blob_kind=BLOB_KIND if isinstance(blob, str) else None,
                                   blob_mode="replace", item_id=item.get("id"), extra=_summary_parts(item))]
        case "message":
            return [TextDelta(key, _message_text(item))]
        case "function_call":
            return [ToolCallDelta(key, id=item.get("call_id"), name=item.get("name"),
                                  arguments=item.get("arguments") or "")]
    return []


def _usage(usage: Any) -> dict[str, Any]:
    if not isinstance(usage, Mapping):
        return {}
    out: dict[str, Any] = {}
    for name in ("input_tokens", "output_tokens", "total_tokens"):
        if isinstance(usage.get(name), int):
            out[name] = usage[name]
    details = usage.get("output_tokens_details")
    if isinstance(details, Mapping) and isinstance(details.get("reasoning_tokens"), int):
        out["reasoning_tokens"] = details["reasoning_tokens"]
    cached = usage.get("input_tokens_details")
    if isinstance(cached, Mapping) and isinstance(cached.get("cached_tokens"), int):
        out["cached_tokens"] = cached["cached_tokens"]
    return out


def _finish(response: Mapping[str, Any]) -> list[Delta]:
    """Usage and the finish reason of a completed (or incomplete) response object."""
    out: list[Delta] = []
    usage = _usage(response.get("usage"))
    if usage:
        out.append(UsageDelta(usage))
    output = response.get("output") or []
    if response.get("status") == "incomplete":
        reason = "length"
    elif any(isinstance(i, Mapping) and i.get("type") == "function_call" for i in output):
        reason = "tool_calls"
    else:
        reason = "stop"
    out.append(FinishDelta(reason))
    return out


def _failure(response: Mapping[str, Any], what: str) -> StreamError:
    err = response.get("error")
    msg = err.get("message") if isinstance(err, Mapping) else err
    return StreamError(f"{what}: {msg or 'no error message'}")


def from_wire(payload: Any) -> list[Delta]:
    """A whole (non-streamed) response object as deltas, folded like a stream."""
    if not isinstance(payload, Mapping):
        raise StreamError(f"Responses payload is not an object: {payload!r:.80}")
    if payload.get("status") == "failed" or (payload.get("error") and not payload.get("output")):
        raise _failure(payload, "response failed")
    output = payload.get("output")
    if not isinstance(output, list):
        raise StreamError("Responses payload has no output list")
    deltas: list[Delta] = []
    try:
        for n, item in enumerate(output):
            if isinstance(item, Mapping):
                deltas.extend(_item_deltas(item, n))
        deltas.extend(_finish(payload))
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as e:
        raise StreamError(f"Responses payload is malformed ({type(e).__name__}: {str(e)[:80]})") from None
    return deltas


def _event_key(data: Mapping[str, Any]) -> str:
    ident = data.get("item_id")
    if isinstance(ident, str) and ident:
        return ident
    return f"out{data.get('output_index', 0)}"


def decode_event(event: str, data: str) -> list[Delta]:
    """One server-sent event as deltas; error events and malformed data raise ``StreamError``."""
    if data.strip() == "[DONE]":
        return []
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise StreamError(f"Responses stream sent non-JSON data: {data[:80]!r}") from None
    if not isinstance(obj, Mapping):
        raise StreamError(f"Responses stream event is not an object: {data[:80]!r}")
    try:  # a member of the wrong type (an item that is a string, a list that is a number) is malformed
        return _decode(obj, obj.get("type") or event, data)
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as e:
        raise StreamError(f"Responses stream event is malformed ({type(e).__name__}: {str(e)[:80]}): "
                          f"{data[:80]!r}") from None


def _decode(obj: Mapping[str, Any], kind: Any, data: str) -> list[Delta]:
    match kind:
        case "response.output_item.added":
            item = obj.get("item") or {}
            key = _key(item, obj.get("output_index", 0))
            match item.get("type"):
                case "reasoning":  # no encrypted_content here: it may be partial
                    return [ReasoningDelta(key, item_id=item.get("id"))]
                case "function_call":
                    return [ToolCallDelta(key, id=item.get("call_id"), name=item.get("name"))]
            return []
        case "response.reasoning_summary_part.added":
            if obj.get("summary_index", 0):
                return [ReasoningDelta(_event_key(obj), SEPARATOR)]
            return []
        case "response.content_part.added":
            part = obj.get("part") or {}
            if part.get("type") == "reasoning_text" and obj.get("content_index", 0):
                return [ReasoningDelta(_event_key(obj), SEPARATOR)]
            return []
        case "response.reasoning_summary_text.delta" | "response.reasoning_text.delta":
            return [ReasoningDelta(_event_key(obj), obj.get("delta") or "")]
        case "response.output_text.delta" | "response.refusal.delta":
            return [TextDelta(_event_key(obj), obj.get("delta") or "")]
        case "response.function_call_arguments.delta":
            return [ToolCallDelta(_event_key(obj), arguments=obj.get("delta") or "")]
        case "response.output_item.done":
            item = obj.get("item") or {}
            key = _key(item, obj.get("output_index", 0))
            match item.get("type"):
                case "reasoning":
                    blob = item.get("encrypted_content")
                    if isinstance(blob, str):
                        return [ReasoningDelta(key, blob=blob, blob_kind=BLOB_KIND, blob_mode="replace",
                                               item_id=item.get("id"), extra=_summary_parts(item))]
                    return [ReasoningDelta(key, item_id=item.get("id"), extra=_summary_parts(item))]
                case "function_call":
                    return [ToolCallDelta(key, id=item.get("call_id"), name=item.get("name"))]
            return []
        case "response.completed" | "response.incomplete":
            response = obj.get("response") or {}
            if kind == "response.incomplete" and response.get("status") != "incomplete":
                response = {**response, "status": "incomplete"}
            return _finish(response)
        case "response.failed":
            raise _failure(obj.get("response") or {}, "response failed")
        case "error":
            raise StreamError(f"Responses stream error: {obj.get('message') or obj.get('error') or data[:120]}")
    return []


_DECODER = FunctionDecoder(decode_event, from_wire)


def decoder(resolved: Resolved) -> FunctionDecoder:
    """Every streamed delta is keyed by its item id: one stateless decoder serves every request."""
    return _DECODER


# ----------------------------------------------------------------------------- attempt


def attempt(plan: ReplayPlan, body: Mapping[str, Any]) -> Attempt:
    """What ``input`` carried back: reasoning items (their encrypted content by hash) and the
    ``function_call`` items; positions are input item positions."""
    carried: list[Carried] = []
    turns: list[int] = []
    for i, item in enumerate(body.get("input") or ()):
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "function_call":
            turns.append(i)
        elif item.get("type") == "reasoning":
            h, kind = signed(item.get("encrypted_content"), BLOB_KIND)
            carried.append(Carried(i, "encrypted_content" if h else "summary", h, kind))
    return build("openai_responses", plan.target.route.must_echo, body, carried, turns)
