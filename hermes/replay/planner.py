"""``plan_replay``: the whole request's plan, from the per-message planners and the rules that
look across messages (the window, the open tool loop, tool-call ids, thinking off, turn
structure). Pure and always whole; ``hermes.builder`` wraps these same steps in its caches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..core.history import open_loop_start, window
from ..core.messages import Message, Part, Reasoning, ToolCall, ToolResult
from ..routing.resolve import Resolved
from ..routing.routes import at_path, deep_merge
from ..routing.toolids import id_map, valid
from ..wire import get_wire
from .plan import Decision, Learned, PlannedMessage, ReplayPlan, Settings
from .structure import structure

__all__ = ["effort_fields", "ids_hit", "needs_thinking", "plan_message", "plan_replay", "remap_ids",
           "request_fields", "strips_off", "thinking_for", "tool_ids", "without_reasoning"]

Planner = Callable[[int, Message, Resolved, Learned, bool], PlannedMessage]

def plan_replay(history: Sequence[Message], target: Resolved, learned: Learned = Learned(),
                settings: Settings = Settings()) -> ReplayPlan:
    """Decide, per stored part, what the request to ``target`` carries: every message of the window."""
    route = target.route
    planner = get_wire(route.wire).PLANNER
    start, msgs = window(history)
    loop_start = open_loop_start(msgs)
    planned = [plan_message(planner, start + o, m, target, learned, o >= loop_start) for o, m in enumerate(msgs)]
    if route.tool_ids != "any":
        ids = tool_ids(msgs)
        if not all(valid(route.tool_ids, i) for i in ids):
            mapping = id_map(route.tool_ids, ids)
            planned = [remap_ids(pm, mapping) for pm in planned]
    thinking, notes = thinking_for(planned[loop_start:], target, settings)
    if not thinking and strips_off(target):
        planned = [without_reasoning(p) for p in planned]
    planned, placeholder_after = structure(planned, route.wire)
    return ReplayPlan(target, tuple(planned), request_fields(target, settings, thinking), thinking, notes,
                      placeholder_after=placeholder_after)


def plan_message(planner: Planner, index: int, m: Message, target: Resolved, learned: Learned,
                 in_loop: bool) -> PlannedMessage:
    """One stored message planned: an assistant message by the wire's planner, others as they are."""
    if m.role == "assistant":
        return planner(index, m, target, learned, in_loop)
    return PlannedMessage(index, m.role, m.parts)


def strips_off(target: Resolved) -> bool:
    """Thinking off strips every thinking block (a ``signed_loop`` row; a model that cannot
    stop thinking keeps its blocks: "off" asks it for the least)."""
    route = target.route
    return route.signed_loop and route.policy == "signed" and not target.profile.keeps_thinking


def thinking_for(loop: Sequence[PlannedMessage], target: Resolved, settings: Settings) -> tuple[bool, tuple[str, ...]]:
    """(thinking on, notes) for a request whose open tool loop is ``loop``: off when a loop turn
    has no thinking block this route may receive."""
    if settings.thinking and strips_off(target):
        bare = [p for p in loop if p.role == "assistant" and needs_thinking(p)]
        if bare:
            return False, (f"thinking off for this request: open tool-loop turn #{bare[0].index} has no "
                           "thinking block this route may receive (it came from another route)",)
    return settings.thinking, ()


def _part_ids(parts: Sequence[Part]) -> list[str]:
    out: list[str] = []
    for p in parts:  # ``kind`` compares cheaper than isinstance over a union, on every request
        k = p.kind
        if k == "tool_call":
            out.append(p.id)  # type: ignore[union-attr]
        elif k == "tool_result":
            out.append(p.call_id)  # type: ignore[union-attr]
    return out


def tool_ids(msgs: Sequence[Message]) -> list[str]:
    """Every tool-call id of the request, in history order (calls and the results answering them)."""
    return [i for m in msgs for i in _part_ids(m.parts)]


def ids_hit(pm: PlannedMessage, mapping: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The entries of ``mapping`` that rename an id of ``pm`` (what its remapped form depends on)."""
    return tuple(sorted({(i, mapping[i]) for i in _part_ids(pm.parts) if i in mapping}))


def remap_ids(pm: PlannedMessage, mapping: Mapping[str, str]) -> PlannedMessage:
    """``pm`` with its tool-call ids as the target route accepts them (stored history keeps the originals)."""
    if not ids_hit(pm, mapping):
        return pm
    parts = tuple(replace(p, id=mapping.get(p.id, p.id)) if isinstance(p, ToolCall)
                  else replace(p, call_id=mapping.get(p.call_id, p.call_id)) if isinstance(p, ToolResult)
                  else p for p in pm.parts)
    sigs = {mapping.get(k, k): v for k, v in pm.tool_signatures.items()}
    return replace(pm, parts=parts, tool_signatures=sigs)


def without_reasoning(p: PlannedMessage) -> PlannedMessage:
    """Thinking off on a ``signed_loop`` row: a thinking block in the request would be rejected."""
    if not any(isinstance(x, Reasoning) for x in p.parts):
        return p
    decisions = tuple(Decision(d.part, "drop", (), "thinking is off for this request") if d.action != "drop"
                      else d for d in p.decisions)
    return replace(p, parts=tuple(x for x in p.parts if not isinstance(x, Reasoning)), decisions=decisions)


def needs_thinking(p: PlannedMessage) -> bool:
    return any(isinstance(x, ToolCall) for x in p.parts) and not any(isinstance(x, Reasoning) for x in p.parts)


def request_fields(target: Resolved, settings: Settings, thinking: bool) -> dict[str, Any]:
    """The row's thinking switches (or its off switch), plus the effort where the route and the
    model take it: an effort the route's map lacks, or the model does not accept, is not sent."""
    route = target.route
    if not thinking:
        return deep_merge({}, route.thinking_off)
    out = deep_merge({}, route.switches)
    if settings.effort:
        out = deep_merge(out, effort_fields(target, settings.effort))
    return out


def effort_fields(target: Resolved, effort: str) -> dict[str, Any]:
    """Where a chat route takes a reasoning effort, and the value it takes for ``effort``;
    empty when the route's map lacks it or the model does not accept it."""
    route = target.route
    if route.wire != "openai_chat":
        return {}
    value = route.effort_map.get(effort) if route.effort_map else effort
    if value and target.profile.takes_effort(value):
        return at_path(route.effort_field, value)
    return {}
