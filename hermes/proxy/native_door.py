"""A front door's request on a route of another wire (Anthropic Messages): the runtime's own build. Pure.

The Responses door turns its client's items into chat messages (``responses_door``). A chat route
takes those as they are (``rewrite`` patches the reasoning keys); an Anthropic route does not
speak chat at all. So here the messages become the neutral history — each assistant turn the
one its envelope opened to (``door.open_turns``: the route's thinking blocks, signatures and
all), or, without one, what it shows — and the request is built the way ``hermes chat`` builds
it: ``plan_replay`` for the route, then the route's wire (``provider.build_body``). Signed
blocks go back byte for byte because the planner gets back the very parts the route returned.

Only what the wire can say is translated: an image in the history is refused (400) rather
than dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..agent.provider import build_body
from ..core.messages import Message, Part, Text, ToolResult
from ..rejections import ValueRule, apply_values
from ..rejections.values import with_lessons
from ..replay import Learned, ReplayPlan, Settings, plan_replay
from ..routing.resolve import Resolved
from ..serving.http import ApiError
from ..wire import ToolSpec, get_wire
from .rewrite import decode_message

__all__ = ["NativeRequest", "build", "history_of"]

_CHOICE = {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}}
"""Chat ``tool_choice`` values as Anthropic's (the door's chat request names them the chat way)."""


@dataclass(frozen=True, slots=True)
class NativeRequest:
    """One request for a native-wire route, with what its refusal is classified against."""

    target: Resolved
    """The route's target, with its value lessons folded into the profile."""
    plan: ReplayPlan
    body: dict[str, Any]
    url: str
    headers: dict[str, str]
    """The wire's own headers (``anthropic-version``, betas); the credential is the caller's."""


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    raise ApiError(400, "invalid_request", f"{where}: images are not served on this route's Responses door")


def history_of(messages: Sequence[Mapping[str, Any]], opened: Mapping[int, Message], target: Resolved) -> list[Message]:
    """The neutral history of a door's chat ``messages``: opened turns as they were recorded,
    every other assistant turn as it shows (text and calls), results by their call ids."""
    out: list[Message] = []
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "assistant":
            turn = opened.get(i) or decode_message(m, target)
            out.append(turn if turn is not None else Message("assistant", ()))
        elif role == "tool":
            out.append(Message("tool", (ToolResult(str(m.get("tool_call_id", "")), _text(m.get("content"), f"messages[{i}]")),)))
        else:
            parts: tuple[Part, ...] = (Text(_text(m.get("content"), f"messages[{i}]")),)
            out.append(Message("system" if role == "system" else "user", parts))
    return out


def _tools(chat: Mapping[str, Any]) -> list[ToolSpec]:
    out = []
    for t in chat.get("tools") or ():
        fn = t["function"]
        out.append(ToolSpec(fn["name"], fn.get("description", ""), fn.get("parameters") or {"type": "object",
                                                                                          "properties": {}}))
    return out


def build(chat: Mapping[str, Any], history: Sequence[Message], target: Resolved, learned: Learned,
          values: Sequence[ValueRule], *, effort: str | None, stream: bool) -> NativeRequest:
    """The route's request for a door's chat body ``chat`` (tools, tool choice, stream) and its
    neutral ``history``: planned and rendered by the route's own wire, value lessons applied."""
    if values and (profile := with_lessons(target.profile, values)) is not target.profile:
        target = replace(target, profile=profile)
    wire = get_wire(target.route.wire)
    settings = Settings(thinking=True, effort=effort or None)
    plan = plan_replay(history, target, learned, settings)
    body = build_body(wire, plan, tools=_tools(chat), settings=settings, stream=stream)
    choice = chat.get("tool_choice")
    if target.route.wire == "anthropic" and body.get("tools") and choice is not None:
        picked = _CHOICE.get(choice) if isinstance(choice, str) else {
            "type": "tool", "name": str(choice["function"]["name"])}
        if picked is not None and not (plan.thinking and picked["type"] in ("any", "tool")):
            body["tool_choice"] = picked  # thinking takes only auto / none: a forced call is left to the model
    if values:
        body = apply_values(body, values)
    url, headers = wire.endpoint(target, stream=stream)
    return NativeRequest(target, plan, body, url, headers)
