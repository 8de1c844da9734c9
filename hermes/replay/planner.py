"""``plan_replay``: the whole request's plan, from the per-message planners and the rules that
look across messages (the window, the open tool loop, tool-call ids, thinking off, turn
structure). Pure: the optional ``BuildCache`` only memoises results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..history import open_loop_start, window
from ..messages import Message, Part, Reasoning, ToolCall, ToolResult
from ..resolve import Resolved
from ..routes import at_path, deep_merge
from ..toolids import id_map, valid
from .blocks import plan_blocks
from .cache import BuildCache, common_prefix
from .chat import plan_chat
from .gemini import plan_gemini
from .plan import Decision, Learned, PlannedMessage, ReplayPlan, Settings
from .structure import structure

__all__ = ["plan_replay"]

_PLANNERS = {
    "openai_chat": plan_chat,
    "anthropic": plan_blocks,
    "bedrock": plan_blocks,
    "openai_responses": plan_blocks,
    "gemini": plan_gemini,
}


def plan_replay(
    history: Sequence[Message],
    target: Resolved,
    learned: Learned = Learned(),
    settings: Settings = Settings(),
    *,
    cache: BuildCache | None = None,
) -> ReplayPlan:
    """Decide, per stored part, what the request to ``target`` carries. Pure (the optional
    ``cache`` only memoises results)."""
    known = known_start = 0
    if cache is not None and cache.last_window is not None:
        prev, prev_start = cache.last_window
        if common_prefix(prev, history) == len(prev):
            known, known_start = len(prev), prev_start
    start, msgs = window(history, known=known, known_start=known_start)
    if cache is not None:
        cache.last_window = (list(history), start)
    loop_start = open_loop_start(msgs)
    route = target.route
    planner = _PLANNERS[route.wire]
    planned: list[PlannedMessage] = []
    prefix_key = (route, target.host, target.model, learned, start)
    if cache is not None and cache.last_plan is not None and cache.last_plan[0] == prefix_key:
        _, prev_msgs, prev_loop, prev_planned = cache.last_plan
        keep = min(common_prefix(prev_msgs, msgs), prev_loop, loop_start)
        planned = prev_planned[:keep]
    for offset in range(len(planned), len(msgs)):
        m = msgs[offset]
        index = start + offset
        if m.role != "assistant":
            if cache is None:
                planned.append(PlannedMessage(index, m.role, m.parts))
            else:
                planned.append(cache.get(m, index, lambda m=m, i=index: PlannedMessage(i, m.role, m.parts)))
            continue
        in_loop = offset >= loop_start
        if cache is None:
            planned.append(planner(index, m, target, learned, in_loop))
        else:
            key = (route, target.host, target.model, learned, in_loop, index)
            planned.append(cache.get(m, key, lambda m=m, i=index, loop=in_loop: planner(i, m, target, learned, loop)))
    if cache is not None:
        cache.last_plan = (prefix_key, list(msgs), loop_start, list(planned))
    if route.tool_ids != "any":
        mapping = _request_id_map(msgs, route.tool_ids, cache)
        if mapping:
            planned = [_remap_ids(pm, mapping, cache) for pm in planned]
    notes: list[str] = []
    thinking = settings.thinking
    signed_loop = route.signed_loop and route.policy == "signed"
    if thinking and signed_loop:
        bare = [p for p in planned[loop_start:] if p.role == "assistant" and _needs_thinking(p)]
        if bare:
            thinking = False
            notes.append(
                f"thinking off for this request: open tool-loop turn #{bare[0].index} has no "
                "thinking block this route may receive (it came from another route)"
            )
    if not thinking and signed_loop:
        planned = [_without_reasoning(p) for p in planned]
    planned, placeholder_after = structure(planned, route.wire, cache)
    return ReplayPlan(target, tuple(planned), _request_fields(target, settings, thinking), thinking, tuple(notes),
                      placeholder_after=placeholder_after)


def _part_ids(parts: Sequence[Part]) -> list[str]:
    out: list[str] = []
    for p in parts:  # ``kind`` compares cheaper than isinstance over a union, on every request
        k = p.kind
        if k == "tool_call":
            out.append(p.id)  # type: ignore[union-attr]
        elif k == "tool_result":
            out.append(p.call_id)  # type: ignore[union-attr]
    return out


def _tool_ids(msgs: Sequence[Message]) -> list[str]:
    """Every tool-call id of the request, in history order (calls and the results answering them)."""
    return [i for m in msgs for i in _part_ids(m.parts)]


def _request_id_map(msgs: Sequence[Message], rule: str, cache: BuildCache | None) -> dict[str, str]:
    """original → wire id for the ids of this request that ``rule`` refuses (usually none)."""
    prev = cache.last_ids if cache is not None else None
    if prev is not None and prev[0] == rule and common_prefix(prev[1], msgs) == len(prev[1]):
        fresh = _tool_ids(msgs[len(prev[1]):])
        ids, all_valid = prev[2] + fresh, prev[3] and all(valid(rule, i) for i in fresh)
    else:
        ids = _tool_ids(msgs)
        all_valid = all(valid(rule, i) for i in ids)
    if cache is not None:
        cache.last_ids = (rule, list(msgs), ids, all_valid)
    return {} if all_valid else id_map(rule, ids)


def _remap_ids(pm: PlannedMessage, mapping: Mapping[str, str], cache: BuildCache | None) -> PlannedMessage:
    """``pm`` with its tool-call ids as the target route accepts them (stored history keeps the
    originals). The same planned message with the same mapping gives the same object, so the
    wires' render reuse still sees an unchanged prefix."""
    hit = tuple(sorted({(i, mapping[i]) for i in _part_ids(pm.parts) if i in mapping}))
    if not hit:
        return pm

    def remapped() -> PlannedMessage:
        parts = tuple(replace(p, id=mapping.get(p.id, p.id)) if isinstance(p, ToolCall)
                      else replace(p, call_id=mapping.get(p.call_id, p.call_id)) if isinstance(p, ToolResult)
                      else p for p in pm.parts)
        sigs = {mapping.get(k, k): v for k, v in pm.tool_signatures.items()}
        return replace(pm, parts=parts, tool_signatures=sigs)

    return remapped() if cache is None else cache.get(pm, ("tool_ids", hit), remapped)


def _without_reasoning(p: PlannedMessage) -> PlannedMessage:
    """Thinking off on a ``signed_loop`` row: a thinking block in the request would be rejected."""
    if not any(isinstance(x, Reasoning) for x in p.parts):
        return p
    decisions = tuple(Decision(d.part, "drop", (), "thinking is off for this request") if d.action != "drop" else d
                      for d in p.decisions)
    return replace(p, parts=tuple(x for x in p.parts if not isinstance(x, Reasoning)), decisions=decisions)


def _needs_thinking(p: PlannedMessage) -> bool:
    return any(isinstance(x, ToolCall) for x in p.parts) and not any(isinstance(x, Reasoning) for x in p.parts)


def _request_fields(target: Resolved, settings: Settings, thinking: bool) -> dict[str, Any]:
    """The row's thinking switches (or its off switch), plus the effort where the route and the
    model take it: an effort the route's map lacks, or the model does not accept, is not sent."""
    route = target.route
    if not thinking:
        return deep_merge({}, route.thinking_off)
    out = deep_merge({}, route.switches)
    if settings.effort and route.wire == "openai_chat":
        value = route.effort_map.get(settings.effort) if route.effort_map else settings.effort
        if value and target.profile.takes_effort(value):
            out = deep_merge(out, at_path(route.effort_field, value))
    return out
