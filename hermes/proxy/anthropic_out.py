"""The Anthropic Messages front door, response side: the route's turn as a Messages answer.

The route's response is decoded by its own ``ChatDecoder`` into deltas (the recorder's fold);
this renders them as Anthropic does — a whole ``message`` object, or the event stream
(``message_start``, ``content_block_start`` / ``_delta`` / ``_stop`` with ``thinking_delta``,
``signature_delta``, ``text_delta`` and ``input_json_delta``, ``message_delta``,
``message_stop``).

The route's reasoning becomes a ``thinking`` block: its text readable, its ``signature`` an
envelope (``seal``) holding the turn's reasoning parts as the route returned them, so the
client's own echo of the block restores them on the next request. A stream closes the thinking
block when the first text arrives (or at the end), sealing the reasoning folded so far; carriers
that arrive later (a Gemini thought signature on a tool call) go in one more, empty, thinking
block before the tool calls, whose envelope holds the whole turn (a late carrier of a turn
without calls is left to the memory: Claude Code reads a turn's last block as its answer). Tool calls are sent whole at the end (a
route may interleave several calls' fragments, an Anthropic block may not).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from ..core.messages import Message, Reasoning, Text, ToolCall
from ..core.stream import (
    Delta,
    DetailsDelta,
    FinishDelta,
    NativeDelta,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
)

__all__ = ["Seal", "StreamWriter", "error_body", "message_id", "sse", "stop_reason", "usage", "whole_message"]

Seal = Callable[[Sequence[Reasoning]], str]
"""The turn's reasoning parts → the envelope for a thinking block's ``signature``."""

_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "function_call": "tool_use",
         "content_filter": "refusal"}
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
                403: "permission_error", 404: "not_found_error", 408: "timeout_error", 413: "request_too_large",
                429: "rate_limit_error", 529: "overloaded_error"}


def message_id() -> str:
    return "msg_" + secrets.token_hex(12)


def stop_reason(finish: str | None, calls: bool) -> str:
    """Anthropic's ``stop_reason``; a turn with tool calls is ``tool_use`` whatever the route's
    finish says (some answer ``stop`` with calls, and the client runs tools only on ``tool_use``)."""
    return "tool_use" if calls and finish != "length" else _STOP.get(finish or "stop", "end_turn")


def usage(raw: Mapping[str, Any]) -> dict[str, int]:
    """Chat usage in Anthropic's terms: ``input_tokens`` excludes the cached part, as Anthropic counts it."""
    prompt = _int(raw.get("prompt_tokens"))
    details = raw.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
    cached = cached or _int(raw.get("prompt_cache_hit_tokens"))
    out = {"input_tokens": max(prompt - cached, 0), "output_tokens": _int(raw.get("completion_tokens"))}
    if cached:
        out["cache_read_input_tokens"] = cached
    return out


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def error_body(status: int, message: str, type_: str | None = None) -> dict[str, Any]:
    kind = type_ or _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def _input(arguments: str) -> Any:
    try:
        value = orjson.loads(arguments or "{}")
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def whole_message(msg: Message, finish: str | None, raw_usage: Mapping[str, Any], model: str, seal: Seal,
                  msg_id: str | None = None) -> dict[str, Any]:
    """A whole turn as a Messages ``message``: one thinking block first when it reasoned."""
    content: list[dict[str, Any]] = []
    reasoning = msg.reasoning
    if reasoning:
        content.append({"type": "thinking", "thinking": "".join(r.text for r in reasoning),
                        "signature": seal(reasoning)})
    for p in msg.parts:
        if isinstance(p, Text) and p.text:
            content.append({"type": "text", "text": p.text})
        elif isinstance(p, ToolCall):
            content.append({"type": "tool_use", "id": p.id, "name": p.name, "input": _input(p.arguments)})
    return {"id": msg_id or message_id(), "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop_reason(finish, bool(msg.tool_calls)), "stop_sequence": None,
            "usage": usage(raw_usage)}


def sse(event: str, data: Mapping[str, Any]) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


