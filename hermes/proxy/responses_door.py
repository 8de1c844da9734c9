"""The Responses front door, pure translation: a Responses request as the route's chat request,
and the route's answer as a Responses response object.

A Responses client (Codex CLI, the Agents SDK, ``openai.responses``) sends its whole
conversation as input items. They become chat messages the way a chat client would have sent
them: ``instructions`` and ``system`` / ``developer`` messages → system messages, user messages
→ user messages, each maximal run of the model's own items (``reasoning``, assistant
``message``, ``function_call``) → one assistant message, ``function_call_output`` → a tool
message. A reasoning item's ``encrypted_content`` is the door's envelope (``door``); which
chat message it came with is kept, so its turn is restored onto that message by the rewrite.

Only what the chat route can serve is translated; what it cannot is refused with a 400 naming
the parameter (``previous_response_id`` — the proxy keeps no responses, ``background``, input
files, non-function tool calls in the history). Hosted and namespaced tools (``web_search``,
``namespace``...) are left out of the tool list: the route has no such tools, and the model
simply does not see them.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.messages import Message, Reasoning, Text, ToolCall
from ..replay import effort_fields
from ..routing.resolve import Resolved
from ..serving.http import ApiError

__all__ = ["ENCRYPTED", "DoorRequest", "call_item", "chat_request", "message_item", "new_id", "output_items",
           "reasoning_item", "response_object", "usage_of"]

ENCRYPTED = "reasoning.encrypted_content"
"""The ``include`` value asking for reasoning items' ``encrypted_content`` (``store: false`` clients)."""

_SYSTEM = ("system", "developer")
_REFUSED = {"previous_response_id": "the proxy keeps no responses: send the whole conversation as `input` "
                                    "with `store: false` (as Codex does)",
            "conversation": "the proxy keeps no conversations: send the whole conversation as `input`",
            "background": "background responses are not served by the proxy"}
_TEXT_IN = ("input_text", "output_text", "text", "summary_text", "refusal")


def _bad(message: str, param: str = "") -> ApiError:
    return ApiError(400, "invalid_request", f"{param}: {message}" if param else message)


@dataclass
class DoorRequest:
    """A Responses request as the route's chat request."""

    body: dict[str, Any]
    """The chat-completions body (before the rewrite restores reasoning onto it)."""
    envelopes: dict[int, list[str]] = field(default_factory=dict)
    """Index of an assistant message in ``body["messages"]`` → the envelopes its items carried."""
    stream: bool = False
    include_encrypted: bool = False
    """The client asked for ``encrypted_content`` (otherwise reasoning items carry only a summary)."""


def _text(content: Any, param: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _bad("expected a string or a list of content parts", param)
    out = []
    for n, part in enumerate(content):
        if not isinstance(part, Mapping):
            raise _bad("a content part must be an object", f"{param}[{n}]")
        kind = part.get("type")
        if kind in _TEXT_IN:
            value = part.get("refusal" if kind == "refusal" else "text")
            if not isinstance(value, str):
                raise _bad("a text part needs its text", f"{param}[{n}]")
            out.append(value)
        else:
            raise _bad(f"content of type {kind!r} is not served by the proxy's Responses door", f"{param}[{n}]")
    return "".join(out)


def _user_content(content: Any, param: str) -> Any:
    """User content: a string, or chat content parts when it holds images."""
    if isinstance(content, list) and any(isinstance(p, Mapping) and p.get("type") == "input_image" for p in content):
        parts: list[dict[str, Any]] = []
        for n, p in enumerate(content):
            if isinstance(p, Mapping) and p.get("type") == "input_image":
                url = p.get("image_url")
                if not isinstance(url, str) or not url:
                    raise _bad("an input image needs its image_url (file ids are not served)", f"{param}[{n}]")
                image: dict[str, Any] = {"url": url}
                if isinstance(p.get("detail"), str):
                    image["detail"] = p["detail"]
                parts.append({"type": "image_url", "image_url": image})
            else:
                parts.append({"type": "text", "text": _text([p], f"{param}[{n}]")})
        return parts
    return _text(content, param)


def _output(value: Any, param: str) -> str:
    """A function call's output: a string, or content parts whose text is joined."""
    return value if isinstance(value, str) else _text(value, param)


def _tools(tools: Any) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise _bad("expected a list", "tools")
    out = []
    for n, t in enumerate(tools):
        if not isinstance(t, Mapping):
            raise _bad("a tool must be an object", f"tools[{n}]")
        if t.get("type") != "function":
            continue  # hosted / namespaced tools: the route has none (module docstring)
        name = t.get("name")
        if not isinstance(name, str) or not name:
            raise _bad("a function tool needs its name", f"tools[{n}].name")
        fn: dict[str, Any] = {"name": name}
        if isinstance(t.get("description"), str):
            fn["description"] = t["description"]
        fn["parameters"] = t.get("parameters") if isinstance(t.get("parameters"), Mapping) else {
            "type": "object", "properties": {}}
        out.append({"type": "function", "function": fn})
    return out


def _tool_choice(choice: Any) -> Any:
    if choice is None or choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, Mapping) and choice.get("type") == "function" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    if isinstance(choice, Mapping) and choice.get("type") == "allowed_tools":
        return choice.get("mode") or "auto"
    raise _bad(f"{choice!r} is not served (auto, none, required or one function)", "tool_choice")


