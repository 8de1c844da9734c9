"""Properties of the Responses door's translation (hypothesis).

* **Through the door and back, exactly.** Any stored tool-loop history, handed to a Responses
  client as output items (reasoning sealed into ``encrypted_content``) and sent back by it as
  input items, reaches the route with exactly the reasoning keys the planner gives the stored
  history itself — on a must-echo route (DeepSeek), a signed-details route (OpenRouter) and a
  per-call-signature route (Gemini's OpenAI endpoint).
* **Only as sealed.** The same history with one envelope altered, or sent under another
  tenant, or opened by another deployment's key, restores nothing for that turn.
* **Stream = whole.** Any delta sequence rendered as the Responses event stream decodes —
  with Hermes's own Responses decoder — to the turn the deltas fold to; the items of the
  ``output_item.done`` events are the completed response's output; the last envelope holds the
  turn's reasoning as folded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.agent.provider import SSESplitter
from hermes.core.messages import (
    Message,
    NativeRecord,
    Reasoning,
    RouteKey,
    Text,
    ToolCall,
    ToolResult,
)
from hermes.core.stream import (
    Accumulator,
    FinishDelta,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
)
from hermes.proxy.door import open_turns, seal_turn
from hermes.proxy.responses_door import chat_request, output_items
from hermes.proxy.responses_sse import ResponsesEvents
from hermes.proxy.rewrite import REASONING_KEYS, rewrite
from hermes.proxy.seal import Sealer
from hermes.replay import Learned, Settings, plan_replay
from hermes.routing.resolve import resolve
from hermes.wire import openai_responses
from hermes.wire.openai_chat import render_message

FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEALER = Sealer([bytes(range(32))])
TARGETS = {r: resolve(r, "http://upstream.test", m) for r, m in
           (("deepseek", "deepseek-v4-pro"), ("openrouter", "anthropic/claude-sonnet-4.5"),
            ("gemini-openai", "gemini-3-pro-preview"))}
TENANT = "t" * 64

words = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=30)
thoughts = words.filter(str.strip)
"""Readable reasoning (whitespace alone is no reasoning: the planner pads it like none)."""
ids = st.from_regex(r"call_[a-z0-9]{6}", fullmatch=True)


@st.composite
def turns(draw: st.DrawFn, route: str) -> list[Message]:
    """user, then 1-3 assistant steps (reasoning, maybe text, 0-2 calls) each answered by tool results."""
    origin = TARGETS[route].key
    history: list[Message] = [Message.user(draw(words))]
    used: set[str] = set()
    for _ in range(draw(st.integers(1, 3))):
        calls = [ToolCall(i, draw(st.sampled_from(["read", "ls"])), orjson.dumps({"p": draw(words)}).decode())
                 for i in draw(st.lists(ids, max_size=2, unique=True)) if i not in used]
        used |= {c.id for c in calls}
        text = draw(words) if not calls or draw(st.booleans()) else ""
        blob = orjson.dumps([{"type": "reasoning.text", "text": "x", "signature": draw(words), "index": 0}]).decode()
        reasoning = Reasoning(draw(thoughts), origin,
                              blob=blob if route == "openrouter" else None,
                              blob_kind="openrouter.details" if route == "openrouter" else None,
                              native=NativeRecord(tool_signatures=tuple((c.id, "sig-" + c.id) for c in calls))
                              if route == "gemini-openai" and calls else None)
        history.append(Message("assistant", (reasoning, *([Text(text)] if text else []), *calls)))
        if calls:
            history.append(Message("tool", tuple(ToolResult(c.id, draw(words)) for c in calls)))
        else:
            history.append(Message.user(draw(words)))
    return history


def _as_input(history: list[Message], sealer: Sealer, tenant: str, route: str) -> list[dict[str, Any]]:
    """The history as a store:false Responses client sends it back: its own output items as they came."""
    items: list[dict[str, Any]] = []
    for m in history:
        if m.role == "user":
            items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": m.text}]})
        elif m.role == "tool":
            items += [{"type": "function_call_output", "call_id": p.call_id, "output": p.content}
                      for p in m.parts if isinstance(p, ToolResult)]
        else:
            items += output_items(m, seal_turn(m.reasoning, sealer, tenant=tenant, route=route))
    return items


def _reasoning_keys(msg: dict[str, Any]) -> dict[str, Any]:
    out = {k: msg[k] for k in REASONING_KEYS if k in msg}
    out["calls"] = [{k: c.get(k) for k in ("extra_content",) if k in c} |
                    {"fn." + k: c["function"][k] for k in ("thought_signature",) if k in c["function"]}
                    for c in msg.get("tool_calls") or ()]
    return out


def _through_door(history: list[Message], route: str, *, seal_tenant: str = TENANT,
                  opener: Sealer = SEALER, alter: int | None = None) -> list[dict[str, Any]]:
    """The assistant messages of the chat body the route receives."""
    target = TARGETS[route]
    items = _as_input(history, SEALER, seal_tenant, route)
    if alter is not None:
        envs = [i for i in items if i.get("encrypted_content")]
        env = envs[alter % len(envs)]
        s = env["encrypted_content"]
        at = len(s) // 2
        env["encrypted_content"] = s[:at] + ("A" if s[at] != "A" else "B") + s[at + 1:]
    door = chat_request({"model": target.model, "input": items, "store": False}, target)
    extra, _ = open_turns(door.body["messages"], door.envelopes, opener, tenant=TENANT, route=route)
    rw = rewrite(door.body, target, lambda keys: {}, Learned(), extra)
    body = rw.body if rw.body is not None else door.body
    return [m for m in body["messages"] if m["role"] == "assistant"]


def _reference(history: list[Message], route: str) -> list[dict[str, Any]]:
    """The assistant messages Hermes itself renders for the stored history."""
    target = TARGETS[route]
    plan = plan_replay(history, target, Learned(), Settings())
    return [render_message(pm, target.route)[-1] for pm in plan.messages if pm.role == "assistant"]


@FAST
@given(st.sampled_from(sorted(TARGETS)).flatmap(lambda r: st.tuples(st.just(r), turns(r))))
def test_a_history_through_the_door_restores_exactly(case: tuple[str, list[Message]]) -> None:
    route, history = case
    got = [_reasoning_keys(m) for m in _through_door(history, route)]
    want = [_reasoning_keys(m) for m in _reference(history, route)]
    assert got == want
    assert any(len(k) > 1 for k in got), "the route takes some reasoning back"


def _carries(keys: dict[str, Any]) -> bool:
    return any(k != "calls" for k in keys) or any(keys["calls"])


def check_restores_only_as_sealed(through: Callable[..., list[dict[str, Any]]], route: str, history: list[Message],
                                  which: int, how: str) -> None:
    """A door's envelopes (``through``: the door, as ``_through_door``) restore only as sealed:
    an altered one, another tenant's or another deployment key's restores nothing, and the
    others are untouched. Both doors' properties share it."""
    got = [_reasoning_keys(m) for m in through(
        history, route, alter=which if how == "altered" else None,
        seal_tenant="another" if how == "tenant" else TENANT,
        opener=Sealer([bytes(range(1, 33))]) if how == "deployment" else SEALER)]
    want = [_reasoning_keys(m) for m in _reference(history, route)]
    spoiled = {which % len(want)} if how == "altered" else set(range(len(want)))
    for n, (g, w) in enumerate(zip(got, want, strict=True)):
        if n not in spoiled:
            assert g == w
        elif _carries(w):
            assert g != w, "an envelope that does not open restores nothing"
    originals = {p.text for m in history for p in m.reasoning}
    assert not originals & {g.get(k) for n, g in enumerate(got) if n in spoiled
                            for k in ("reasoning_content", "reasoning")}


