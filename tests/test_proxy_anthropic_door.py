"""The Anthropic door's translation, both ways (hermes/proxy/anthropic_door.py, anthropic_out.py).

Properties: any turn a route returns, rendered to a Messages answer (whole or streamed) and sent
back by the client as its assistant message, restores exactly the reasoning parts the route
returned, and ``rewrite`` then gives the route exactly its own carriers; an altered signature,
or one sealed for another tenant, restores nothing.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.agent.provider import SSESplitter
from hermes.core.messages import Message, Reasoning, Text, ToolCall
from hermes.core.stream import (
    Accumulator,
    FinishDelta,
    NativeDelta,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
)
from hermes.proxy.anthropic_door import DoorError, to_chat
from hermes.proxy.anthropic_out import StreamWriter, usage, whole_message
from hermes.proxy.door import open_turns, seal_turn
from hermes.proxy.rewrite import rewrite
from hermes.proxy.seal import Sealer
from hermes.routing.resolve import resolve

SEALER = Sealer([bytes(range(32))])
DS = resolve("deepseek", None, "deepseek-v4-pro")
ROW = DS.route
ORIGIN = DS.key
TENANT = "tenant-a"

texts = st.text(max_size=60)
names = st.from_regex(r"[a-z_]{1,12}", fullmatch=True)
args = st.dictionaries(names, st.one_of(st.integers(-10**6, 10**6), st.text(max_size=10)), max_size=3)


@st.composite
def turns(draw: st.DrawFn) -> tuple[str, str, list[tuple[str, str, dict[str, Any]]]]:
    reasoning = draw(st.text(min_size=1, max_size=80).filter(str.strip))  # blank reasoning is no reasoning (padded)
    text = draw(texts)
    calls = [(f"call_{i}_{draw(names)}", draw(names), draw(args)) for i in range(draw(st.integers(0, 3)))]
    if not text.strip() and not calls:
        text = "done"
    return reasoning, text, calls


def _message(reasoning: str, text: str, calls: list[tuple[str, str, dict[str, Any]]]) -> Message:
    parts: list[Any] = [Reasoning(reasoning, ORIGIN)]
    if text:
        parts.append(Text(text))
    parts += [ToolCall(i, n, orjson.dumps(a).decode()) for i, n, a in calls]
    return Message("assistant", tuple(parts))


def _seal(tenant: str = TENANT) -> Any:
    return lambda parts: seal_turn(parts, SEALER, tenant=tenant, route=ROW.key) or ""


def _deltas(reasoning: str, text: str, calls: list[tuple[str, str, dict[str, Any]]], late: bool) -> list[Any]:
    """The deltas a chat route's stream decodes into, a few characters at a time; ``late``: each
    call carries a signature (Gemini's, arriving after the text)."""
    out: list[Any] = [ReasoningDelta("reasoning", reasoning[i:i + 7]) for i in range(0, len(reasoning), 7)]
    out += [TextDelta("text", text[i:i + 5]) for i in range(0, len(text), 5)]
    for j, (i, n, a) in enumerate(calls):
        raw = orjson.dumps(a).decode()
        out.append(ToolCallDelta(f"t{j}", i, n, raw[:3]))
        if late:
            out.append(NativeDelta(tool_signature=(f"t{j}", f"sig-{j}")))
        out.append(ToolCallDelta(f"t{j}", None, None, raw[3:]))
    out += [FinishDelta("tool_calls" if calls else "stop"), UsageDelta({"prompt_tokens": 10, "completion_tokens": 5})]
    return out


def _assemble(stream: bytes) -> dict[str, Any]:
    """A streamed answer put together the way the Anthropic SDKs do (by event and index)."""
    msg: dict[str, Any] = {}
    json_parts: dict[int, str] = {}
    events = SSESplitter().feed(stream.decode())
    for event, data in events:
        d = orjson.loads(data)
        assert d["type"] == event
        if event == "message_start":
            msg = d["message"]
        elif event == "content_block_start":
            assert d["index"] == len(msg["content"])
            msg["content"].append(dict(d["content_block"]))
        elif event == "content_block_delta":
            b, delta = msg["content"][d["index"]], d["delta"]
            kind = delta["type"]
            if kind == "thinking_delta":
                b["thinking"] += delta["thinking"]
            elif kind == "signature_delta":
                b["signature"] = delta["signature"]
            elif kind == "text_delta":
                b["text"] += delta["text"]
            elif kind == "input_json_delta":
                json_parts[d["index"]] = json_parts.get(d["index"], "") + delta["partial_json"]
        elif event == "content_block_stop":
            if d["index"] in json_parts:
                msg["content"][d["index"]]["input"] = orjson.loads(json_parts[d["index"]])
        elif event == "message_delta":
            msg.update(d["delta"])
            msg["usage"] = {**msg["usage"], **d["usage"]}
    assert events[-1][0] == "message_stop"
    return msg


def _back(answer: dict[str, Any], *, tenant: str = TENANT) -> tuple[dict[str, Any], dict[int, Message], int]:
    """The client's next request carrying ``answer`` back, through the door."""
    req = {"model": "deepseek-v4-pro", "max_tokens": 100, "messages": [
        {"role": "user", "content": "go"}, {"role": "assistant", "content": answer["content"]},
        *([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": b["id"], "content": "ok"}
                                        for b in answer["content"] if b["type"] == "tool_use"]}]
          if any(b["type"] == "tool_use" for b in answer["content"]) else [{"role": "user", "content": "more"}])]}
    tr = to_chat(req, DS)
    extra, refused = open_turns(tr.body["messages"], tr.envelopes, SEALER, tenant=tenant, route=ROW.key)
    return tr.body, extra, refused


