"""Incremental building by value and kept build results (``replay.memo``, ``hermes.kept``).

The request body a new process builds from a session's kept results (cold), the one the
conversation's in-process memo builds (warm) and a build with no memo at all (fresh) are the
same bytes, on every route of the table, and a change of route row, model profile, model or
lesson reaches different keys, so a stale result is never sent.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_replay_properties import LEARNED, MODELS, _target, histories

from hermes.estimate import raw_plan_tokens
from hermes.kept import keep, restore
from hermes.logs import plan_summary
from hermes.messages import Message, Reasoning, Text, ToolCall, ToolResult
from hermes.provider import build_body, get_wire
from hermes.replay import BuildMemo, Learned, Settings, context, plan_replay
from hermes.routes import ROUTES
from hermes.store import Store
from hermes.wire import ToolSpec

ROUTE_KEYS = [r.key for r in ROUTES]  # every row of the table, none by hand
TOOLS = (ToolSpec("read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}),)
SETTINGS = st.builds(Settings, st.booleans(), st.sampled_from([None, "low", "high", "max"]))


def _build(history, target, learned, s, memo):
    """(body bytes, plan) — or (the error's type, None) where a history cannot go to a wire."""
    try:
        plan = plan_replay(history, target, learned, s, cache=memo)
        body = build_body(get_wire(target.route.wire), plan, tools=TOOLS, settings=s, memo=memo)
        return orjson.dumps(body), plan
    except Exception as e:  # an error is a result too: every way of building must agree on it
        return repr(type(e)).encode(), None


def _stored(store: Store, history: list[Message]) -> tuple[str, list[Message]]:
    sid = store.create_session(provider="x", model="m")
    store.append_turn(sid, history)
    return sid, store.load(sid)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.sampled_from(ROUTE_KEYS), st.sampled_from(MODELS), LEARNED, SETTINGS, st.data())
def test_cold_equals_warm_equals_fresh_on_every_route(history, key, model, learned, s, data):
    target = _target(key, model)
    fresh, fresh_plan = _build(history, target, learned, s, None)
    warm_memo = BuildMemo()
    cut = data.draw(st.integers(0, len(history)))
    _build(history[:cut], target, learned, s, warm_memo)  # an earlier request of the conversation
    warm, _ = _build(history, target, learned, s, warm_memo)
    with tempfile.TemporaryDirectory() as d, Store(Path(d) / "state.db") as store:
        sid, loaded = _stored(store, history)
        keep(warm_memo, store, sid, target, learned, loaded)
        cold_memo = BuildMemo()  # a new process: nothing in memory but what the store kept
        restored = restore(cold_memo, store, sid, target, learned)
        cold, cold_plan = _build(loaded, target, learned, s, cold_memo)
    assert cold == warm == fresh
    if fresh_plan is None or cold_plan is None:
        return
    # what the log and the token estimate read comes from the kept results just the same
    logged, logged_fresh = plan_summary(cold_plan, cold_memo), plan_summary(fresh_plan)
    assert logged_fresh.pop("kept") == 0 and logged.pop("kept") == sum(pm.kept for pm in cold_plan.messages)
    assert logged == logged_fresh
    assert raw_plan_tokens(cold_plan, tools=TOOLS, cache=cold_memo) == raw_plan_tokens(fresh_plan, tools=TOOLS)
    if get_wire(target.route.wire).render_message is not None and target.route.tool_ids == "any" and (
            cold_plan.thinking or target.route.policy != "signed"):
        # the cold build really used the kept results: no message before the open tool loop
        # was planned again (loop messages are: the request-wide loop rules read them)
        assert restored >= len(cold_plan.messages)
        assert all(pm.kept for pm in cold_plan.messages if pm.key is not None and not pm.key[3])