@FAST
@given(st.sampled_from(sorted(TARGETS)).flatmap(lambda r: st.tuples(st.just(r), turns(r))),
       st.integers(0, 5), st.sampled_from(["altered", "tenant", "deployment"]))
def test_an_envelope_restores_only_as_sealed(case: tuple[str, list[Message]], which: int, how: str) -> None:
    check_restores_only_as_sealed(_through_door, *case, which, how)


# --- stream = whole --------------------------------------------------------------------------

@st.composite
def deltas(draw: st.DrawFn) -> list[Any]:
    out: list[Any] = [ReasoningDelta("reasoning", t) for t in draw(st.lists(thoughts, min_size=1, max_size=4))]
    out += [TextDelta("text", t) for t in draw(st.lists(words, max_size=3))]
    for n, call in enumerate(draw(st.lists(ids, max_size=2, unique=True))):
        out.append(ToolCallDelta(f"tool{n}", id=call, name="read"))
        out += [ToolCallDelta(f"tool{n}", arguments=a) for a in draw(st.lists(words, max_size=3))]
    out += [FinishDelta("tool_calls" if any(isinstance(d, ToolCallDelta) for d in out) else "stop"),
            UsageDelta({"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8})]
    return out


@FAST
@given(deltas(), st.integers(1, 4))
def test_the_event_stream_is_the_turn(ds: list[Any], per: int) -> None:
    origin = RouteKey("deepseek", "api.deepseek.com", "deepseek-v4-pro", "openai_chat")
    acc = Accumulator(origin)
    seal = lambda parts: seal_turn(parts, SEALER, tenant=TENANT, route="deepseek")
    events = ResponsesEvents({"model": "deepseek-v4-pro"}, seal, lambda: acc.snapshot().reasoning)
    sse = events.start()
    for i in range(0, len(ds), per):
        acc.feed_all(ds[i:i + per])
        sse += events.feed(ds[i:i + per])
    sse += events.finish(acc.result())
    parsed = SSESplitter().feed(sse.decode())
    payloads = [orjson.loads(data) for _, data in parsed]
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
    done = [p["item"] for p in payloads if p["type"] == "response.output_item.done"]
    final = payloads[-1]
    assert final["type"] == "response.completed" and final["response"]["output"] == done
    turn = Accumulator(origin).feed_all(d for e, data in parsed for d in openai_responses.decode_event(e, data))
    folded, want = turn.result().message, acc.result().message
    assert folded.text == want.text
    assert [(c.id, c.name, c.arguments) for c in folded.tool_calls] == [
        (c.id, c.name, c.arguments) for c in want.tool_calls]
    assert "".join(p.text for p in folded.reasoning) == "".join(p.text for p in want.reasoning)
    last = [i["encrypted_content"] for i in done if i["type"] == "reasoning"][-1]
    opened = open_turns([{"role": "assistant", "content": want.text or None,
                          "tool_calls": [{"id": c.id, "type": "function",
                                          "function": {"name": c.name, "arguments": c.arguments}}
                                         for c in want.tool_calls] or None}],
                        {0: [last]}, SEALER, tenant=TENANT, route="deepseek")[0]
    assert opened[0].reasoning == want.reasoning