def _format(text: Any) -> dict[str, Any] | None:
    """``text.format`` as the chat ``response_format``; None for plain text."""
    fmt = text.get("format") if isinstance(text, Mapping) else None
    if not isinstance(fmt, Mapping) or fmt.get("type") in (None, "text"):
        return None
    if fmt.get("type") == "json_object":
        return {"type": "json_object"}
    if fmt.get("type") == "json_schema":
        schema = {k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}
        return {"type": "json_schema", "json_schema": schema}
    raise _bad(f"format {fmt.get('type')!r} is not served", "text.format")


def chat_request(body: Mapping[str, Any], target: Resolved) -> DoorRequest:
    """The chat request for a Responses request ``body`` to ``target`` (module docstring);
    ``ApiError`` (400) for what the route cannot serve."""
    for name, why in _REFUSED.items():
        if body.get(name):
            raise _bad(why, name)
    messages: list[dict[str, Any]] = []
    envelopes: dict[int, list[str]] = {}
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    if not isinstance(items, list):
        raise _bad("expected a string or a list of input items", "input")
    run: dict[str, Any] | None = None  # the assistant message the model's items are joining

    def assistant() -> tuple[dict[str, Any], int]:
        nonlocal run
        if run is None:
            run = {"role": "assistant", "content": None}
            messages.append(run)
        return run, len(messages) - 1

    for n, item in enumerate(items):
        param = f"input[{n}]"
        if not isinstance(item, Mapping):
            raise _bad("an input item must be an object", param)
        kind = item.get("type") or ("message" if "role" in item else None)
        match kind:
            case "message":
                role = item.get("role")
                if role == "assistant":
                    msg, _ = assistant()
                    msg["content"] = (msg["content"] or "") + _text(item.get("content"), f"{param}.content")
                    continue
                if role not in ("user", *_SYSTEM):
                    raise _bad(f"role {role!r} is not a Responses message role", f"{param}.role")
                run = None
                if role == "user":
                    messages.append({"role": "user", "content": _user_content(item.get("content"), f"{param}.content")})
                else:
                    messages.append({"role": "system", "content": _text(item.get("content"), f"{param}.content")})
            case "function_call":
                call_id, fname, args = item.get("call_id"), item.get("name"), item.get("arguments")
                if not (isinstance(call_id, str) and call_id and isinstance(fname, str) and fname):
                    raise _bad("a function call needs its call_id and name", param)
                msg, _ = assistant()
                msg.setdefault("tool_calls", []).append(
                    {"id": call_id, "type": "function",
                     "function": {"name": fname, "arguments": args if isinstance(args, str) else "{}"}})
            case "reasoning":
                _, at = assistant()
                blob = item.get("encrypted_content")
                if isinstance(blob, str) and blob:
                    envelopes.setdefault(at, []).append(blob)
            case "function_call_output":
                call_id = item.get("call_id")
                if not isinstance(call_id, str) or not call_id:
                    raise _bad("a function call output needs its call_id", param)
                run = None
                messages.append({"role": "tool", "tool_call_id": call_id,
                                 "content": _output(item.get("output"), f"{param}.output")})
            case "item_reference":
                raise _bad("item references need stored responses; the proxy keeps none", param)
            case _:
                raise _bad(f"input items of type {kind!r} are not served by the proxy's Responses door", param)
    for m in messages:  # a turn of reasoning alone: nothing visible to carry it
        if m["role"] == "assistant" and m["content"] is None and not m.get("tool_calls"):
            m["content"] = ""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _bad("a model is required", "model")
    chat: dict[str, Any] = {"model": model, "messages": messages}
    tools = _tools(body.get("tools"))
    if tools:
        chat["tools"] = tools
        choice = _tool_choice(body.get("tool_choice"))
        if choice is not None:
            chat["tool_choice"] = choice
        if isinstance(body.get("parallel_tool_calls"), bool):
            chat["parallel_tool_calls"] = body["parallel_tool_calls"]
    for name in ("temperature", "top_p"):
        if isinstance(body.get(name), int | float) and not isinstance(body.get(name), bool):
            chat[name] = body[name]
    if isinstance(body.get("max_output_tokens"), int):
        chat["max_tokens"] = body["max_output_tokens"]
    fmt = _format(body.get("text"))
    if fmt is not None:
        chat["response_format"] = fmt
    effort = (body.get("reasoning") or {}).get("effort") if isinstance(body.get("reasoning"), Mapping) else None
    if isinstance(effort, str) and effort:
        chat.update(effort_fields(target, effort))
    stream = body.get("stream") is True
    chat["stream"] = stream
    if stream:
        chat["stream_options"] = {"include_usage": True}
    include = body.get("include")
    asked = isinstance(include, list) and ENCRYPTED in include
    return DoorRequest(chat, envelopes, stream, asked)