def _history() -> list[Message]:
    out: list[Message] = []
    for i in range(6):
        out.append(Message.user(f"question {i}"))
        out.append(Message("assistant", (Reasoning(f"think {i}", _target("openrouter", "m-1").key),
                                          ToolCall(f"call_{i}", "read_file", '{"path":"a"}'))))
        out.append(Message("tool", (ToolResult(f"call_{i}", "text"),)))
        out.append(Message("assistant", (Text(f"answer {i}"),)))
    return out


def _kept(tmp_path: Path, target, learned=Learned()):
    store = Store(tmp_path / "state.db")
    sid, loaded = _stored(store, _history())
    memo = BuildMemo()
    _build(loaded, target, learned, Settings(), memo)
    assert keep(memo, store, sid, target, learned, loaded) == len(loaded)
    return store, sid, loaded


def _cold(store, sid, loaded, target, learned=Learned(), s=Settings()):
    memo = BuildMemo()
    n = restore(memo, store, sid, target, learned)
    body, _ = _build(loaded, target, learned, s, memo)
    assert body == _build(loaded, target, learned, s, None)[0]
    return n


@pytest.mark.parametrize("change", ["row", "profile", "model", "lesson", "host"])
def test_a_changed_context_finds_no_kept_result(tmp_path, change):
    """A route row, a profile, a model, a host or a lesson that differs makes another context:
    the kept rows are not found and the request is built afresh (and identical to fresh)."""
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
    assert _cold(store, sid, loaded, target, learned) == 0
    # and the body really differs where the change matters, so a stale row would have shown
    if change in ("row", "lesson"):
        old = _build(loaded, _target("openrouter", "m-1"), Learned(), Settings(), None)[0]
        assert _build(loaded, target, learned, Settings(), None)[0] != old


@pytest.mark.parametrize("s", [Settings(thinking=False), Settings(effort="high"), Settings(effort="max")])
def test_thinking_and_effort_keep_per_message_results(tmp_path, s):
    """Thinking on/off and effort change only the request's top-level fields on a chat route:
    the kept per-message results stay valid and are used, and the body equals a fresh one."""
    target = _target("deepseek", "m-1")
    store, sid, loaded = _kept(tmp_path, target)
    assert _cold(store, sid, loaded, target, s=s) == len(loaded)


def test_a_row_for_another_message_value_is_never_used(tmp_path):
    """A kept row is found only under its message's digest: a row whose digest is not the
    stored message's (here: rewritten under the wrong digest) is a miss, never spliced in."""
    target = _target("deepseek", "m-1")
    store, sid, loaded = _kept(tmp_path, target)
    ctx = context(target, Learned())
    rows = store.load_renders(sid, ctx)
    bogus = b'{"role":"user","content":"NOT THE STORED MESSAGE"}'
    store.save_renders(sid, ctx, [(seq, bytes(16), loop, bogus, basis, cost, summary)
                                  for seq, _, loop, _, basis, cost, summary in rows])
    assert _cold(store, sid, loaded, target) == len(loaded)  # rows load, none matches a message


def test_undecodable_rows_are_misses(tmp_path):
    target = _target("deepseek", "m-1")
    store, sid, loaded = _kept(tmp_path, target)
    ctx = context(target, Learned())
    with store._lock:
        store._c.execute("UPDATE renders SET summary = 'not json' WHERE seq = 1")
        store._c.execute("UPDATE renders SET body = 'text, not bytes' WHERE seq = 2")
        store._c.execute("UPDATE renders SET digest = X'00' WHERE seq = 3")
    assert len(store.load_renders(sid, ctx)) == len(loaded) - 2  # wrong types are left out on load
    assert _cold(store, sid, loaded, target) == len(loaded) - 2  # those two messages are built again
    memo = BuildMemo()  # a summary that does not decode costs that message's log entry, nothing else
    restore(memo, store, sid, target, Learned())
    _, plan = _build(loaded, target, Learned(), Settings(), memo)
    assert plan is not None
    before_loop = [pm for pm in plan.messages if pm.key is not None and not pm.key[3]]
    assert plan_summary(plan, memo)["kept"] == len(before_loop) - 2


