"""The Responses door's stream: the route's deltas, as they arrive, in the Responses event grammar.

Items are sent one after another, as the Responses API sends them: ``response.created``, then
per output item ``response.output_item.added``, its deltas
(``response.reasoning_summary_text.delta``, ``response.output_text.delta``,
``response.function_call_arguments.delta``) and ``response.output_item.done``, then
``response.completed`` with the whole response object (or ``response.incomplete`` at the token
limit, ``response.failed`` when the route's stream broke).

The reasoning item is done when the first text or call begins, its ``encrypted_content`` an
envelope of the reasoning as known then. Some routes send more to restore after that (a
signature on each tool call): when the finished turn's reasoning differs from what that
envelope holds, one more reasoning item, without summary, carries the complete envelope last
(of a turn's envelopes the last that opens wins, ``door.open_turns``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from ..core.messages import Reasoning
from ..core.stream import (
    Delta,
    ReasoningDelta,
    Response,
    TextDelta,
    ToolCallDelta,
)
from .responses_door import message_item, new_id, reasoning_item, response_object

__all__ = ["ResponsesEvents"]

Seal = Callable[[Sequence[Reasoning]], str | None]
"""The turn's reasoning parts → an envelope (None: nothing to carry, or not asked for)."""


def _sse(event: dict[str, Any]) -> bytes:
    return b"event: " + event["type"].encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


class ResponsesEvents:
    """One response's events, built from the deltas of the route's answer (module docstring)."""

    def __init__(self, body: Mapping[str, Any], seal: Seal | None, thought: Callable[[], Sequence[Reasoning]]) -> None:
        """``thought``: the reasoning of the turn as folded so far (the recorder's)."""
        self.body = body
        self.id = new_id("resp")
        self.seal = seal
        self._seq = 0
        self._out: list[dict[str, Any]] = []
        """Output items done so far, in order."""
        self._open: str | None = None
        """What is open: ``reasoning``, ``text`` or a tool-call delta key."""
        self._item: dict[str, Any] = {}
        self._buf: list[str] = []
        self._thought = thought
        self._sealed: tuple[Reasoning, ...] | None = None
        """What the last envelope sent holds."""

    def _ev(self, kind: str, **fields: Any) -> bytes:
        event = {"type": kind, "sequence_number": self._seq, **fields}
        self._seq += 1
        return _sse(event)

    def _obj(self, finish: str | None, usage: Mapping[str, Any] | None) -> dict[str, Any]:
        return response_object(self.body, self.id, list(self._out), finish=finish, usage=usage)

    def start(self) -> bytes:
        obj = self._obj(None, None)
        return self._ev("response.created", response=obj) + self._ev("response.in_progress", response=obj)

    # --- items ------------------------------------------------------------------------
    def _at(self) -> dict[str, Any]:
        return {"item_id": self._item["id"], "output_index": len(self._out)}

    def _close(self) -> bytes:
        """The open item's done events; it joins the output."""
        if self._open is None:
            return b""
        out = b""
        at, text = self._at(), "".join(self._buf)
        item = self._item
        if self._open == "reasoning":
            part: dict[str, Any] = {"type": "summary_text", "text": text}
            if text:
                out += self._ev("response.reasoning_summary_text.done", **at, summary_index=0, text=text)
                out += self._ev("response.reasoning_summary_part.done", **at, summary_index=0, part=part)
            item = reasoning_item(text, self._envelope(tuple(self._thought())), item["id"])
        elif self._open == "text":
            part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
            out += self._ev("response.output_text.done", **at, content_index=0, text=text, logprobs=[])
            out += self._ev("response.content_part.done", **at, content_index=0, part=part)
            item = message_item(text, item["id"])
        else:
            item = {**item, "arguments": text, "status": "completed"}
            out += self._ev("response.function_call_arguments.done", **at, name=item["name"], arguments=text)
        out += self._ev("response.output_item.done", output_index=len(self._out), item=item)
        self._out.append(item)
        self._open, self._item, self._buf = None, {}, []
        return out

    def _begin(self, kind: str, item: dict[str, Any]) -> bytes:
        out = self._close()
        self._open, self._item, self._buf = kind, item, []
        out += self._ev("response.output_item.added", output_index=len(self._out), item=item)
        at = self._at()
        if kind == "reasoning":
            out += self._ev("response.reasoning_summary_part.added", **at, summary_index=0,
                            part={"type": "summary_text", "text": ""})
        elif kind == "text":
            out += self._ev("response.content_part.added", **at, content_index=0,
                            part={"type": "output_text", "text": "", "annotations": [], "logprobs": []})
        return out

    def _envelope(self, parts: tuple[Reasoning, ...]) -> str | None:
        if self.seal is None or not parts:
            return None
        self._sealed = parts
        return self.seal(parts)

    # --- deltas -----------------------------------------------------------------------
    def feed(self, deltas: Sequence[Delta]) -> bytes:
        out = b""
        for d in deltas:
            match d:
                case ReasoningDelta() if d.text:
                    if self._open != "reasoning":
                        out += self._begin("reasoning", reasoning_item("", None, new_id("rs")))
                    self._buf.append(d.text)
                    out += self._ev("response.reasoning_summary_text.delta", **self._at(), summary_index=0,
                                    delta=d.text)
                case TextDelta() if d.text:
                    if self._open != "text":
                        out += self._begin("text", {"id": new_id("msg"), "type": "message", "status": "in_progress",
                                                    "role": "assistant", "content": []})
                    self._buf.append(d.text)
                    out += self._ev("response.output_text.delta", **self._at(), content_index=0, delta=d.text,
                                    logprobs=[])
                case ToolCallDelta():
                    if self._open != "call:" + d.key:
                        out += self._begin("call:" + d.key, {"id": new_id("fc"), "type": "function_call",
                                                             "status": "in_progress", "call_id": d.id or "",
                                                             "name": d.name or "", "arguments": ""})
                    if d.id:
                        self._item["call_id"] = d.id
                    if d.name:
                        self._item["name"] = d.name
                    if d.arguments:
                        self._buf.append(d.arguments)
                        out += self._ev("response.function_call_arguments.delta", **self._at(), delta=d.arguments)
        return out

    def finish(self, result: Response | None, error: str = "") -> bytes:
        """The last events: the open item done, the complete envelope if more came after the
        first, then ``response.completed`` (``incomplete``), or ``response.failed`` when the
        route's answer did not finish cleanly (``result`` None)."""
        if result is None:
            obj = {**self._obj(None, None), "status": "failed",
                   "error": {"code": "server_error", "message": error or "the route's stream ended before it finished"}}
            return self._close() + self._ev("response.failed", response=obj)
        out = self._close()
        final = result.message.reasoning
        if self.seal is not None and final and final != self._sealed:
            item = reasoning_item("", self._envelope(final), new_id("rs"))
            out += self._ev("response.output_item.added", output_index=len(self._out), item=item)
            out += self._ev("response.output_item.done", output_index=len(self._out), item=item)
            self._out.append(item)
        obj = self._obj(result.finish_reason, result.usage)
        kind = "response.incomplete" if obj["status"] == "incomplete" else "response.completed"
        return out + self._ev(kind, response=obj)