# ----------------------------------------------------------------------------- answer


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(16)}"


def reasoning_item(text: str, envelope: str | None, item_id: str) -> dict[str, Any]:
    """A reasoning item: the readable reasoning as its summary, the envelope (if any) as its
    ``encrypted_content``."""
    item: dict[str, Any] = {"id": item_id, "type": "reasoning",
                            "summary": [{"type": "summary_text", "text": text}] if text else []}
    if envelope is not None:
        item["encrypted_content"] = envelope
    return item


def message_item(text: str, item_id: str, status: str = "completed") -> dict[str, Any]:
    return {"id": item_id, "type": "message", "status": status, "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]}


def call_item(call: ToolCall, item_id: str, status: str = "completed") -> dict[str, Any]:
    return {"id": item_id, "type": "function_call", "status": status, "call_id": call.id, "name": call.name,
            "arguments": call.arguments}


def output_items(message: Message, envelope: str | None) -> list[dict[str, Any]]:
    """The output items of one assistant turn: its reasoning first (one item, the envelope on it),
    then its text and calls in order."""
    reasoning = [p for p in message.parts if isinstance(p, Reasoning)]
    out: list[dict[str, Any]] = []
    if reasoning or envelope is not None:
        out.append(reasoning_item("\n\n".join(p.text for p in reasoning if p.text), envelope, new_id("rs")))
    for p in message.parts:
        if isinstance(p, Text) and p.text:
            out.append(message_item(p.text, new_id("msg")))
        elif isinstance(p, ToolCall):
            out.append(call_item(p, new_id("fc")))
    return out


def usage_of(usage: Mapping[str, Any]) -> dict[str, Any]:
    """Chat usage (``prompt_tokens``...), or Anthropic's (``input_tokens``...), as Responses usage."""
    def num(v: Any) -> int:
        return v if isinstance(v, int) and not isinstance(v, bool) else 0

    inp = num(usage.get("prompt_tokens")) or num(usage.get("input_tokens"))
    out = num(usage.get("completion_tokens")) or num(usage.get("output_tokens"))
    cdet = usage.get("completion_tokens_details")
    pdet = usage.get("prompt_tokens_details")
    reasoning = num(cdet.get("reasoning_tokens")) if isinstance(cdet, Mapping) else 0
    cached = num(pdet.get("cached_tokens")) if isinstance(pdet, Mapping) else (
        num(usage.get("prompt_cache_hit_tokens")) or num(usage.get("cache_read_input_tokens")))
    return {"input_tokens": inp, "input_tokens_details": {"cached_tokens": cached}, "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": num(usage.get("total_tokens")) or inp + out}


def response_object(body: Mapping[str, Any], response_id: str, output: list[dict[str, Any]], *,
                    finish: str | None, usage: Mapping[str, Any] | None, created_at: int | None = None
                    ) -> dict[str, Any]:
    """The response object: ``in_progress`` while ``finish`` is None, then ``completed`` (or
    ``incomplete`` when the route stopped at its token limit: chat's ``length``, Anthropic's ``max_tokens``)."""
    status = "in_progress" if finish is None else "incomplete" if finish in ("length", "max_tokens") else "completed"
    asked = body.get("reasoning")
    reasoning: Mapping[str, Any] = asked if isinstance(asked, Mapping) else {}
    tools = [t for t in body.get("tools") or () if isinstance(t, Mapping)]
    return {
        "id": response_id, "object": "response", "created_at": created_at or int(time.time()), "status": status,
        "background": False, "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": body.get("instructions"), "max_output_tokens": body.get("max_output_tokens"),
        "model": body.get("model"), "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True), "previous_response_id": None,
        "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        "store": False, "temperature": body.get("temperature"), "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"), "tools": tools, "top_p": body.get("top_p"),
        "truncation": "disabled", "usage": usage_of(usage) if usage is not None and finish is not None else None,
        "metadata": body.get("metadata") if isinstance(body.get("metadata"), Mapping) else {},
    }