def test_one_context_per_session_is_kept(tmp_path):
    """The bound: keeping results for a new context replaces the session's old ones."""
    a, b = _target("deepseek", "m-1"), _target("deepseek", "m-2")
    store, sid, loaded = _kept(tmp_path, a)
    memo = BuildMemo()
    _build(loaded, b, Learned(), Settings(), memo)
    keep(memo, store, sid, b, Learned(), loaded)
    assert store.load_renders(sid, context(a, Learned())) == []
    assert len(store.load_renders(sid, context(b, Learned()))) == len(loaded)
    with store._lock:
        assert store._c.execute("SELECT COUNT(*) FROM renders").fetchone()[0] == len(loaded)


def test_only_committed_messages_are_kept(tmp_path):
    """Results for messages the store does not hold (a pending message, another history) are
    not written."""
    target = _target("deepseek", "m-1")
    store = Store(tmp_path / "state.db")
    sid, loaded = _stored(store, _history()[:4])
    memo = BuildMemo()
    _build([*loaded, Message.user("pending")], target, Learned(), Settings(), memo)
    assert keep(memo, store, sid, target, Learned(), loaded) == 4


@pytest.mark.parametrize("key", ["anthropic", "deepseek"])
def test_a_new_process_plans_nothing_before_the_loop(tmp_path, key):
    """On a wire that merges turns (Anthropic) as on a chat route: every message before the
    open tool loop comes from the kept results (the structure pass reads only their kept
    render's emptiness), and the body equals a fresh build."""
    target = _target(key, "m-1")
    store = Store(tmp_path / "state.db")
    history = [m for m in _history() if not m.reasoning] + [Message.user("next")]
    sid, loaded = _stored(store, history)
    memo = BuildMemo()
    _build(loaded, target, Learned(), Settings(), memo)
    keep(memo, store, sid, target, Learned(), loaded)
    cold = BuildMemo()
    assert restore(cold, store, sid, target, Learned()) == len(loaded)
    body, plan = _build(loaded, target, Learned(), Settings(), cold)
    assert body == _build(loaded, target, Learned(), Settings(), None)[0]
    assert plan is not None and all(pm.kept for pm in plan.messages)
    if key == "anthropic":  # tool results and the next question merge into one user turn
        assert any(pm.joins for pm in plan.messages)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_kept_results_round_trip_on_both_backends(tmp_path, backend, request):
    """Digests are stored with the messages and read back with them (nothing hashed on load),
    kept rows round-trip byte for byte, a branch copies digests, and deleting the session
    deletes its rows — on SQLite and on a real PostgreSQL."""
    from hermes.messages import message_digest
    from hermes.store.pg import PgStore

    store = Store(tmp_path / "state.db") if backend == "sqlite" else PgStore(request.getfixturevalue("pg_url"))
    with store:
        target = _target("openrouter", "m-1")
        sid, loaded = _stored(store, _history())  # type: ignore[arg-type]
        assert all(m.digest == message_digest(m) for m in loaded)  # read from the column, and right
        memo = BuildMemo()
        _build(loaded, target, Learned(), Settings(), memo)
        assert keep(memo, store, sid, target, Learned(), loaded) == len(loaded)
        ctx = context(target, Learned())
        rows = store.load_renders(sid, ctx)
        assert sorted((r[0], r[3]) for r in rows) == sorted(
            (k[1], memo.renders[(k, ("openai_chat", target.route.call_signature, target.route.text_signature))])
            for k in memo.plans if len(k) == 4)
        assert _cold(store, sid, loaded, target) == len(loaded)
        branch = store.branch(sid)
        assert [m.digest for m in store.load(branch)] == [m.digest for m in loaded]
        assert store.load_renders(branch, ctx) == []  # a branch keeps its own, from its first turn
        store.delete_session(sid)
        assert store.load_renders(sid, ctx) == []
        store.save_renders(sid, ctx, rows)  # a deleted session keeps nothing
        assert store.load_renders(sid, ctx) == []