def _restored(body: dict[str, Any], extra: dict[int, Message]) -> dict[str, Any]:
    rw = rewrite(body, DS, lambda keys: {}, opened=extra)
    sent = rw.body if rw.body is not None else body
    return next(m for m in sent["messages"] if m["role"] == "assistant")


@settings(max_examples=150, deadline=None)
@given(turns(), st.booleans(), st.booleans())
def test_any_turn_through_the_door_and_back_restores_exactly(turn: Any, streamed: bool, late: bool) -> None:
    reasoning, text, calls = turn
    msg = _message(reasoning, text, calls)
    late = late and streamed and bool(calls)
    if streamed:
        acc = Accumulator(ORIGIN)
        w = StreamWriter(acc.snapshot, "deepseek-v4-pro", _seal())
        out = [w.start()]
        for d in _deltas(reasoning, text, calls, late):
            acc.feed(d)
            out.append(w.feed(d))
        out.append(w.end())
        answer = _assemble(b"".join(out))
        msg = acc.snapshot()
        assert bool(msg.reasoning[0].native) == late
    else:
        answer = whole_message(msg, "tool_calls" if calls else "stop", {}, "deepseek-v4-pro", _seal())
    kinds = [b["type"] for b in answer["content"]]
    extra_block = ["thinking"] if late and text else []  # the late signatures' own envelope
    assert kinds == ["thinking"] + (["text"] if text else []) + extra_block + ["tool_use"] * len(calls)
    assert answer["content"][0]["thinking"] == reasoning
    assert answer["stop_reason"] == ("tool_use" if calls else "end_turn")
    assert [(b["id"], b["name"], b["input"]) for b in answer["content"] if b["type"] == "tool_use"] == calls
    body, extra, refused = _back(answer)
    assert refused == 0 and len(extra) == 1
    assert next(iter(extra.values())).reasoning == msg.reasoning  # the route's parts, exactly
    sent = _restored(body, extra)
    assert sent["reasoning_content"] == reasoning  # what DeepSeek must get back
    assert sent["content"] == (text or None)
    assert [(c["id"], c["function"]["name"], orjson.loads(c["function"]["arguments"]))
            for c in sent.get("tool_calls", [])] == calls