class StreamWriter:
    """Deltas of one streamed turn → Anthropic SSE bytes, one content block open at a time."""

    def __init__(self, snapshot: Callable[[], Message | None], model: str, seal: Seal) -> None:
        self._snapshot = snapshot
        """The turn folded so far (the recorder's), fed before each delta reaches ``feed``."""
        self._seal = seal
        self._model = model
        self._index = -1
        self._open: tuple[str, str] | None = None
        """(kind, delta key) of the open block."""
        self._finish: str | None = None
        self._usage: dict[str, Any] = {}
        self._sealed: tuple[Reasoning, ...] = ()
        """The reasoning the latest envelope holds."""
        self.id = message_id()

    def _turn(self) -> Message:
        return self._snapshot() or Message("assistant", ())

    def start(self) -> bytes:
        msg: dict[str, Any] = {"id": self.id, "type": "message", "role": "assistant", "model": self._model, "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0}}
        return sse("message_start", {"type": "message_start", "message": msg})

    def _begin(self, kind: str, key: str, block: dict[str, Any], out: list[bytes]) -> None:
        self._close(out)
        self._index += 1
        self._open = (kind, key)
        out.append(sse("content_block_start", {"type": "content_block_start", "index": self._index,
                                               "content_block": block}))

    def _delta(self, delta: dict[str, Any], out: list[bytes]) -> None:
        out.append(sse("content_block_delta", {"type": "content_block_delta", "index": self._index, "delta": delta}))

    def _close(self, out: list[bytes]) -> None:
        if self._open is None:
            return
        if self._open[0] == "thinking":
            self._sealed = self._turn().reasoning
            self._delta({"type": "signature_delta", "signature": self._seal(self._sealed)}, out)
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": self._index}))
        self._open = None

    def feed(self, d: Delta) -> bytes:
        out: list[bytes] = []
        if isinstance(d, ReasoningDelta | DetailsDelta | NativeDelta):
            # a reasoning carrier without text (details, a blob) still opens the block its envelope rides in
            if self._open is None or self._open[0] != "thinking":
                if isinstance(d, NativeDelta) and self._index >= 0:
                    return b""  # a late native signature (Gemini, per call): sealed at the end
                self._begin("thinking", "", {"type": "thinking", "thinking": "", "signature": ""}, out)
            if isinstance(d, ReasoningDelta) and d.text:
                self._delta({"type": "thinking_delta", "thinking": d.text}, out)
        elif isinstance(d, TextDelta):
            if d.text:
                if self._open != ("text", d.key):
                    self._begin("text", d.key, {"type": "text", "text": ""}, out)
                self._delta({"type": "text_delta", "text": d.text}, out)
        elif isinstance(d, ToolCallDelta):
            pass  # whole at the end (``end``): calls' fragments may interleave, a block cannot
        elif isinstance(d, UsageDelta):
            self._usage.update(d.usage)
        elif isinstance(d, FinishDelta):
            self._finish = d.reason
        return b"".join(out)

    def end(self) -> bytes:
        out: list[bytes] = []
        self._close(out)
        turn = self._turn()
        if turn.reasoning and turn.reasoning != self._sealed and turn.tool_calls:
            # carriers that came after the thinking closed (a signature on a tool call): one more
            # thinking block, empty, whose envelope holds the whole turn (the last one wins). Only
            # before tool calls: Claude Code takes a turn's last block as its answer text
            self._begin("thinking", "", {"type": "thinking", "thinking": "", "signature": ""}, out)
            self._close(out)
        calls = turn.tool_calls
        for call in calls:
            self._begin("tool", call.id, {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}, out)
            self._delta({"type": "input_json_delta", "partial_json": orjson.dumps(_input(call.arguments)).decode()},
                        out)
        self._close(out)
        u = usage(self._usage)
        out.append(sse("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": stop_reason(self._finish, bool(calls)),
                                                   "stop_sequence": None},
                                         "usage": u}))
        out.append(sse("message_stop", {"type": "message_stop"}))
        return b"".join(out)

    def error(self, status: int, message: str) -> bytes:
        return sse("error", error_body(status, message))
