"""Hot sessions (``hermes.builder.hot``): two workers share one state.db and run alternate turns on
one session over real HTTP against the emulators. What must hold:

* every request a worker sends from its cached history and build cache is byte-for-byte the
  request a cold process would build from the store at that moment;
* a turn another worker committed is never missed: the next checkout loads exactly the new
  messages (``Store.load_tail``), and the history handed to the agent equals ``Store.load``;
* a failed turn is not checked back in, and anything that does not prove the cache current
  (a count that went down, a recreated session, no ``load_tail``) falls back to a full load.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from hermes.agent.loop import Agent
from hermes.agent.provider import get_wire
from hermes.builder import Builder
from hermes.builder.hot import HotSessions
from hermes.core.messages import Message, Text
from hermes.replay import Learned, Settings, plan_replay
from hermes.routing.resolve import resolve
from hermes.store import Store
from hermes.tools.builtins import Tool, Toolbox
from hermes.wire import ToolSpec

KEY = "sk-test-hot-0123456789"
ROUTES = [("deepseek", "deepseek-v4-pro"), ("anthropic", "claude-opus-4-6"), ("openai-responses", "gpt-5"),
          ("gemini", "gemini-2.5-flash")]


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[tuple[Any, Any]]:
    """Two workers' stores on one database: two connections to one state.db, or two pools on
    one PostgreSQL database."""
    if request.param == "sqlite":
        with Store(tmp_path / "state.db") as a, Store(tmp_path / "state.db") as b:
            yield a, b
    else:
        from hermes.store.pg import PgStore

        url = request.getfixturevalue("pg_url")
        with PgStore(url) as a, PgStore(url) as b:
            yield a, b


def _toolbox() -> Toolbox:
    spec = ToolSpec("list_dir", "List a directory", {"type": "object", "properties": {"path": {"type": "string"}}})
    return Toolbox([Tool(spec, lambda args, ctx: "a.py\nb.py\n")])


def _cold_body(store: Store, sid: str, text: str, resolved: Any, toolbox: Toolbox) -> Any:
    """The first request of a turn as a fresh process builds it: full load, no cache."""
    plan = plan_replay([*store.load(sid), Message.user(text)], resolved, Learned(), Settings())
    body = get_wire(resolved.route.wire).to_wire(plan, tools=toolbox.specs, settings=Settings(), stream=True)
    return orjson.loads(orjson.dumps(body))


def _hot_turn(hot: HotSessions, store: Store, sid: str, text: str, resolved: Any, toolbox: Toolbox) -> Any:
    info = store.get_session(sid)
    history, cache = hot.checkout(store, info)
    assert history == store.load(sid), "the cached history is not what is stored"
    result = Agent(store, toolbox, api_key=KEY, builder=cache).run_turn(sid, text, resolved, history=history)
    hot.checkin(info, result.history, cache)
    return result


@pytest.mark.parametrize("route,model", ROUTES)
def test_alternating_workers_send_what_a_cold_process_would(
        emulator: Any, stores: tuple[Store, Store], route: str, model: str, aws_env: None) -> None:
    resolved = resolve(route, emulator.url(route), model)
    toolbox = _toolbox()
    a_store, b_store = stores
    a, b = HotSessions(), HotSessions()
    sid = a_store.create_session(provider=route, model=model)
    plan = [(a, a_store), (a, a_store), (b, b_store), (a, a_store), (a, a_store), (b, b_store), (b, b_store)]
    for i, (hot, store) in enumerate(plan):
        text = f"turn {i}: which file is largest?"
        expected = _cold_body(store, sid, text, resolved, toolbox)
        n = len(emulator.requests(route))
        result = _hot_turn(hot, store, sid, text, resolved, toolbox)
        sent = emulator.requests(route)[n]["body"]
        assert sent == expected, f"turn {i}: hot request differs from the cold build"
        assert result.history == store.load(sid)
        assert len(emulator.requests(route)) - n == result.steps >= 2  # a tool step, then the answer
    # a: miss, hit, (b commits) tail, hit; b: miss, (a commits twice) tail, hit
    assert (a.misses, a.hits, a.tails) == (1, 2, 1)
    assert (b.misses, b.hits, b.tails) == (1, 1, 1)


def test_checkout_falls_back_to_a_full_load_when_the_cache_is_not_provably_current(stores: tuple[Store, Store]) -> None:
    store, _ = stores
    sid = store.create_session(provider="deepseek", model="deepseek-v4-pro")
    turn = [Message.user("q"), Message("assistant", (Text("a"),))]
    store.append_turn(sid, turn)
    hot = HotSessions()
    info = store.get_session(sid)
    history, cache = hot.checkout(store, info)
    hot.checkin(info, history, cache)

    # a count the cache cannot reach by appending (fewer stored messages than cached): full load
    hot.checkin(info, [*history, *turn], cache)
    got, got_cache = hot.checkout(store, info)
    assert got == store.load(sid) and got_cache is not cache and hot.misses == 2

    # same id, another creation time (a recreated session): full load, new cache
    hot.checkin(info, history, cache)
    got, got_cache = hot.checkout(store, dataclasses.replace(info, created=info.created + 1))
    assert got == history and got_cache is not cache and hot.misses == 3

    # another worker committed since: only the new messages are read, and the cache is kept
    hot.checkin(info, history, cache)
    store.append_turn(sid, turn)
    got, got_cache = hot.checkout(store, store.get_session(sid))
    assert got == store.load(sid) and got_cache is cache and hot.tails == 1


def test_a_turn_that_fails_after_committing_a_step_is_reloaded_next_time(
        emulator: Any, stores: tuple[Store, Store]) -> None:
    """Step 1 (user message, tool call, result) commits, then the model call of step 2 fails:
    the entry stays out of the cache, so the next turn reads the committed step from the store."""
    from hermes.core.errors import ProviderHTTPError

    store, _ = stores
    resolved = resolve("deepseek", emulator.url("deepseek"), "deepseek-v4-pro")
    sid = store.create_session(provider="deepseek", model="deepseek-v4-pro")
    hot = HotSessions()
    _hot_turn(hot, store, sid, "first", resolved, _toolbox())
    spec = ToolSpec("list_dir", "List a directory", {"type": "object", "properties": {"path": {"type": "string"}}})

    def failing_next(args: Any, ctx: Any) -> str:
        emulator.state.set_control("deepseek", fault="html502", times=-1)  # retries too
        return "a.py\n"

    before = len(store.load(sid))
    try:
        with pytest.raises(ProviderHTTPError):
            _hot_turn(hot, store, sid, "second", resolved, Toolbox([Tool(spec, failing_next)]))
    finally:
        emulator.state.set_control("deepseek", fault=None)
    assert len(store.load(sid)) > before and len(hot) == 0  # a step committed; nothing checked in
    result = _hot_turn(hot, store, sid, "third", resolved, _toolbox())
    assert (hot.misses, hot.hits) == (2, 1)  # first: miss; second: hit (then failed); third: miss
    assert any("second" in m.text for m in result.history if m.role == "user")


def test_capacity_and_message_budget_evict_the_least_recently_used() -> None:
    info = dataclasses.make_dataclass("I", ["id", "created", "message_count"])
    hot = HotSessions(capacity=2)
    for i in range(3):
        hot.checkin(info(f"s{i}", 1.0, 0), [], Builder())
    assert len(hot) == 2 and "s0" not in hot._entries

    hot = HotSessions(capacity=10, max_messages=5)
    msg = [Message.user("m")]
    hot.checkin(info("a", 1.0, 2), msg * 2, Builder())
    hot.checkin(info("b", 1.0, 2), msg * 2, Builder())
    hot.checkin(info("a", 1.0, 3), msg * 3, Builder())  # a again, grown: 5 messages in all
    assert list(hot._entries) == ["b", "a"]
    hot.checkin(info("c", 1.0, 1), msg, Builder())  # 6 > 5: the least recently used (b) goes
    assert list(hot._entries) == ["a", "c"]
    hot.drop("a")
    hot.checkin(info("d", 1.0, 4), msg * 4, Builder())  # 1 + 4 fits again once a is dropped
    assert list(hot._entries) == ["c", "d"]