@settings(max_examples=100, deadline=None)
@given(turns(), st.data())
def test_an_altered_or_foreign_signature_restores_nothing(turn: Any, data: st.DataObject) -> None:
    msg = _message(*turn)
    answer = whole_message(msg, "stop", {}, "m", _seal())
    sig = answer["content"][0]["signature"]
    if data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(sig) - 1))
        answer["content"][0]["signature"] = sig[:i] + ("A" if sig[i] != "A" else "B") + sig[i + 1:]
        tenant = TENANT
    else:
        tenant = "tenant-b"  # the same client key on another tenant
    body, extra, refused = _back(answer, tenant=tenant)
    assert extra == {} and refused == 1
    assert "reasoning_content" not in body["messages"][2]


def test_request_translation() -> None:
    req = {"model": "m", "max_tokens": 64, "system": [{"type": "text", "text": "be brief", "cache_control": {}}],
           "stop_sequences": ["END"], "temperature": 0.2, "stream": True, "metadata": {"user_id": "u"},
           "tools": [{"name": "read", "description": "Read a file",
                      "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
           "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
           "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"},
                                                     {"type": "image", "source": {"type": "base64",
                                                                                  "media_type": "image/png",
                                                                                  "data": "AAAA"}}]},
                        {"role": "assistant", "content": [
                            {"type": "thinking", "thinking": "t", "signature": "sig-1"},
                            {"type": "text", "text": "reading"},
                            {"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "a"}}]},
                        {"role": "user", "content": [
                            {"type": "tool_result", "tool_use_id": "c1", "is_error": True,
                             "content": [{"type": "text", "text": "no such file"}]},
                            {"type": "text", "text": "try b"}]}]}
    tr = to_chat(req, DS)
    assert tr.body == {
        "model": "m", "max_tokens": 64, "stop": ["END"], "temperature": 0.2, "stream": True,
        "stream_options": {"include_usage": True}, "parallel_tool_calls": False, "tool_choice": "required",
        "tools": [{"type": "function", "function": {"name": "read", "description": "Read a file",
                                                    "parameters": req["tools"][0]["input_schema"]}}],
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "hi"},
                                         {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
            {"role": "assistant", "content": "reading", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path":"a"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "Error: no such file"},
            {"role": "user", "content": "try b"}]}
    assert tr.envelopes == {2: ["sig-1"]}
    assert tr.dropped == ("metadata",)


@pytest.mark.parametrize(("req", "says"), [
    ({"model": "m", "messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]},
     "'document' block cannot be sent"),
    ({"model": "m", "messages": [{"role": "user", "content": "x"}],
      "tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "Anthropic server tool"),
    ({"model": "m", "messages": [{"role": "tool", "content": "x"}]}, "role must be"),
    ({"messages": []}, "model: field required"),
])
def test_what_cannot_be_served_is_named(req: dict[str, Any], says: str) -> None:
    with pytest.raises(DoorError, match=says):
        to_chat(req, DS)


def test_thinking_switches_and_effort_are_the_routes_own() -> None:
    req = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
           "thinking": {"type": "disabled"}}
    body = to_chat(req, DS).body
    assert ROW.thinking_off and all(body[k] == v for k, v in ROW.thinking_off.items())
    req["thinking"] = {"type": "enabled", "budget_tokens": 1024}
    assert to_chat(req, DS).body["thinking"] == ROW.switches["thinking"] == {"type": "enabled"}
    req["thinking"], req["output_config"] = {"type": "adaptive"}, {"effort": "high"}
    kimi = resolve("kimi", None, "kimi-k2.6")
    assert to_chat(req, kimi).body["thinking"] == {**kimi.route.switches["thinking"], "effort": "high"}


def test_usage_in_anthropic_terms() -> None:
    assert usage({"prompt_tokens": 100, "completion_tokens": 7, "prompt_cache_hit_tokens": 60}) == {
        "input_tokens": 40, "output_tokens": 7, "cache_read_input_tokens": 60}
    assert usage({}) == {"input_tokens": 0, "output_tokens": 0}
