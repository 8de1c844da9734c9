"""Every chat personality, over real HTTP, through the real call path: think + call a tool, then
send the tool result and check that request 2 carried turn 1's reasoning in exactly the route's
fields — asserted on the body the emulator logged, present keys and absent keys.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from hermes.agent import provider
from hermes.core.errors import ProviderHTTPError
from hermes.core.messages import Message, Reasoning, RouteKey, Text, ToolCall, ToolResult
from hermes.routing.resolve import resolve
from hermes.routing.routes import ROUTES as TABLE
from hermes.wire import ToolSpec

pytest.importorskip("hermes.emulate.openai_chat")  # until the chat emulator is on this branch
FACTS = pytest.importorskip("hermes.emulate.chat_rules").FACTS

ROUTES = [r.key for r in TABLE if r.wire == "openai_chat"]
"""Every chat-completions row of the table: a new row is scenario-tested without editing this file."""
MODEL = {"copilot": "gemini-3-pro-preview", "gemini-openai": "gemini-3-pro-preview", "openai": "gpt-oss-120b"}
TOOLS = (ToolSpec("ls", "List files", {"type": "object", "properties": {"path": {"type": "string"}},
                                       "required": ["path"]}),)
CARRIER_KEYS = {"reasoning_content", "reasoning", "reasoning_details", "reasoning_text", "reasoning_opaque",
                "extra_content"}


def test_every_chat_row_has_an_emulator_personality() -> None:
    assert sorted(ROUTES) == sorted(FACTS)


def model_for(key: str) -> str:
    return MODEL.get(key, FACTS[key].models[0])


def run(emu: Any, key: str, history: list[Message], *, stream: bool, model: str | None = None) -> tuple[
        provider.Exchange, dict[str, Any]]:
    resolved = resolve(key, emu.url(key), model or model_for(key))
    before = len(emu.requests(key))
    ex = provider.complete(resolved, history, tools=TOOLS, stream=stream, api_key="test-key")
    logged = emu.requests(key)[before:]
    assert len(logged) == 1, "one request, no retry"
    return ex, logged[0]["body"]


def sent_assistant(body: dict[str, Any]) -> dict[str, Any]:
    return [m for m in body["messages"] if m["role"] == "assistant"][-1]


def two_turns(emu: Any, key: str, stream: bool) -> tuple[Message, dict[str, Any], provider.Exchange]:
    history = [Message.system("You are terse."), Message.user(f"what is in the workspace? ({key}, {stream})")]
    ex1, _ = run(emu, key, history, stream=stream)
    turn1 = ex1.response.message
    assert ex1.response.finish_reason == "tool_calls"
    call = turn1.tool_calls[0]
    history += [turn1, Message("tool", (ToolResult(call.id, "a.txt b.txt", "ls"),))]
    ex2, body2 = run(emu, key, history, stream=stream)
    return turn1, body2, ex2


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("key", ROUTES)
def test_tool_loop_replays_reasoning_in_exactly_the_routes_fields(emulator: Any, key: str, stream: bool) -> None:
    turn1, body2, ex2 = two_turns(emulator, key, stream)
    route = resolve(key, emulator.url(key), model_for(key)).route
    reasoning = turn1.reasoning
    part = reasoning[0] if reasoning else None
    if part is not None:
        assert turn1.parts[0] is part and part.origin.provider == key
    text = part.text.strip() if part else ""

    expected: dict[str, Any] = {}
    if not route.strict:
        for f in ("reasoning_content", "reasoning"):
            if f in route.carriers and text:
                expected[f] = part.text if part else None
        if route.must_echo and not text:
            expected["reasoning_content"] = " "
        if "reasoning_details" in route.carriers and part is not None and part.blob_kind == "openrouter.details":
            expected["reasoning_details"] = orjson.loads(part.blob or "")
    native = part.native if part is not None else None
    if native and "reasoning_opaque" in route.native and native.reasoning_opaque:
        expected["reasoning_opaque"] = native.reasoning_opaque
        if native.reasoning_text:
            expected["reasoning_text"] = native.reasoning_text
    if native and native.thought_signature and "thought_signature" in route.native:
        expected["extra_content"] = {"google": {"thought_signature": native.thought_signature}}

    sent = sent_assistant(body2)
    assert {k: v for k, v in sent.items() if k in CARRIER_KEYS} == expected
    assert set(sent) == {"role", "content", "tool_calls", *expected}
    sent_call = sent["tool_calls"][0]
    sigs = dict(native.tool_signatures) if native else {}
    call_id = turn1.tool_calls[0].id
    if call_id in sigs and "tool_signatures" in route.native:
        if "reasoning_opaque" in route.native:
            assert sent_call["function"]["thought_signature"] == sigs[call_id]
            assert "extra_content" not in sent_call
        else:
            assert sent_call["extra_content"] == {"google": {"thought_signature": sigs[call_id]}}
    else:
        assert set(sent_call) == {"id", "type", "function"} and set(sent_call["function"]) == {"name", "arguments"}

    if route.strict:
        assert not (set(sent) & CARRIER_KEYS - set(route.native) - {"reasoning_text", "extra_content"})
    answer = ex2.response
    assert answer.finish_reason == "stop" and "Done" in answer.message.text


@pytest.mark.parametrize("key", ["deepseek", "kimi", "mimo"])
def test_must_echo_pads_a_tool_turn_that_had_no_reasoning(emulator: Any, key: str) -> None:
    history = [Message.user("list files"),
               Message("assistant", (ToolCall("call_x1", "ls", '{"path":"."}'),)),
               Message("tool", (ToolResult("call_x1", "a.txt", "ls"),))]
    ex, body = run(emulator, key, history, stream=True)
    assert sent_assistant(body)["reasoning_content"] == " "
    assert ex.response.finish_reason == "stop"


@pytest.mark.parametrize("model", ["deepseek-v4-pro", "DeepSeek-R1-0528", "mimo-v2-flash"])
def test_a_must_echo_model_behind_an_unknown_host_is_padded(emulator: Any, model: str) -> None:
    history = [Message.user("list files"),
               Message("assistant", (ToolCall("call_x1", "ls", '{"path":"."}'),)),
               Message("tool", (ToolResult("call_x1", "a.txt", "ls"),))]
    emulator.state.add_models("generic", model)  # a relay serves whatever its upstream does
    ex, body = run(emulator, "generic", history, stream=False, model=model)
    assert sent_assistant(body)["reasoning_content"] == " "
    assert ex.response.finish_reason == "stop"
    # the relay passes the upstream's refusal through as it is
    with pytest.raises(ProviderHTTPError) as err:
        provider.complete(resolve("generic", emulator.url("generic"), model), history, tools=TOOLS, api_key="k",
                          body_hook=lambda b: {**b, "messages": [{k: v for k, v in m.items() if k != "reasoning_content"}
                                                                 for m in b["messages"]]})
    assert "The `reasoning_content` in the thinking mode must be passed back to the API." in err.value.body


def test_another_model_behind_an_unknown_host_is_not_padded(emulator: Any) -> None:
    history = [Message.user("list files"),
               Message("assistant", (ToolCall("call_x1", "ls", '{"path":"."}'),)),
               Message("tool", (ToolResult("call_x1", "a.txt", "ls"),))]
    emulator.state.add_models("generic", "llama-4-scout")
    _, body = run(emulator, "generic", history, stream=False, model="llama-4-scout")
    assert "reasoning_content" not in sent_assistant(body)


@pytest.mark.parametrize("source", ["copilot", "gemini-openai"])
def test_native_fields_reach_only_their_own_route(emulator: Any, source: str) -> None:
    history = [Message.user(f"look around ({source} then switch)")]
    ex1, _ = run(emulator, source, history, stream=True)
    turn1 = ex1.response.message
    native = turn1.reasoning[0].native
    assert native and native.tool_signatures, "turn 1 captured its native record"
    call = turn1.tool_calls[0]
    history += [turn1, Message("tool", (ToolResult(call.id, "a.txt", "ls"),))]
    targets = ("openrouter", "groq") + (("copilot",) if source == "gemini-openai" else ())
    for target in targets:
        _, body = run(emulator, target, history, stream=False)
        sent = sent_assistant(body)
        assert not {"reasoning_opaque", "reasoning_text", "extra_content"} & set(sent), target
        assert set(sent["tool_calls"][0]) == {"id", "type", "function"}, target
        assert set(sent["tool_calls"][0]["function"]) == {"name", "arguments"}, target
    # and back on its own route, the record is sent again
    _, body = run(emulator, source, history, stream=False)
    sent = sent_assistant(body)
    if source == "copilot":
        assert sent["reasoning_opaque"] == native.reasoning_opaque
        assert sent["tool_calls"][0]["function"]["thought_signature"] == dict(native.tool_signatures)[call.id]
    else:
        assert sent["tool_calls"][0]["extra_content"]["google"]["thought_signature"] == dict(
            native.tool_signatures)[call.id]


def test_stored_turn_is_the_same_streamed_or_not(emulator: Any) -> None:
    for key in ("openrouter", "copilot", "nous", "minimax", "gemini-openai"):
        history = [Message.user(f"same either way ({key})")]
        a, _ = run(emulator, key, history, stream=False)
        b, _ = run(emulator, key, history, stream=True)
        pa = [p for p in a.response.message.parts if isinstance(p, Reasoning)]
        pb = [p for p in b.response.message.parts if isinstance(p, Reasoning)]
        assert pa == pb and a.response.message.tool_calls == b.response.message.tool_calls, key


def test_foreign_tool_turn_to_gemini_compat_is_accepted(emulator: Any) -> None:
    history = [Message.user("look around (copilot then gemini-openai)")]
    ex1, _ = run(emulator, "copilot", history, stream=False)
    call = ex1.response.message.tool_calls[0]
    history += [ex1.response.message, Message("tool", (ToolResult(call.id, "a.txt", "ls"),))]
    ex2, _ = run(emulator, "gemini-openai", history, stream=False)
    assert ex2.response.finish_reason == "stop"


@pytest.mark.parametrize(("key", "model"), [("groq", "openai/gpt-oss-120b"), ("groq", "qwen/qwen3-32b"),
                                            ("cerebras", "gpt-oss-120b")])
def test_groq_and_cerebras_reasoning_models_get_their_reasoning_back(emulator: Any, key: str, model: str) -> None:
    history = [Message.user(f"what is in the workspace? ({key})")]
    ex1, _ = run(emulator, key, history, stream=False, model=model)
    turn1 = ex1.response.message
    assert turn1.reasoning and turn1.tool_calls
    history += [turn1, Message("tool", (ToolResult(turn1.tool_calls[0].id, "a.txt", "ls"),))]
    _, body = run(emulator, key, history, stream=False, model=model)
    sent = sent_assistant(body)
    assert sent["reasoning"] == turn1.reasoning[0].text and "reasoning_content" not in sent


def test_a_groq_model_without_reasoning_gets_none_back(emulator: Any) -> None:
    origin = RouteKey("groq", "127.0.0.1", "moonshotai/kimi-k2-instruct", "openai_chat")
    history = [Message.user("list"), Message("assistant", (Reasoning("thought", origin), Text("ok"))),
               Message.user("again")]
    _, body = run(emulator, "groq", history, stream=False, model="moonshotai/kimi-k2-instruct")
    assert "reasoning" not in sent_assistant(body)
    with pytest.raises(ProviderHTTPError) as err:
        provider.complete(resolve("groq", emulator.url("groq"), "moonshotai/kimi-k2-instruct"), history,
                          api_key="k", body_hook=lambda b: {**b, "messages": [
                              {**m, "reasoning": "thought"} if m["role"] == "assistant" else m
                              for m in b["messages"]]})
    assert "messages[1].reasoning: reasoning is not supported with this model" in err.value.body


def test_magistral_thinking_chunks_go_back_inside_content(emulator: Any) -> None:
    history = [Message.user("what is in the workspace? (magistral)")]
    for stream in (False, True):
        ex1, _ = run(emulator, "mistral", history, stream=stream, model="magistral-medium-2509")
        turn1 = ex1.response.message
        assert turn1.reasoning and turn1.reasoning[0].text and turn1.tool_calls
        h = [*history, turn1, Message("tool", (ToolResult(turn1.tool_calls[0].id, "a.txt", "ls"),))]
        _, body = run(emulator, "mistral", h, stream=stream, model="magistral-medium-2509")
        sent = sent_assistant(body)
        assert sent["content"][0] == {"type": "thinking", "thinking": [{"type": "text", "text": turn1.reasoning[0].text}]}
        assert not {"reasoning", "reasoning_content"} & set(sent)


def test_other_mistral_models_get_no_thinking_chunk(emulator: Any) -> None:
    origin = RouteKey("mistral", "127.0.0.1", "mistral-medium-3.5", "openai_chat")
    history = [Message.user("hi"), Message("assistant", (Reasoning("thought", origin), Text("ok"))), Message.user("again")]
    _, body = run(emulator, "mistral", history, stream=False, model="mistral-medium-3.5")
    assert sent_assistant(body)["content"] == "ok"
