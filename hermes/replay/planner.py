"""``plan_replay``: the whole request's plan, from the per-message planners and the rules that
look across messages (the window, the open tool loop, tool-call ids, thinking off, turn
structure). Pure: the optional ``BuildMemo`` only memoises results, by value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..history import latest_checkpoint, open_loop_start, window
from ..messages import Message, Part, Reasoning, ToolCall, ToolResult
from ..resolve import Resolved
from ..routes import at_path, deep_merge
from ..toolids import extend_id_map, id_map, valid
from .blocks import plan_blocks
from .chat import plan_chat
from .gemini import plan_gemini
from .memo import BuildMemo, context, digests, shared_prefix
from .plan import Decision, Learned, PlannedMessage, ReplayPlan, Settings
from .runs import Run, closing_side, matching
from .structure import structure, turn_sides

__all__ = ["effort_fields", "plan_replay", "tool_ids_ok"]

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
    cache: BuildMemo | None = None,
) -> ReplayPlan:
    """Decide, per stored part, what the request to ``target`` carries. Pure (the optional
    ``cache``, the conversation's ``BuildMemo``, only memoises results by value)."""
    route = target.route
    planner = _PLANNERS[route.wire]
    kept: tuple[Run, ...] = ()
    if cache is None:
        start, msgs = window(history)
        loop_start = open_loop_start(msgs)
        planned = [planner(start + o, m, target, learned, o >= loop_start) if m.role == "assistant"
                   else PlannedMessage(start + o, m.role, m.parts) for o, m in enumerate(msgs)]
        off = 0
    else:
        start, msgs, planned, loop_start, kept = _planned(cache, history, target, learned)
        if kept and not _runs_hold(kept, planned, loop_start - (kept[-1].end - start), target, settings):
            start, msgs, planned, loop_start, kept = _planned(cache, history, target, learned, runs=False)
        off = kept[-1].end - start if kept else 0
    if route.tool_ids != "any" and not kept:  # with kept runs every id is one the route takes
        mapping = _request_id_map(msgs, route.tool_ids, cache)
        if mapping:
            planned = _remap_all(planned, mapping, cache)
    notes: list[str] = []
    thinking = settings.thinking
    # a model that cannot stop thinking keeps its thinking blocks: "off" asks it for the least
    signed_loop = route.signed_loop and route.policy == "signed" and not target.profile.keeps_thinking
    if thinking and signed_loop:
        bare = [p for p in planned[loop_start - off:] if p.role == "assistant" and _needs_thinking(p)]
        if bare:
            thinking = False
            notes.append(
                f"thinking off for this request: open tool-loop turn #{bare[0].index} has no "
                "thinking block this route may receive (it came from another route)"
            )
    if not thinking and signed_loop:
        planned = [_without_reasoning(p, cache) for p in planned]
    planned, placeholder_after = structure(planned, route.wire, cache, after=closing_side(kept))
    return ReplayPlan(target, tuple(planned), _request_fields(target, settings, thinking), thinking, tuple(notes),
                      placeholder_after=placeholder_after, kept=kept)


def _runs_hold(kept: Sequence[Run], planned: Sequence[PlannedMessage], loop_start: int, target: Resolved,
               settings: Settings) -> bool:
    """Whether the request built after the kept runs ``kept`` (``planned``: the messages after
    them, the open loop from ``loop_start``) keeps every condition a run was built under
    (``replay.runs``); else the request is planned whole."""
    route = target.route
    if route.signed_loop and route.policy == "signed" and (
            not settings.thinking
            or any(p.role == "assistant" and _needs_thinking(p) for p in planned[loop_start:])):
        return False  # thinking off: every message loses its thinking blocks
    if not (all(r.ids_ok for r in kept) and tool_ids_ok(planned, route.tool_ids)):
        return False  # the request's ids get a mapping, which may rename ids inside a run
    side = turn_sides(planned, route.wire)[0]
    return side is None or side != closing_side(kept)  # the first turn after the runs opens a turn of its own


def _planned(memo: BuildMemo, history: Sequence[Message], target: Resolved, learned: Learned, *,
             runs: bool = True) -> tuple[int, Sequence[Message], list[PlannedMessage], int, tuple[Run, ...]]:
    """(window start, window, planned messages, open loop start, kept runs) through the memo:
    the session's kept runs that match the history stand for its first messages (``runs=False``:
    never), the scans reuse what the previous request's digests agree on, each other message is
    planned once per key. ``planned`` starts after the runs."""
    ds = digests(history)
    ctx = context(target, learned)
    memo.use_context(ctx)
    kept: tuple[Run, ...] = ()
    chain = memo.runs.get(ctx) if runs else None
    if chain:
        w = chain[0].window
        kept = matching(chain, ds, w + open_loop_start(history[w:] if w else history))
        if kept and latest_checkpoint(history, kept[-1].end) is not None:
            kept = ()  # a newer checkpoint: the window starts after the runs
    if kept:
        start = kept[0].window
        msgs = history[start:] if start else history
    else:
        known = known_start = 0
        if memo.last_window is not None:
            prev, prev_start = memo.last_window
            if shared_prefix(prev, ds) == len(prev):
                known, known_start = len(prev), prev_start
        start, msgs = window(history, known=known, known_start=known_start)
    memo.last_window = (ds, start)
    ds = ds[start:]
    loop_start = open_loop_start(msgs)
    first = kept[-1].end - start if kept else 0
    planned: list[PlannedMessage] = []
    if memo.last_plan is not None and memo.last_plan[0] == (ctx, start, first):
        _, prev_ds, prev_loop, prev_planned = memo.last_plan
        planned = prev_planned[:max(0, min(shared_prefix(prev_ds, ds), prev_loop, loop_start) - first)]
    planner = _PLANNERS[target.route.wire]
    for offset in range(first + len(planned), len(msgs)):
        m = msgs[offset]
        index = start + offset
        loop = m.role == "assistant" and offset >= loop_start
        key = (ctx, index, ds[offset], loop)
        pm = memo.plans.get(key)
        if pm is None:
            pm = (planner(index, m, target, learned, loop) if m.role == "assistant"
                  else PlannedMessage(index, m.role, m.parts))
            pm.key = key
            memo.plans[key] = pm
        planned.append(pm)
    memo.last_plan = ((ctx, start, first), ds, loop_start, list(planned))
    return start, msgs, planned, loop_start, kept


def tool_ids_ok(planned: Sequence[PlannedMessage], rule: str) -> bool:
    """Every tool-call id in ``planned`` is one the route's id ``rule`` accepts as it is."""
    return rule == "any" or all(valid(rule, i) for pm in planned for i in _part_ids(pm.parts))


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


def _request_id_map(msgs: Sequence[Message], rule: str, cache: BuildMemo | None) -> dict[str, str]:
    """original → wire id for the ids of this request that ``rule`` refuses (usually none);
    with ``cache``, the previous request's mapping grown by the ids after what it covered."""
    if cache is None:
        ids = _tool_ids(msgs)
        return {} if all(valid(rule, i) for i in ids) else id_map(rule, ids)
    ds = digests(msgs)
    prev = cache.last_ids
    grown = None
    if prev is not None and prev[0] == rule and shared_prefix(prev[1], ds) == len(prev[1]):
        grown = extend_id_map(rule, prev[2], prev[3], _tool_ids(msgs[len(prev[1]):]))
    if grown is None:
        grown = extend_id_map(rule, {}, set(), _tool_ids(msgs))
        assert grown is not None  # nothing mapped before: nothing to clash with
    cache.last_ids = (rule, ds, *grown)
    return grown[0]


def _remap_all(planned: list[PlannedMessage], mapping: dict[str, str],
               cache: BuildMemo | None) -> list[PlannedMessage]:
    """Every planned message with the request's id mapping applied. The previous request's
    results stand for the leading messages it shared with this one (the same planned objects),
    when every id it mapped still maps the same: an id's mapping depends on other ids only
    through a clash."""
    if cache is None:
        return [_remap_ids(pm, mapping, None) for pm in planned]
    same = 0
    prev = cache.last_remap
    if prev is not None and all(mapping.get(k) == v for k, v in prev[0].items()):
        n = min(len(prev[1]), len(planned))
        same = next((i for i, (a, b) in enumerate(zip(prev[1][:n], planned[:n], strict=True)) if a is not b), n)
    out = prev[2][:same] if prev is not None else []
    out += [_remap_ids(pm, mapping, cache) for pm in planned[same:]]
    cache.last_remap = (mapping, planned, out)
    return out


def _remap_ids(pm: PlannedMessage, mapping: Mapping[str, str], cache: BuildMemo | None) -> PlannedMessage:
    """``pm`` with its tool-call ids as the target route accepts them (stored history keeps the
    originals). Memoised under the mapping entries it hits, so the same planned message with
    the same entries is the same result."""
    hit = tuple(sorted({(i, mapping[i]) for i in _part_ids(pm.parts) if i in mapping}))
    if not hit:
        return pm

    def remapped() -> PlannedMessage:
        parts = tuple(replace(p, id=mapping.get(p.id, p.id)) if isinstance(p, ToolCall)
                      else replace(p, call_id=mapping.get(p.call_id, p.call_id)) if isinstance(p, ToolResult)
                      else p for p in pm.parts)
        sigs = {mapping.get(k, k): v for k, v in pm.tool_signatures.items()}
        return replace(pm, parts=parts, tool_signatures=sigs)

    return remapped() if cache is None else cache.derived(pm, ("tool_ids", hit), remapped)


def _without_reasoning(p: PlannedMessage, cache: BuildMemo | None) -> PlannedMessage:
    """Thinking off on a ``signed_loop`` row: a thinking block in the request would be rejected."""
    if not any(isinstance(x, Reasoning) for x in p.parts):
        return p

    def off() -> PlannedMessage:
        decisions = tuple(Decision(d.part, "drop", (), "thinking is off for this request") if d.action != "drop"
                          else d for d in p.decisions)
        return replace(p, parts=tuple(x for x in p.parts if not isinstance(x, Reasoning)), decisions=decisions)

    return off() if cache is None else cache.derived(p, "thinking_off", off)


def _needs_thinking(p: PlannedMessage) -> bool:
    return any(isinstance(x, ToolCall) for x in p.parts) and not any(isinstance(x, Reasoning) for x in p.parts)


def _request_fields(target: Resolved, settings: Settings, thinking: bool) -> dict[str, Any]:
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
