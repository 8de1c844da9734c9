"""The Anthropic Messages front door, request side: a Messages body as the route's chat body. Pure.

Claude Code (and any Anthropic SDK client) speaks ``POST /v1/messages``; a chat-completions route
takes ``chat/completions``. This turns one into the other so the proxy's one pipeline (rewrite →
planner → chat wire → recorder) serves it unchanged:

* ``system`` (text or text blocks), and ``system`` messages among the turns (Claude Code sends
  some) → system messages; ``cache_control`` dropped;
* user ``text`` / ``image`` blocks → a user message; ``tool_result`` blocks → ``tool`` messages,
  placed first (a chat route wants results right after the calls they answer);
* assistant ``text`` / ``tool_use`` → content and ``tool_calls``; ``thinking`` blocks whose
  ``signature`` is one of our envelopes give back the turn's reasoning parts exactly as the route
  returned them (``door.open_turns``): the neutral turn goes to ``rewrite`` as a recalled turn, so
  the planner restores the route's own carriers. A signature that does not open (another
  deployment's, altered, Anthropic's own) restores nothing — the memory and the pad still apply;
* ``tools`` / ``tool_choice`` / ``max_tokens`` / ``stop_sequences`` / ``temperature`` / ``top_p``
  / ``stream`` map to their chat names; ``thinking: disabled`` sends the route's thinking-off
  fields, ``enabled`` / ``adaptive`` its thinking switches, and ``output_config.effort`` its
  reasoning effort where the model takes one. A block or tool the route cannot take is a ``DoorError`` naming it (Anthropic's
  ``invalid_request_error``), never a silent drop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..replay import effort_fields
from ..routing.resolve import Resolved
from ..routing.routes import deep_merge

__all__ = ["DoorError", "Translated", "looks_like_messages", "to_chat"]

_SERVED = frozenset({"model", "messages", "system", "max_tokens", "stop_sequences", "temperature", "top_p",
                     "stream", "tools", "tool_choice", "thinking", "output_config"})
"""Top-level Messages keys this door translates; the rest (``metadata``, ``top_k``,
``service_tier``, ``context_management`` ...) tune Anthropic's own service and are dropped,
their names logged."""


class DoorError(Exception):
    """A request this door cannot serve: Anthropic's error ``type`` and a message naming why."""

    def __init__(self, message: str, status: int = 400, type_: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status = status
        self.type = type_
        self.message = message


@dataclass(frozen=True, slots=True)
class Translated:
    body: dict[str, Any]
    """The chat-completions body for the route."""
    envelopes: dict[int, list[str]] = field(default_factory=dict)
    """Index of a chat assistant message → the signatures its thinking blocks came with
    (``door.open_turns`` opens them)."""
    redacted: int = 0
    """``redacted_thinking`` blocks, which no chat route takes (counted for the log)."""
    dropped: tuple[str, ...] = ()
    """Top-level keys with no chat counterpart, left out."""


_EFFORTS = {"max": "xhigh"}
"""Anthropic's ``output_config.effort`` names where the routes' differ (low, medium, high are shared)."""
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


def looks_like_messages(body: Mapping[str, Any]) -> bool:
    """Whether a chat-completions request is really an Anthropic Messages body (a top-level
    ``system``, or Anthropic's own content blocks), sent to the wrong door."""
    if "system" in body:
        return True
    msgs = body.get("messages")
    return isinstance(msgs, list) and any(
        isinstance(m, Mapping) and isinstance(m.get("content"), list)
        and any(isinstance(b, Mapping) and b.get("type") in _ANTHROPIC_BLOCKS for b in m["content"])
        for m in msgs)


def _need(cond: bool, message: str) -> None:
    if not cond:
        raise DoorError(message)


def _blocks(content: Any, where: str) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    _need(isinstance(content, list) and all(isinstance(b, Mapping) for b in content),
          f"{where}: content must be a string or a list of content blocks")
    return list(content)


def _text_of(blocks: Sequence[Mapping[str, Any]], where: str) -> str:
    out = []
    for b in blocks:
        _need(b.get("type") == "text" and isinstance(b.get("text"), str), f"{where}: only text blocks are served here")
        out.append(b["text"])
    return "\n\n".join(out)


def _image(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    src = block.get("source")
    if not isinstance(src, Mapping):
        raise DoorError(f"{where}: image block without a source")
    if src.get("type") == "base64":
        return {"type": "image_url", "image_url": {"url": f"data:{src.get('media_type')};base64,{src.get('data')}"}}
    if src.get("type") == "url":
        return {"type": "image_url", "image_url": {"url": src.get("url")}}
    raise DoorError(f"{where}: image source type {src.get('type')!r} cannot be sent to a chat-completions route")


def _result_content(block: Mapping[str, Any], where: str) -> str:
    content = block.get("content", "")
    if isinstance(content, str):
        text = content
    else:
        pieces = []
        for b in _blocks(content, where):
            if b.get("type") == "text":
                pieces.append(str(b.get("text", "")))
            elif b.get("type") == "image":
                pieces.append("[an image was returned here; this route takes no images in tool results]")
            else:
                raise DoorError(f"{where}: a tool_result holding a {b.get('type')!r} block cannot be sent to a "
                                "chat-completions route")
        text = "\n\n".join(pieces)
    return f"Error: {text}" if block.get("is_error") and not text.startswith("Error") else text


def _user(blocks: Sequence[Mapping[str, Any]], where: str, out: list[dict[str, Any]]) -> None:
    parts: list[dict[str, Any]] = []
    for j, b in enumerate(blocks):
        kind = b.get("type")
        at = f"{where}.content.{j}"
        if kind == "tool_result":
            out.append({"role": "tool", "tool_call_id": str(b.get("tool_use_id", "")),
                        "content": _result_content(b, at)})
        elif kind == "text":
            parts.append({"type": "text", "text": str(b.get("text", ""))})
        elif kind == "image":
            parts.append(_image(b, at))
        else:
            raise DoorError(f"{at}: a {kind!r} block cannot be sent to a chat-completions route "
                            "(served: text, image, tool_result)")
    if parts:
        simple = all(p["type"] == "text" for p in parts)
        out.append({"role": "user", "content": "\n\n".join(p["text"] for p in parts) if simple else parts})


def _assistant(blocks: Sequence[Mapping[str, Any]], where: str, out: list[dict[str, Any]],
               envelopes: dict[int, list[str]]) -> int:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    sigs: list[str] = []
    redacted = 0
    for j, b in enumerate(blocks):
        kind = b.get("type")
        if kind == "text":
            texts.append(str(b.get("text", "")))
        elif kind == "tool_use":
            _need(isinstance(b.get("id"), str) and isinstance(b.get("name"), str),
                  f"{where}.content.{j}: tool_use needs an id and a name")
            calls.append({"id": b["id"], "type": "function",
                          "function": {"name": b["name"], "arguments": orjson.dumps(b.get("input") or {}).decode()}})
        elif kind == "thinking":
            if isinstance(b.get("signature"), str) and b["signature"]:
                sigs.append(b["signature"])
        elif kind == "redacted_thinking":
            redacted += 1
        else:
            raise DoorError(f"{where}.content.{j}: a {kind!r} block cannot be sent to a chat-completions route "
                            "(served: text, tool_use, thinking)")
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        msg["tool_calls"] = calls
    if sigs:
        envelopes[len(out)] = sigs
    out.append(msg)
    return redacted


def _tools(tools: Any) -> list[dict[str, Any]]:
    _need(isinstance(tools, list), "tools: must be a list")
    out = []
    for i, t in enumerate(tools):
        _need(isinstance(t, Mapping) and isinstance(t.get("name"), str), f"tools.{i}: a tool needs a name")
        kind = t.get("type")
        if kind not in (None, "custom") or "input_schema" not in t:
            raise DoorError(f"tools.{i}: {t.get('name')!r} is an Anthropic server tool ({kind}); a chat-completions "
                            "route runs only client tools with an input_schema")
        fn: dict[str, Any] = {"name": t["name"], "parameters": t["input_schema"]}
        if t.get("description"):
            fn["description"] = t["description"]
        out.append({"type": "function", "function": fn})
    return out


def _tool_choice(choice: Any, body: dict[str, Any]) -> None:
    _need(isinstance(choice, Mapping), "tool_choice: must be an object")
    kind = choice.get("type")
    if kind == "auto":
        body["tool_choice"] = "auto"
    elif kind == "any":
        body["tool_choice"] = "required"
    elif kind == "none":
        body["tool_choice"] = "none"
    elif kind == "tool":
        body["tool_choice"] = {"type": "function", "function": {"name": str(choice.get("name", ""))}}
    else:
        raise DoorError(f"tool_choice: unknown type {kind!r}")
    if choice.get("disable_parallel_tool_use") is True:
        body["parallel_tool_calls"] = False


def to_chat(req: Mapping[str, Any], target: Resolved) -> Translated:
    """The chat-completions body for a Messages request, with the signatures to open;
    DoorError for what cannot be served."""
    row = target.route
    _need(isinstance(req.get("model"), str) and bool(req.get("model")), "model: field required")
    _need(isinstance(req.get("messages"), list), "messages: field required")
    dropped = tuple(sorted(k for k in req if k not in _SERVED))
    msgs: list[dict[str, Any]] = []
    system = req.get("system")
    if system:
        msgs.append({"role": "system", "content": _text_of(_blocks(system, "system"), "system")})
    envelopes: dict[int, list[str]] = {}
    redacted = 0
    for i, m in enumerate(req["messages"]):
        where = f"messages.{i}"
        _need(isinstance(m, Mapping) and m.get("role") in ("user", "assistant", "system"),
              f"{where}: role must be 'user', 'assistant' or 'system'")
        blocks = _blocks(m.get("content"), where)
        if m["role"] == "system":  # Claude Code sends context as system messages between turns
            msgs.append({"role": "system", "content": _text_of(blocks, where)})
        elif m["role"] == "user":
            _user(blocks, where, msgs)
        else:
            redacted += _assistant(blocks, where, msgs, envelopes)
    body: dict[str, Any] = {"model": req["model"], "messages": msgs}
    if "max_tokens" in req:
        body["max_tokens"] = req["max_tokens"]
    for a, b in (("stop_sequences", "stop"), ("temperature", "temperature"), ("top_p", "top_p")):
        if req.get(a) is not None:
            body[b] = req[a]
    if req.get("tools"):
        body["tools"] = _tools(req["tools"])
    if req.get("tool_choice") is not None and body.get("tools"):
        _tool_choice(req["tool_choice"], body)
    if req.get("stream"):
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    thinking = req.get("thinking")
    kind = thinking.get("type") if isinstance(thinking, Mapping) else None
    if kind == "disabled":
        body = deep_merge(body, row.thinking_off)
    elif kind in ("enabled", "adaptive"):  # asked to think: the route's own switch (OpenRouter's Claude needs it)
        body = deep_merge(body, row.switches)
        config = req.get("output_config")
        effort = config.get("effort") if isinstance(config, Mapping) else None
        if isinstance(effort, str) and effort:
            body = deep_merge(body, effort_fields(target, _EFFORTS.get(effort, effort)))
    return Translated(body, envelopes, redacted, dropped)
