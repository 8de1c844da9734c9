"""The chat wire renders exactly what the plan decided and reads every reasoning shape back."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from hermes.core.errors import StreamError, UnsupportedPart
from hermes.core.messages import (
    Compaction,
    Message,
    NativeRecord,
    Reasoning,
    RouteKey,
    Text,
    ToolCall,
    ToolResult,
)
from hermes.core.stream import Accumulator, FinishDelta, NativeDelta, ReasoningDelta, Response
from hermes.replay import Settings, plan_replay
from hermes.routing.resolve import Resolved, resolve
from hermes.wire import ToolSpec
from hermes.wire.openai_chat import (
    SUMMARY_PREFIX,
    decode_event,
    decoder,
    endpoint,
    from_wire,
    to_wire,
)

TOOLS = (ToolSpec("ls", "List files", {"type": "object", "properties": {"path": {"type": "string"}}}),)
BASE_KEYS = {"role", "content", "tool_calls"}


def target(key: str, model: str = "m1") -> Resolved:
    return resolve(key, None, model)


def history(origin: RouteKey, *, text: str = "I should list files.", blob: tuple[str, str] | None = None,
            native: NativeRecord | None = None) -> list[Message]:
    b, kind = blob if blob else (None, None)
    return [
        Message.system("be brief"),
        Message.user("what is here?"),
        Message("assistant", (Reasoning(text, origin, b, kind, native=native),
                              ToolCall("call_1", "ls", '{"path":"."}'))),
        Message("tool", (ToolResult("call_1", "a.txt"),)),
    ]


def body_for(key: str, hist: list[Message], *, stream: bool = False, model: str = "m1") -> dict[str, Any]:
    t = target(key, model)
    return to_wire(plan_replay(hist, t), tools=TOOLS, settings=Settings(), stream=stream)


def assistant(body: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in body["messages"] if m["role"] == "assistant")


def test_endpoint_adds_copilot_headers_only_for_copilot() -> None:
    url, headers = endpoint(target("deepseek"), stream=True)
    assert url == "https://api.deepseek.com/chat/completions" and headers == {}
    url, headers = endpoint(target("copilot"), stream=False)
    assert url == "https://api.githubcopilot.com/chat/completions"
    assert headers["copilot-integration-id"] and headers["editor-version"]


def test_body_shape_tools_stream_options_and_switches() -> None:
    t = target("deepseek")
    body = body_for("deepseek", history(t.key), stream=True)
    assert list(body)[:5] == ["model", "messages", "tools", "stream", "stream_options"]
    assert body["stream_options"] == {"include_usage": True}
    assert body["thinking"] == {"type": "enabled"}
    assert body["tools"] == [{"type": "function", "function": {
        "name": "ls", "description": "List files", "parameters": dict(TOOLS[0].parameters)}}]
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool"]
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"}
    plain = body_for("deepseek", history(t.key))
    assert plain["stream"] is False and "stream_options" not in plain


def test_must_echo_route_gets_reasoning_content_only() -> None:
    t = target("deepseek")
    a = assistant(body_for("deepseek", history(t.key)))
    assert set(a) == BASE_KEYS | {"reasoning_content"}
    assert a["reasoning_content"] == "I should list files." and a["content"] is None
    assert a["tool_calls"] == [{"id": "call_1", "type": "function",
                                "function": {"name": "ls", "arguments": '{"path":"."}'}}]


def test_must_echo_pads_a_tool_turn_without_reasoning() -> None:
    other = target("openrouter").key
    a = assistant(body_for("kimi", history(other, text="")))
    assert a["reasoning_content"] == " "


def test_strict_route_never_sees_a_reasoning_key() -> None:
    t = target("groq")
    native = NativeRecord(reasoning_opaque="op", tool_signatures=(("call_1", "sig"),))
    a = assistant(body_for("groq", history(t.key, native=native)))
    assert set(a) == BASE_KEYS
    assert set(a["tool_calls"][0]) == {"id", "type", "function"}
    assert set(a["tool_calls"][0]["function"]) == {"name", "arguments"}


def test_openrouter_gets_text_fields_and_its_own_details_verbatim() -> None:
    t = target("openrouter", "anthropic/claude-sonnet-4.5")
    details = [{"type": "reasoning.text", "text": "I should list files.", "signature": "EsSig==",
                "format": "anthropic-claude-v1", "index": 0}]
    hist = history(t.key, blob=(orjson.dumps(details).decode(), "openrouter.details"))
    a = assistant(body_for("openrouter", hist, model="anthropic/claude-sonnet-4.5"))
    assert set(a) == BASE_KEYS | {"reasoning_content", "reasoning", "reasoning_details"}
    assert a["reasoning_details"] == details


def test_copilot_native_fields_and_call_signature() -> None:
    t = target("copilot", "gemini-3-pro-preview")
    native = NativeRecord(reasoning_opaque="OPAQUE", reasoning_text="thinking",
                          tool_signatures=(("call_1", "TOOLSIG"),))
    a = assistant(body_for("copilot", history(t.key, native=native), model="gemini-3-pro-preview"))
    assert set(a) == BASE_KEYS | {"reasoning_text", "reasoning_opaque"}
    assert (a["reasoning_text"], a["reasoning_opaque"]) == ("thinking", "OPAQUE")
    assert a["tool_calls"][0]["function"]["thought_signature"] == "TOOLSIG"
    assert "extra_content" not in a["tool_calls"][0]


def test_gemini_compat_signatures_on_call_and_message() -> None:
    t = target("gemini-openai", "gemini-3-pro-preview")
    native = NativeRecord(thought_signature="MSGSIG", tool_signatures=(("call_1", "TOOLSIG"),))
    a = assistant(body_for("gemini-openai", history(t.key, native=native), model="gemini-3-pro-preview"))
    assert set(a) == BASE_KEYS | {"reasoning_content", "extra_content"}
    assert a["extra_content"] == {"google": {"thought_signature": "MSGSIG"}}
    assert a["tool_calls"][0]["extra_content"] == {"google": {"thought_signature": "TOOLSIG"}}
    assert "thought_signature" not in a["tool_calls"][0]["function"]


def test_native_record_reaches_only_its_own_route() -> None:
    cop = target("copilot", "m1").key
    native = NativeRecord(reasoning_opaque="OPAQUE", reasoning_text="thinking", tool_signatures=(("call_1", "S"),))
    a = assistant(body_for("openrouter", history(cop, native=native)))
    assert set(a) == BASE_KEYS | {"reasoning_content", "reasoning"}
    assert "extra_content" not in a["tool_calls"][0] and "thought_signature" not in a["tool_calls"][0]["function"]


def test_compaction_becomes_a_summary_user_message() -> None:
    hist = [Message("user", (Compaction("we listed files", replaced=4),)), Message.user("and now?")]
    body = body_for("deepseek", hist)
    assert body["messages"] == [{"role": "user", "content": SUMMARY_PREFIX + "we listed files"},
                                {"role": "user", "content": "and now?"}]


def test_text_turn_content_and_no_empty_tool_calls() -> None:
    t = target("glm")
    hist = [Message.user("hi"), Message("assistant", (Reasoning("hm", t.key), Text("hello")))]
    a = assistant(body_for("glm", hist))
    assert a == {"role": "assistant", "content": "hello", "reasoning_content": "hm"}
    bare = assistant(body_for("groq", [Message.user("hi"), Message("assistant", (Reasoning("hm", t.key),))]))
    assert bare == {"role": "assistant", "content": ""}


def test_a_part_the_wire_cannot_carry_raises() -> None:
    hist = [Message.user("hi"), Message("assistant", (ToolResult("x", "y"),))]
    with pytest.raises(UnsupportedPart, match="tool_result"):
        body_for("deepseek", hist)


# ----------------------------------------------------------------------------- decoding


def parse(payload: dict[str, Any], key: str = "openrouter") -> Response:
    t = target(key)
    return Accumulator(t.key).feed_all(decoder(t).from_wire(payload)).result()


def completion(msg: dict[str, Any], finish: str = "stop", usage: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"choices": [{"index": 0, "message": {"role": "assistant", **msg}, "finish_reason": finish}]}
    if usage:
        out["usage"] = usage
    return out


def test_reasoning_content_wins_over_reasoning() -> None:
    r = parse(completion({"content": "a", "reasoning_content": "rc", "reasoning": "r"}))
    assert [p.text for p in r.message.reasoning] == ["rc"]
    assert parse(completion({"content": "a", "reasoning": "r"})).message.reasoning[0].text == "r"


def test_copilot_fields_are_captured_natively() -> None:
    r = parse(completion({"content": None, "reasoning_text": "think", "reasoning_opaque": "OP",
                          "tool_calls": [{"id": "c1", "type": "function",
                                          "function": {"name": "ls", "arguments": "{}", "thought_signature": "TS"}}]},
                         "tool_calls"), "copilot")
    rp = r.message.parts[0]
    assert isinstance(rp, Reasoning) and rp.text == "think" and rp.origin.provider == "copilot"
    assert rp.native == NativeRecord(reasoning_opaque="OP", reasoning_text="think", tool_signatures=(("c1", "TS"),))


def test_gemini_compat_signatures_are_captured() -> None:
    r = parse(completion({"content": "x", "reasoning_content": "t",
                          "extra_content": {"google": {"thought_signature": "MS"}},
                          "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"},
                                          "extra_content": {"google": {"thought_signature": "TS"}}}]}), "gemini-openai")
    rp = r.message.reasoning[0]
    assert rp.native == NativeRecord(thought_signature="MS", tool_signatures=(("c1", "TS"),))


def test_mistral_thinking_chunks_and_usage() -> None:
    usage = {"prompt_tokens": 3, "completion_tokens": 9, "completion_tokens_details": {"reasoning_tokens": 5}}
    r = parse(completion({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]},
                                      {"type": "text", "text": "ok"}]}, usage=usage), "mistral")
    assert r.message.reasoning[0].text == "hmm" and r.message.text == "ok"
    assert r.usage["completion_tokens_details"] == {"reasoning_tokens": 5}


def test_think_tags_only_where_the_route_uses_them() -> None:
    r = parse(completion({"content": "<think>plan</think>\n\nanswer"}), "nous")
    assert (r.message.reasoning[0].text, r.message.text) == ("plan", "answer")
    r = parse(completion({"content": "<think>plan</think>answer"}), "deepseek")
    assert r.message.text == "<think>plan</think>answer" and not r.message.reasoning


@pytest.mark.parametrize("payload", [{"error": {"message": "upstream failed", "code": 502}}, {"id": "x"},
                                     {"choices": []}, [1, 2]])
def test_whole_response_without_an_answer_is_a_stream_error(payload: Any) -> None:
    with pytest.raises(StreamError):
        from_wire(payload)


def test_decode_event_edges() -> None:
    assert decode_event("message", "[DONE]") == []
    with pytest.raises(StreamError, match="not JSON"):
        decode_event("message", '{"choices": [')
    err = ('{"id":"g","object":"chat.completion.chunk","error":{"code":"server_error","message":"Provider '
           'disconnected"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}')
    with pytest.raises(StreamError, match="Provider disconnected"):
        decode_event("message", err)
    out = decode_event("message", '{"choices":[{"delta":{"reasoning_opaque":"O"},"finish_reason":"stop"}]}')
    assert ReasoningDelta("reasoning") in out and NativeDelta("reasoning", reasoning_opaque="O") in out
    assert out[-1] == FinishDelta("stop")
