"""Incremental building by value and kept runs (``hermes.builder``: ``memo``, ``kept``).

The request body a new process builds from a session's kept runs (cold), the one the
conversation's in-process builder builds (warm) and the pure build (fresh) are the
same bytes, on every route of the table, however the session grew between the turns that
kept runs; and a change of route row, model profile, model or lesson reaches a different
context, so a stale run is never sent.
"""

from __future__ import annotations

import copy
import hashlib
import tempfile
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_replay_properties import LEARNED, MODELS, _target, histories

from hermes.agent.provider import build_body, get_wire
from hermes.builder import Builder
from hermes.builder.estimate import raw_plan_tokens
from hermes.builder.memo import context
from hermes.core.history import open_loop_start
from hermes.core.messages import Compaction, Message, Reasoning, Text, ToolCall, ToolResult
from hermes.replay import Learned, Settings, plan_replay
from hermes.routing.routes import ROUTES
from hermes.routing.toolids import id_map, valid, wire_id
from hermes.store import Store
from hermes.store.requestlog import plan_summary
from hermes.wire import ToolSpec

ROUTE_KEYS = [r.key for r in ROUTES]  # every row of the table, none by hand
TOOLS = (ToolSpec("read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}),)
SETTINGS = st.builds(Settings, st.booleans(), st.sampled_from([None, "low", "high", "max"]))


def _build(history, target, learned, s, memo):
    """(body bytes, plan) — or (the error's type, None) where a history cannot go to a wire."""
    try:
        if memo is None:
            plan = plan_replay(history, target, learned, s)
            body = build_body(get_wire(target.route.wire), plan, tools=TOOLS, settings=s)
        else:
            plan = memo.plan(history, target, learned, s)
            body = memo.body(plan, tools=TOOLS, settings=s)
        return orjson.dumps(body), plan
    except Exception as e:  # an error is a result too: every way of building must agree on it
        return repr(type(e)).encode(), None


def _stored(store: Store, history: list[Message]) -> tuple[str, list[Message]]:
    sid = store.create_session(provider="x", model="m")
    store.append_turn(sid, history)
    return sid, store.load(sid)


@st.composite
def sessions(draw) -> list[Message]:
    """Histories as a session grows them: sometimes a system prompt first, sometimes a
    compaction checkpoint (a user message holding a summary) somewhere."""
    history = draw(histories())
    if draw(st.booleans()):
        history.insert(0, Message("system", (Text(draw(st.sampled_from(["", "Be brief."]))),)))
    if draw(st.booleans()):
        at = draw(st.integers(0, len(history)))
        history.insert(at, Message("user", (Compaction("earlier: " + draw(st.text(max_size=8)), 2),)))
    return history


def _kept_runs(plan) -> int:
    return sum(r.size for r in plan.kept) if plan is not None else 0


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions(), st.sampled_from(ROUTE_KEYS), st.sampled_from(MODELS), LEARNED, SETTINGS, st.data())
def test_cold_equals_warm_equals_fresh_on_every_route(history, key, model, learned, s, data):
    """The session is stored turn by turn, runs kept after each (``Builder.keep``); then a
    new process builds the request for the whole history (the committed part plus what the
    next turn adds) from the kept runs alone."""
    target = _target(key, model)
    fresh, fresh_plan = _build(history, target, learned, s, None)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(history)), max_size=3)))
    warm_memo = Builder()
    with tempfile.TemporaryDirectory() as d, Store(Path(d) / "state.db") as store:
        sid = store.create_session(provider="x", model="m")
        done = 0
        for cut in cuts:  # turns committed one after another, each followed by its keep
            if cut > done:
                store.append_turn(sid, history[done:cut])
                done = cut
            committed = store.load(sid)
            _build(committed, target, learned, s, warm_memo)  # that turn's request
            if _build(committed, target, learned, s, None)[1] is not None:
                warm_memo.keep(store, sid, target, learned, committed)
        warm, _ = _build(history, target, learned, s, warm_memo)
        cold_memo = Builder()  # a new process: nothing in memory but what the store kept
        restored = cold_memo.restore(store, sid, target, learned)
        cold, cold_plan = _build(history, target, learned, s, cold_memo)
    assert cold == warm == fresh
    if fresh_plan is None or cold_plan is None:
        return
    # what the log and the token estimate read comes from the kept runs just the same
    logged, logged_fresh = cold_memo.summary(cold_plan), plan_summary(fresh_plan)
    assert logged_fresh.pop("kept") == 0 and logged.pop("kept") == _kept_runs(cold_plan)
    assert logged == logged_fresh
    assert cold_memo.raw_tokens(cold_plan, tools=TOOLS) == raw_plan_tokens(fresh_plan, tools=TOOLS)
    assert _kept_runs(cold_plan) <= restored
    event("built from kept runs" if cold_plan.kept else "built whole")
    if cold_plan.kept:  # the runs stand for the first messages of the window, the plan for the rest
        assert cold_plan.messages[0].index == cold_plan.kept[-1].end if cold_plan.messages else True
        assert cold_plan.first == fresh_plan.first


