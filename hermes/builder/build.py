"""``Builder``: one conversation's requests, built as ``plan_replay`` and the wire would build
them, through every cache layer (``memo``: per-message results by value; ``kept``: runs kept
in the store). The planner and the wires below it never see a cache.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import orjson

from ..agent.provider import Exchange, build_body, send, with_values
from ..core.errors import StoreError
from ..core.history import latest_checkpoint, open_loop_start, window
from ..core.messages import Message, Reasoning
from ..replay import Learned, PlannedMessage, ReplayPlan, Run, Settings, plan_replay
from ..replay.planner import (
    ids_hit,
    needs_thinking,
    plan_message,
    remap_ids,
    request_fields,
    strips_off,
    thinking_for,
    tool_ids,
    without_reasoning,
)
from ..replay.structure import close, mark_from, marked, turn_sides
from ..routing.resolve import Resolved
from ..routing.toolids import extend_id_map
from ..store.requestlog import Summary, Tally, log_event, message_summary, plan_summary, tally
from ..wire import ToolSpec, get_wire
from .estimate import basis_for, message_cost, raw_plan_tokens
from .kept import chain_of, closing_side, id_state, matching, merged, state_of
from .memo import BuildMemo, Key, context, digests, render_context, render_with, shared_prefix

if TYPE_CHECKING:
    from ..core.stream import Delta
    from ..rejections.values import ValueRule
    from ..store import RunRow, SessionStore
    from ..transport import Transport

__all__ = ["Builder"]


def _own(key: Key | None) -> bool:
    """Whether a planned message with plan key ``key`` is its message's own result, as a run
    may keep it: planned by the builder, with no request-wide rule applied but the tool-id
    mapping (which a run keeps beside it, ``Run.renamed``)."""
    return key is not None and (len(key) == 4 or (len(key) == 5 and type(key[4]) is tuple
                                                   and key[4][0] == "tool_ids"))


class Builder:
    """Plans, bodies, token costs and log summaries of one conversation's requests, each the
    pure build's (``plan_replay`` + the wire), reusing what earlier requests built. Not
    shared between threads (``hermes.builder.hot`` hands one out per turn)."""

    __slots__ = ("memo",)

    def __init__(self) -> None:
        self.memo = BuildMemo()

    # ------------------------------------------------------------------ the request
    def complete(self, resolved: Resolved, history: Sequence[Message], *, tools: Sequence[ToolSpec] = (),
                 settings: Settings = Settings(), learned: Learned = Learned(), stream: bool = False,
                 api_key: str | None = None, transport: Transport | None = None,
                 on_delta: Callable[[Delta], None] | None = None, values: Sequence[ValueRule] = ()) -> Exchange:
        """``provider.complete`` through this builder's caches: the same body, built from what is new."""
        resolved = with_values(resolved, values)
        plan = self.plan(history, resolved, learned, settings)

        def whole() -> ReplayPlan:  # kept runs stand for messages this plan did not plan
            return plan if not plan.kept else plan_replay(history, resolved, learned, settings)

        return send(resolved, plan, lambda s: self.body(plan, tools=tools, settings=settings, stream=s), whole,
                    stream=stream, values=values, api_key=api_key, transport=transport, on_delta=on_delta)

    def plan(self, history: Sequence[Message], target: Resolved, learned: Learned = Learned(),
             settings: Settings = Settings()) -> ReplayPlan:
        """``plan_replay``'s plan, except that the session's kept runs that hold stand for the
        first messages (``ReplayPlan.kept``)."""
        route = target.route
        start, msgs, planned, loop_start, kept = self._planned(history, target, learned)
        off = kept[-1].end - start if kept else 0
        mapping = None
        if not kept or self._runs_hold(kept, planned, loop_start - off, target, settings):
            mapping = self._id_map(msgs[off:], route.tool_ids, kept)  # None: it would rename ids inside a run
        if mapping is None:
            start, msgs, planned, loop_start, kept = self._planned(history, target, learned, runs=False)
            off, mapping = 0, self._id_map(msgs, route.tool_ids, ())
        if mapping:
            planned = self._remap_all(planned, mapping)
        thinking, notes = thinking_for(planned[loop_start - off:], target, settings)
        if not thinking and strips_off(target):
            planned = [self._derived(p, "thinking_off", without_reasoning)
                       if any(isinstance(x, Reasoning) for x in p.parts) else p for p in planned]
        planned, placeholder_after = self._structure(planned, route.wire, closing_side(kept))
        return ReplayPlan(target, tuple(planned), request_fields(target, settings, thinking), thinking, notes,
                          placeholder_after=placeholder_after, kept=kept)

    def body(self, plan: ReplayPlan, *, tools: Sequence[ToolSpec] = (), settings: Settings = Settings(),
             stream: bool = False) -> dict[str, Any]:
        """The wire's body for ``plan``, each message's render reused where its key was rendered before."""
        wire = get_wire(plan.target.route.wire)
        render = wire.render_message
        rendered = None
        if render is not None:
            route = plan.target.route
            rendered = render_with(self.memo, plan.messages, render_context(route), lambda pm: render(pm, route))
        return build_body(wire, plan, tools=tools, settings=settings, stream=stream, rendered=rendered)

    # ------------------------------------------------------------------ costs and summaries
    def costs(self, plan: ReplayPlan) -> list[int]:
        """``estimate.plan_costs``, each planned message priced once."""
        basis = basis_for(plan.target)
        label, costs = basis.label, self.memo.costs
        out: list[int] = []
        for pm in plan.messages:
            if pm.key is None:
                out.append(message_cost(pm, basis))
                continue
            k = (pm.key, label)
            c = costs.get(k)
            if c is None:
                c = costs[k] = message_cost(pm, basis)
            out.append(c)
        return out

    def raw_tokens(self, plan: ReplayPlan, *, tools: Sequence[ToolSpec] = ()) -> int:
        """``estimate.raw_plan_tokens`` through the cost cache."""
        return raw_plan_tokens(plan, tools=tools, costs=self.costs(plan))

    def estimate(self, history: Sequence[Message], target: Resolved, *, learned: Learned = Learned(),
                 settings: Settings = Settings(), tools: Sequence[ToolSpec] = (), factor: float = 1.0) -> int:
        """``estimate.estimate_history``: the plan is the one the request then reuses."""
        import math

        return math.ceil(self.raw_tokens(self.plan(history, target, learned, settings), tools=tools) * factor)

    def summary(self, plan: ReplayPlan) -> dict[str, Any]:
        """``logs.plan_summary``, each message summarised once."""
        return plan_summary(plan, self._summary)

    def _summary(self, pm: PlannedMessage) -> Summary:
        if pm.key is None:
            return message_summary(pm)
        summaries = self.memo.summaries
        rec = summaries.get(pm.key)
        if rec is None:
            rec = summaries[pm.key] = message_summary(pm)
        return rec  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ kept runs (the store's layer)
    def restore(self, store: SessionStore, session_id: str, target: Resolved, learned: Learned) -> int:
        """Load the session's kept runs for this request context (once per session and
        context); returns how many messages they hold."""
        if get_wire(target.route.wire).render_message is None:
            return 0
        ctx = context(target, learned)
        if (session_id, ctx) in self.memo.restored:
            return 0
        self.memo.restored.add((session_id, ctx))
        try:
            rows = store.load_runs(session_id, ctx)
        except StoreError as e:
            log_event("kept_results_unreadable", session=session_id, error=str(e)[:200])
            return 0
        return self.fill(target, learned, rows)

    def fill(self, target: Resolved, learned: Learned, rows: list[RunRow]) -> int:
        """Take the chain of kept ``rows`` (``SessionStore.load_runs`` for this context); returns
        how many messages it holds."""
        chain = self.memo.runs[context(target, learned)] = chain_of(rows)
        return sum(r.size for r in chain)

    def keep(self, store: SessionStore, session_id: str, target: Resolved, learned: Learned,
             history: list[Message]) -> int:
        """Keep the messages of the committed ``history`` before its open tool loop that the
        session's runs do not hold yet, as one run (built from what the turn's requests built);
        returns how many messages it added."""
        wire = get_wire(target.route.wire)
        if wire.render_message is None:
            return 0
        ctx = context(target, learned)
        cut = open_loop_start(history)
        plan = self.plan(history[:cut], target, learned, Settings())
        new = plan.messages
        if not new or not all(_own(pm.key) for pm in new):
            return 0  # nothing new, or a request-wide rule rewrote a message: its result is not its own
        opens, closes = turn_sides(new, target.route.wire)
        if opens is not None and opens == (plan.kept[-1].closes if plan.kept else None):
            return 0  # its first turn would join the run before it
        first = new[0].index
        body = self.body(replace(plan, kept=()))
        t = tally(new, self._summary)
        t.kept = len(new)
        run = Run(first, cut, plan.first, b"".join(digests(history[first:cut])), orjson.dumps(body[wire.ITEMS])[1:-1],
                  str(body.get("system") or ""), sum(self.costs(plan)), t, opens, closes,
                  *self._run_ids(history[first:cut], target.route.tool_ids))
        chain = list(plan.kept)
        while chain and chain[-1].size <= run.size:
            before = chain.pop()
            run = merged(before, run, Tally().extend(before.tally).extend(run.tally))
        try:
            saved = store.save_run(session_id, ctx, (run.first, run.end, run.window, run.digests, run.body, run.cost,
                                                     state_of(run)))
        except StoreError as e:
            log_event("kept_results_unwritten", session=session_id, error=str(e)[:200])
            return 0
        self.memo.runs[ctx] = [*chain, run]  # exact for this process either way
        self.memo.restored.add((session_id, ctx))
        return len(new) if saved else 0

    # ------------------------------------------------------------------ the plan's steps, memoised
    def _runs_hold(self, kept: Sequence[Run], planned: Sequence[PlannedMessage], loop_start: int, target: Resolved,
                   settings: Settings) -> bool:
        """Whether the request built after the kept runs ``kept`` (``planned``: the messages after
        them, the open loop from ``loop_start``) keeps every condition a run was built under
        (``builder.kept``) but its tool-call ids, which ``_id_map`` checks; else the request is
        planned whole."""
        route = target.route
        if route.signed_loop and route.policy == "signed" and (
                not settings.thinking
                or any(p.role == "assistant" and needs_thinking(p) for p in planned[loop_start:])):
            return False  # thinking off: every message loses its thinking blocks
        side = turn_sides(planned, route.wire)[0]
        return side is None or side != closing_side(kept)  # the first turn after the runs opens a turn of its own

    def _planned(self, history: Sequence[Message], target: Resolved, learned: Learned, *,
                 runs: bool = True) -> tuple[int, Sequence[Message], list[PlannedMessage], int, tuple[Run, ...]]:
        """(window start, window, planned messages, open loop start, kept runs): the session's
        kept runs that match the history stand for its first messages (``runs=False``: never),
        the scans reuse what the previous request's digests agree on, each other message is
        planned once per key. ``planned`` starts after the runs."""
        memo = self.memo
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
        planner = get_wire(target.route.wire).PLANNER
        for offset in range(first + len(planned), len(msgs)):
            m = msgs[offset]
            index = start + offset
            loop = m.role == "assistant" and offset >= loop_start
            key = (ctx, index, ds[offset], loop)
            pm = memo.plans.get(key)
            if pm is None:
                pm = plan_message(planner, index, m, target, learned, loop)
                pm.key = key
                memo.plans[key] = pm
            planned.append(pm)
        memo.last_plan = ((ctx, start, first), ds, loop_start, list(planned))
        return start, msgs, planned, loop_start, kept

    def _id_map(self, msgs: Sequence[Message], rule: str, kept: tuple[Run, ...]) -> dict[str, str] | None:
        """original → wire id for the ids of this request that ``rule`` refuses (usually none):
        the mapping the kept runs ``kept`` were built under, grown by the ids of ``msgs`` (the
        messages after them) — the previous request's, grown by the ids after what it covered,
        where it agrees. None when an id of ``msgs`` sent as it is equals one the runs renamed
        (the whole history's mapping steps around it: the runs do not hold)."""
        if rule == "any":
            return {}
        ds = digests(msgs)
        prev = self.memo.last_ids
        grown = None
        if prev is not None and prev[0] == (rule, kept) and shared_prefix(prev[1], ds) == len(prev[1]):
            grown = extend_id_map(rule, prev[2], prev[3], tool_ids(msgs[len(prev[1]):]))
        if grown is None:
            grown = extend_id_map(rule, *id_state(kept), tool_ids(msgs))
            if grown is None:
                return None
        self.memo.last_ids = ((rule, kept), ds, *grown)
        return grown[0]

    def _run_ids(self, msgs: Sequence[Message], rule: str) -> tuple[dict[str, str], tuple[str, ...]]:
        """A run's ``renamed`` and ``as_is`` for the tool-call ids of ``msgs``, under the mapping
        of the request just planned; nothing where the route has no id rule."""
        if rule == "any":
            return {}, ()
        assert self.memo.last_ids is not None  # ``plan`` mapped this request's ids
        mapping = self.memo.last_ids[2]
        ids = dict.fromkeys(tool_ids(msgs))
        return {i: mapping[i] for i in ids if i in mapping}, tuple(i for i in ids if i not in mapping)

    def _remap_all(self, planned: list[PlannedMessage], mapping: dict[str, str]) -> list[PlannedMessage]:
        """Every planned message with the request's id mapping applied. The previous request's
        results stand for the leading messages it shared with this one (the same planned
        objects), when every id it mapped still maps the same: an id's mapping depends on other
        ids only through a clash."""
        same = 0
        prev = self.memo.last_remap
        if prev is not None and all(mapping.get(k) == v for k, v in prev[0].items()):
            n = min(len(prev[1]), len(planned))
            same = next((i for i, (a, b) in enumerate(zip(prev[1][:n], planned[:n], strict=True)) if a is not b), n)
        out = prev[2][:same] if prev is not None else []
        for pm in planned[same:]:
            hit = ids_hit(pm, mapping)
            out.append(self._derived(pm, ("tool_ids", hit), lambda p: remap_ids(p, mapping)) if hit else pm)
        self.memo.last_remap = (mapping, planned, out)
        return out

    def _derived(self, pm: PlannedMessage, rule: Any, compute: Callable[[PlannedMessage], PlannedMessage]
                 ) -> PlannedMessage:
        """``compute(pm)``, memoised under ``pm``'s key and ``rule`` (a value saying exactly what it applied)."""
        return self.memo.derived(pm, rule, lambda: compute(pm))

    def _structure(self, planned: list[PlannedMessage], wire: str, after: str | None
                   ) -> tuple[list[PlannedMessage], bool]:
        """``replay.structure``, the previous request's marks reused up to the first planned
        message whose key changed, each marked message memoised under its marks."""
        memo = self.memo
        keys: list[Key | None] = [pm.key for pm in planned]
        out: list[PlannedMessage] = []
        state: list[tuple[str | None, int]] = []
        last = memo.last_structure
        if last is not None and last[0] == (wire, after):
            _, prev_in, prev_out, prev_state = last
            k = shared_prefix(prev_in, keys)
            if None in keys[:k]:  # an unkeyed planned message is never reused
                k = keys.index(None)
            out, state = prev_out[:k], prev_state[:k]

        def mark(pm: PlannedMessage, joins: bool, placeholder: bool, decisions: tuple[Any, ...]) -> PlannedMessage:
            if pm.key is None:
                return marked(pm, joins, placeholder, decisions)
            k = (*pm.key, ("structure", joins, placeholder))
            got = memo.plans.get(k)
            if got is None:  # its key stays ``pm``'s: marks change neither render, cost nor summary
                got = memo.plans[k] = marked(pm, joins, placeholder, decisions)
            return got

        out, state = mark_from(planned, wire, out, state, after, mark)
        memo.last_structure = ((wire, after), keys, out, state)
        return close(out, state, wire)
