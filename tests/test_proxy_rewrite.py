"""Properties of the proxy's request rewrite: transparent except for the reasoning it owns."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.core.messages import Message, Reasoning, Text, ToolCall
from hermes.proxy import message_key
from hermes.proxy.memory import prefixes
from hermes.proxy.rewrite import REASONING_KEYS, rewrite
from hermes.replay import PAD, Learned
from hermes.routing.resolve import resolve

ROUTES = ("deepseek", "kimi", "mistral", "gemini-openai", "openrouter", "glm", "copilot", "groq", "generic")
MODELS = {"gemini-openai": "gemini-3-pro-preview", "kimi": "kimi-k2.6", "copilot": "gemini-3-pro-preview"}

json_values = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=6),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                      max_size=3), max_leaves=6)
extra_keys = st.dictionaries(st.sampled_from(["name", "x_custom", "cache_control", "audio", "refusal"]),
                             json_values, max_size=2)
reasoning_keys = st.dictionaries(st.sampled_from(REASONING_KEYS),
                                 st.text(min_size=1, max_size=8) | st.just([{"type": "reasoning.text", "text": "t"}]),
                                 max_size=3)


@st.composite
def tool_call(draw: Any, n: int) -> dict[str, Any]:
    call: dict[str, Any] = {"id": f"call_{n}", "type": "function",
                            "function": {"name": draw(st.sampled_from(["ls", "cat"])),
                                         "arguments": draw(st.sampled_from(['{"p": 1}', "{}", "not json"]))}}
    if draw(st.booleans()):
        call["extra_content"] = {"google": {"thought_signature": draw(st.text(min_size=1, max_size=5))}}
    return call


@st.composite
def message(draw: Any, i: int) -> dict[str, Any]:
    role = draw(st.sampled_from(["user", "assistant", "tool", "system", "developer"]))
    m: dict[str, Any] = {"role": role, **draw(extra_keys)}
    if role == "assistant":
        calls = draw(st.lists(tool_call(i), max_size=2, unique_by=lambda c: c["id"]))
        m["content"] = draw(st.none() | st.text(max_size=10)) if calls else draw(st.text(max_size=10))
        if calls:
            m["tool_calls"] = calls
        m.update(draw(reasoning_keys))
    elif role == "tool":
        m.update(tool_call_id=f"call_{i}", content=draw(st.text(max_size=5)))
    else:
        m["content"] = draw(st.text(max_size=10) | st.just([{"type": "text", "text": "part"}]))
    return m


@st.composite
def request(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(1, 6))
    body: dict[str, Any] = {"model": "m", "messages": [draw(message(i)) for i in range(n)]}
    body.update(draw(st.dictionaries(st.sampled_from(["temperature", "tool_choice", "stream", "stream_options",
                                                      "response_format", "x_vendor", "thinking"]),
                                     json_values, max_size=3)))
    return body


def _plain(m: Any) -> Any:
    if not isinstance(m, dict):
        return m
    out = {k: v for k, v in m.items() if k not in REASONING_KEYS}
    if isinstance(out.get("tool_calls"), list):
        out["tool_calls"] = [{k: v for k, v in c.items() if k != "extra_content"} | (
            {"function": {k: v for k, v in c["function"].items() if k != "thought_signature"}}
            if isinstance(c.get("function"), dict) else {}) for c in out["tool_calls"]]
    return out


@settings(max_examples=300, deadline=None)
@given(body=request(), route=st.sampled_from(ROUTES))
def test_only_reasoning_keys_and_switches_change(body: dict[str, Any], route: str) -> None:
    target = resolve(route, "http://upstream.test/v1", MODELS.get(route, "model-x"))
    rw = rewrite(body, target, lambda keys: {})
    out = rw.body if rw.body is not None else body
    if not any(m.get("role") == "assistant" for m in body["messages"]):
        assert rw.body is None, "nothing to carry back: the client's bytes go as they are"
    assert set(out) - set(body) <= set(rw.switches)
    for k, v in body.items():
        if k != "messages" and k not in rw.switches:
            assert out[k] == v
    for k in rw.switches:  # a switch never overrides what the client set
        if isinstance(body.get(k), dict) and isinstance(out[k], dict):
            assert all(out[k].get(sk) == sv for sk, sv in body[k].items())
        elif k in body:
            assert out[k] == body[k]
    assert len(out["messages"]) == len(body["messages"])
    ids = {c["id"]: a["id"] for b, af in zip(body["messages"], out["messages"], strict=True)
           for c, a in zip(b.get("tool_calls") or (), af.get("tool_calls") or (), strict=True)}
    moved = {k: v for k, v in ids.items() if k != v}
    if getattr(target.route, "tool_ids", "any") == "any":
        assert not moved, "ids change only under a route's id rule"
    assert len(set(ids.values())) == len(ids), "a mapping never merges two calls"
    for before, after in zip(body["messages"], out["messages"], strict=True):
        if before.get("role") == "tool":
            assert after.get("tool_call_id") == moved.get(before.get("tool_call_id"), before.get("tool_call_id"))
            after = {**after, "tool_call_id": before.get("tool_call_id")}
        elif before.get("role") != "assistant":
            assert after is before
        if before.get("tool_calls"):
            after = {**after, "tool_calls": [{**a, "id": c["id"]} for a, c in
                                             zip(after["tool_calls"], before["tool_calls"], strict=True)]}
        assert _plain(after) == _plain(before)
        if before.get("role") == "assistant" and target.route.strict:
            assert not set(REASONING_KEYS) & set(after), "a strict route gets no reasoning key"
        if before.get("role") == "assistant" and target.route.must_echo and before.get("tool_calls"):
            assert after.get("reasoning_content"), "a must-echo route always gets reasoning_content"


@settings(max_examples=100, deadline=None)
@given(text=st.text(min_size=1, max_size=30), route=st.sampled_from(("deepseek", "glm", "kimi")))
def test_a_recognised_turn_gets_back_exactly_what_the_route_sent(text: str, route: str) -> None:
    target = resolve(route, "http://upstream.test/v1", "model-x")
    turn = Message("assistant", (Reasoning(text, target.key), ToolCall("call_9", "ls", '{"p": 1}')))
    sent = {"role": "assistant", "content": None,
            "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "ls", "arguments": '{"p":1}'}}]}
    body = {"model": "model-x", "messages": [{"role": "user", "content": "q"}, sent,
                                             {"role": "tool", "tool_call_id": "call_9", "content": "r"}]}
    key = message_key(turn, prefixes(body["messages"])[1])  # recorded after the user's "q"
    rw = rewrite(body, target, lambda keys: {key: turn} if key in keys else {})
    # blank reasoning on a route that does not need it: nothing to send, the body goes as it is
    got = rw.body["messages"][1] if rw.body is not None else sent
    want = text if text.strip() else PAD if target.route.must_echo else None
    assert got.get("reasoning_content") == want
    assert rw.actions[0].recognised
    learned = rewrite(body, target, lambda keys: {key: turn}, Learned(dropped=frozenset({"reasoning_content"})))
    if not target.route.must_echo:  # a learned rejection is honoured; must-echo never drops
        assert learned.body is None or "reasoning_content" not in learned.body["messages"][1]


def test_visible_text_turn_is_recognised_by_its_text() -> None:
    target = resolve("glm", "http://upstream.test/v1", "glm-5.1")
    turn = Message("assistant", (Reasoning("why", target.key), Text("Hello there.")))
    body = {"model": "glm-5.1", "messages": [{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": "Hello there."},
                                             {"role": "user", "content": "again"}]}
    key = message_key(turn, prefixes(body["messages"])[1])
    rw = rewrite(body, target, lambda keys: {key: turn} if key in keys else {})
    assert rw.body is not None
    assert rw.body["messages"][1] == {"role": "assistant", "content": "Hello there.", "reasoning_content": "why"}
    assert rw.body["thinking"] == {"type": "enabled", "clear_thinking": False}