def _history() -> list[Message]:
    out: list[Message] = []
    for i in range(6):
        out.append(Message.user(f"question {i}"))
        out.append(Message("assistant", (Reasoning(f"think {i}", _target("openrouter", "m-1").key),
                                          ToolCall(f"call_{i}", "read_file", '{"path":"a"}'))))
        out.append(Message("tool", (ToolResult(f"call_{i}", "text"),)))
        out.append(Message("assistant", (Text(f"answer {i}"),)))
    return out


BEFORE_LOOP = open_loop_start(_history())  # the last turn's loop is not kept: its plan changes when it closes


def _kept(tmp_path: Path, target, learned=Learned(), history=None):
    store = Store(tmp_path / "state.db")
    sid, loaded = _stored(store, history or _history())
    memo = Builder()
    _build(loaded, target, learned, Settings(), memo)
    assert memo.keep(store, sid, target, learned, loaded) == open_loop_start(loaded)
    return store, sid, loaded


def _cold(store, sid, loaded, target, learned=Learned(), s=Settings()):
    """(messages the restored runs hold, messages the cold build took from them); the body
    equals a fresh build's."""
    memo = Builder()
    n = memo.restore(store, sid, target, learned)
    body, plan = _build(loaded, target, learned, s, memo)
    assert body == _build(loaded, target, learned, s, None)[0]
    return n, _kept_runs(plan)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ROUTE_KEYS), st.sampled_from(MODELS), LEARNED)
def test_a_context_remembered_for_an_object_is_the_one_it_has(key, model, learned):
    """``context`` remembers a target's form by the object: asked again, and asked for an
    equal object it has not seen, it answers what its definition says (the persisted keys of
    kept runs depend on these bytes), and a changed copy still gets another context."""
    from hermes.builder.memo import FORMAT, _plain

    target = _target(key, model)
    defined = hashlib.sha256(orjson.dumps([FORMAT, _plain((target, learned))])).digest()[:16]
    assert context(target, learned) == context(target, learned) == defined
    assert context(copy.deepcopy(target), learned) == defined
    other = replace(target, route=replace(target.route, carriers=target.route.carriers ^ {"reasoning"}))
    assert context(other, learned) != defined


@pytest.mark.parametrize("change", ["row", "profile", "model", "lesson", "host"])
def test_a_changed_context_finds_no_kept_run(tmp_path, change):
    """A route row, a profile, a model, a host or a lesson that differs makes another context:
    the kept runs are not found and the request is built afresh (and identical to fresh)."""
    target = _target("openrouter", "m-1")
    store, sid, loaded = _kept(tmp_path, target)
    learned = Learned()
    if change == "row":
        target = replace(target, route=replace(target.route, carriers=frozenset()))
    elif change == "profile":
        target = replace(target, profile=replace(target.profile, prior_turns="loop"))
    elif change == "model":
        target = _target("openrouter", "m-2")
    elif change == "host":
        target = replace(target, host="other.example")
    else:
        learned = Learned(frozenset(target.route.carriers))
    assert _cold(store, sid, loaded, target, learned) == (0, 0)
    # and the body really differs where the change matters, so a stale run would have shown
    if change in ("row", "lesson"):
        old = _build(loaded, _target("openrouter", "m-1"), Learned(), Settings(), None)[0]
        assert _build(loaded, target, learned, Settings(), None)[0] != old


@pytest.mark.parametrize("s", [Settings(thinking=False), Settings(effort="high"), Settings(effort="max")])
def test_thinking_and_effort_keep_runs_valid(tmp_path, s):
    """Thinking on/off and effort change only the request's top-level fields on a chat route:
    the kept runs stay valid and are used, and the body equals a fresh one."""
    target = _target("deepseek", "m-1")
    store, sid, loaded = _kept(tmp_path, target)
    assert _cold(store, sid, loaded, target, s=s) == (BEFORE_LOOP, BEFORE_LOOP)


def test_thinking_off_on_a_signed_wire_plans_everything(tmp_path):
    """Thinking off on a wire that then drops every thinking block: the runs (built with the
    blocks) are not used, and the body equals a fresh build without them."""
    target = _target("anthropic", "m-1")
    history = [m if not m.reasoning else Message("assistant", (
        Reasoning(f"think {i}", target.key, "c2ln", "anthropic.signature"), *m.parts[1:]))
        for i, m in enumerate(_history())]
    store, sid, loaded = _kept(tmp_path, target, history=history)
    assert _cold(store, sid, loaded, target, s=Settings(thinking=False)) == (BEFORE_LOOP, 0)


def test_a_run_for_other_message_values_is_never_used(tmp_path):
    """A run is used only for the messages it was built from: rewritten with other digests it
    loads, matches nothing and is never spliced in."""
    target = _target("deepseek", "m-1")
    store, sid, loaded = _kept(tmp_path, target)
    ctx = context(target, Learned())
    (first, end, window, _, _, cost, state), = store.load_runs(sid, ctx)
    bogus = b'{"role":"user","content":"NOT THE STORED MESSAGES"}'
    store.save_run(sid, ctx, (first, end, window, bytes(16) * (end - first), bogus, cost, state))
    assert _cold(store, sid, loaded, target) == (BEFORE_LOOP, 0)
    assert _cold(store, sid, [*loaded[:3], Message.user("edited"), *loaded[4:]], target)[1] == 0


def test_undecodable_runs_are_misses(tmp_path):
    """A run whose columns or state do not decode is left out, and the chain ends before it."""
    target = _target("deepseek", "m-1")
    store = Store(tmp_path / "state.db")
    history = _history()
    sid, loaded = _stored(store, history[:8])
    memo = Builder()
    memo.keep(store, sid, target, Learned(), loaded)  # first run: messages 0-4
    store.append_turn(sid, history[8:])
    loaded = store.load(sid)
    _build(loaded, target, Learned(), Settings(), memo)
    memo.keep(store, sid, target, Learned(), loaded)
    ctx = context(target, Learned())
    assert [(r[0], r[1]) for r in store.load_runs(sid, ctx)] == [(0, BEFORE_LOOP)]  # merged: 5 ≤ 16
    store.append_turn(sid, [Message.user("one more")])
    loaded = store.load(sid)
    _build(loaded, target, Learned(), Settings(), memo)
    memo.keep(store, sid, target, Learned(), loaded)
    assert [(r[0], r[1]) for r in store.load_runs(sid, ctx)] == [(0, BEFORE_LOOP), (BEFORE_LOOP, len(loaded))]
    with store._lock:
        store._c.execute("UPDATE kept_runs SET state = 'not json' WHERE first_seq = ?", (BEFORE_LOOP,))
    assert _cold(store, sid, loaded, target) == (BEFORE_LOOP, BEFORE_LOOP)  # the first run still counts
    with store._lock:
        store._c.execute("UPDATE kept_runs SET body = 'text, not bytes' WHERE first_seq = 0")
    assert len(store.load_runs(sid, ctx)) == 1  # wrong types are left out on load
    assert _cold(store, sid, loaded, target) == (0, 0)  # a chain must start at the window: none


def test_one_chain_per_session_is_kept(tmp_path):
    """The bound: keeping runs for a new context replaces the session's old ones."""
    a, b = _target("deepseek", "m-1"), _target("deepseek", "m-2")
    store, sid, loaded = _kept(tmp_path, a)
    memo = Builder()
    _build(loaded, b, Learned(), Settings(), memo)
    memo.keep(store, sid, b, Learned(), loaded)
    assert store.load_runs(sid, context(a, Learned())) == []
    assert len(store.load_runs(sid, context(b, Learned()))) == 1
    with store._lock:
        assert store._c.execute("SELECT COUNT(*) FROM kept_runs").fetchone()[0] == 1


def test_a_long_session_keeps_few_runs(tmp_path):
    """Kept after every turn, a session's chain stays about log₂ of its turns long (a new run
    absorbs the runs before it that are not larger), and still builds the fresh body."""
    target = _target("anthropic", "m-1")
    store = Store(tmp_path / "state.db")
    sid = store.create_session(provider="x", model="m")
    memo = Builder()
    turns = [m for _ in range(6) for m in _history()]  # 36 turns
    for i in range(0, len(turns), 4):
        store.append_turn(sid, turns[i:i + 4])
        loaded = store.load(sid)
        _build(loaded, target, Learned(), Settings(), memo)
        memo.keep(store, sid, target, Learned(), loaded)
    runs = store.load_runs(sid, context(target, Learned()))
    sizes = [end - first for first, end, *_ in runs]
    assert len(runs) <= 6 and sizes == sorted(sizes, reverse=True) and sum(sizes) == open_loop_start(loaded)
    assert _cold(store, sid, [*loaded, Message.user("next")], target) == (sum(sizes), sum(sizes))


def test_only_committed_messages_are_kept(tmp_path):
    """Messages the store does not hold (a pending message, another history) are not kept:
    ``keep`` reads the committed history it is given, up to its open tool loop."""
    target = _target("deepseek", "m-1")
    store = Store(tmp_path / "state.db")
    sid, loaded = _stored(store, _history()[:4])
    memo = Builder()
    _build([*loaded, Message.user("pending")], target, Learned(), Settings(), memo)
    assert memo.keep(store, sid, target, Learned(), loaded) == 1  # the question; its loop is still open


@pytest.mark.parametrize("key", ["anthropic", "deepseek"])
def test_a_new_process_plans_nothing_before_the_loop(tmp_path, key):
    """On a wire that merges turns (Anthropic) as on a chat route: every message before the
    open tool loop comes from the kept runs, merged turns inside a run included, and the body
    equals a fresh build."""
    target = _target(key, "m-1")
    store = Store(tmp_path / "state.db")
    history = [m for m in _history() if not m.reasoning] + [Message.user("next")]
    sid, loaded = _stored(store, history)
    memo = Builder()
    _build(loaded, target, Learned(), Settings(), memo)
    memo.keep(store, sid, target, Learned(), loaded)
    cold = Builder()
    assert cold.restore(store, sid, target, Learned()) == len(loaded)
    body, plan = _build(loaded, target, Learned(), Settings(), cold)
    assert body == _build(loaded, target, Learned(), Settings(), None)[0]
    assert plan is not None and plan.messages == () and _kept_runs(plan) == len(loaded)
    fresh_plan = plan_replay(loaded, target, Learned(), Settings())
    if key == "anthropic":  # tool results and the next question merge into one user turn
        assert any(pm.joins for pm in fresh_plan.messages)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_kept_runs_round_trip_on_both_backends(tmp_path, backend, request):
    """Digests are stored with the messages and read back with them (nothing hashed on load),
    kept runs round-trip byte for byte, a branch keeps its own, and deleting the session
    deletes its runs — on SQLite and on a real PostgreSQL."""
    from hermes.core.messages import message_digest
    from hermes.store.pg import PgStore

    store = Store(tmp_path / "state.db") if backend == "sqlite" else PgStore(request.getfixturevalue("pg_url"))
    with store:
        target = _target("openrouter", "m-1")
        sid, loaded = _stored(store, _history())  # type: ignore[arg-type]
        assert all(m.digest == message_digest(m) for m in loaded)  # read from the column, and right
        memo = Builder()
        _build(loaded, target, Learned(), Settings(), memo)
        assert memo.keep(store, sid, target, Learned(), loaded) == BEFORE_LOOP
        ctx = context(target, Learned())
        rows = store.load_runs(sid, ctx)
        (run,) = memo.memo.runs[ctx]
        assert rows == [(0, BEFORE_LOOP, 0, run.digests, run.body, run.cost, rows[0][6])]
        assert run.digests == b"".join(m.digest for m in loaded[:BEFORE_LOOP])
        assert _cold(store, sid, loaded, target) == (BEFORE_LOOP, BEFORE_LOOP)
        branch = store.branch(sid)
        assert [m.digest for m in store.load(branch)] == [m.digest for m in loaded]
        assert store.load_runs(branch, ctx) == []  # a branch keeps its own, from its first turn
        store.delete_session(sid)
        assert store.load_runs(sid, ctx) == []
        store.save_run(sid, ctx, rows[0])  # a deleted session keeps nothing
        assert store.load_runs(sid, ctx) == []


def test_two_processes_keeping_one_session_leave_one_chain(tmp_path):
    """Two workers take turns on one session, each with its own memo (so each is sometimes
    behind the other's runs): the table always holds one chain from the window start, and a
    new process builds the fresh body from it."""
    target = _target("deepseek", "m-1")
    ctx = context(target, Learned())
    store = Store(tmp_path / "state.db")
    sid = store.create_session(provider="x", model="m")
    a, b = Builder(), Builder()
    turns = [m for _ in range(2) for m in _history()]
    for i, memo in zip(range(0, len(turns), 4), [a, b, b, a, b, a, a, b, a, b, b, a], strict=True):
        store.append_turn(sid, turns[i:i + 4])
        loaded = store.load(sid)
        memo.restore(store, sid, target, Learned())
        _build(loaded, target, Learned(), Settings(), memo)
        memo.keep(store, sid, target, Learned(), loaded)
        rows = store.load_runs(sid, ctx)
        assert [r[0] for r in rows[:1]] in ([], [0]) and all(x[1] == y[0] for x, y in pairwise(rows))
    kept, used = _cold(store, sid, [*loaded, Message.user("next")], target)
    assert kept == used == sum(r[1] - r[0] for r in store.load_runs(sid, ctx))


def _call_ids(plan) -> list[str]:
    return [p.id for pm in plan.messages for p in pm.parts if isinstance(p, ToolCall)]


def test_a_session_whose_ids_the_route_renames_keeps_and_uses_runs(tmp_path):
    """Mistral takes only nine-character ids, so every id of this session is renamed in its
    requests: a run keeps the ids it was built with, a new process builds the fresh body from
    it, and so does the next tool step, whose new id is mapped as the whole history's would be."""
    target = _target("mistral", "m-1")
    store, sid, loaded = _kept(tmp_path, target)
    assert _cold(store, sid, loaded, target) == (BEFORE_LOOP, BEFORE_LOOP)
    (row,) = store.load_runs(sid, context(target, Learned()))
    state = orjson.loads(row[6])
    stored = [p.id for m in loaded[:BEFORE_LOOP] for p in m.parts if isinstance(p, ToolCall)]
    assert stored and state["renamed"] == id_map("mistral", stored) and state["as_is"] == []
    step = [*loaded, Message.user("more"), Message("assistant", (ToolCall("call_new", "read_file", "{}"),)),
            Message("tool", (ToolResult("call_new", "x"),))]
    cold = Builder()
    cold.restore(store, sid, target, Learned())
    for grown in (loaded, step):  # the turn's first request, then its next tool step
        body, plan = _build(grown, target, Learned(), Settings(), cold)
        assert body == _build(grown, target, Learned(), Settings(), None)[0]
        assert _kept_runs(plan) == BEFORE_LOOP
    assert all(valid("mistral", i) for i in _call_ids(plan))


def test_an_id_equal_to_one_a_run_renamed_plans_the_history_whole(tmp_path):
    """A later id, sent as it is, that equals the id a kept run chose for an earlier one: the
    whole history's mapping steps around it, so the run (built with the earlier choice) is not
    used — by a new process or by the builder that kept it — and the body is the fresh one."""
    target = _target("mistral", "m-1")
    store, sid, loaded = _kept(tmp_path, target)
    chosen = wire_id("mistral", "call_0")
    grown = [*loaded, Message.user("q"), Message("assistant", (ToolCall(chosen, "read_file", "{}"),)),
             Message("tool", (ToolResult(chosen, "x"),))]
    assert _cold(store, sid, grown, target) == (BEFORE_LOOP, 0)
    warm = Builder()
    _build(loaded, target, Learned(), Settings(), warm)
    warm.keep(store, sid, target, Learned(), loaded)
    body, plan = _build(grown, target, Learned(), Settings(), warm)
    assert body == _build(grown, target, Learned(), Settings(), None)[0] and _kept_runs(plan) == 0
    assert _call_ids(plan)[0] == wire_id("mistral", "call_0", 1) and _call_ids(plan)[-1] == chosen


def test_a_later_id_steps_around_an_id_a_run_sent_as_it_is(tmp_path):
    """A run sent a valid Mistral id as it is, and that id is the wire id a later stored id
    would get: the later one steps around it, with the run used, as the whole history's
    mapping does."""
    target = _target("mistral", "m-1")
    taken = wire_id("mistral", "call_late")
    history = [Message.user("q"), Message("assistant", (ToolCall(taken, "read_file", "{}"),)),
               Message("tool", (ToolResult(taken, "a"),)), Message("assistant", (Text("done"),)), Message.user("next")]
    store, sid, loaded = _kept(tmp_path, target, history=history)
    grown = [*loaded, Message("assistant", (ToolCall("call_late", "read_file", "{}"),)),
             Message("tool", (ToolResult("call_late", "b"),))]
    cold = Builder()
    cold.restore(store, sid, target, Learned())
    body, plan = _build(grown, target, Learned(), Settings(), cold)
    assert body == _build(grown, target, Learned(), Settings(), None)[0] and _kept_runs(plan) == len(loaded)
    assert _call_ids(plan) == [wire_id("mistral", "call_late", 1)]
