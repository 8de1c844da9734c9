"""Anthropic Messages: wire + emulators (direct, Vertex, Foundry), over real loopback HTTP.

The emulators verify every replayed thinking signature with an HMAC bound to (model, block
content), so an accepted request proves the blocks went back byte-exact; the official
``anthropic`` SDK parsing every emulator response keeps the emulators honest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.agent import provider
from hermes.core.errors import ProviderHTTPError, StreamError, UnsupportedPart
from hermes.core.messages import Message, Reasoning, RouteKey, Text, ToolCall, ToolResult
from hermes.core.stream import Delta, fold
from hermes.emulate import Emulator
from hermes.replay import PlannedMessage, ReplayPlan, Settings, plan_replay
from hermes.routing.resolve import Resolved, resolve
from hermes.wire import ToolSpec
from hermes.wire import anthropic as wire

TOOLS = (
    ToolSpec("list_files", "List files in a directory",
             {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    ToolSpec("read_file", "Read one file",
             {"type": "object", "properties": {"name": {"type": "string"}, "lines": {"type": "integer"}},
              "required": ["name", "lines"]}),
)
ROUTES = ("anthropic", "anthropic-vertex", "anthropic-foundry")
THINKING = ("thinking", "redacted_thinking")


def _resolved(emu: Emulator, route: str, model: str) -> Resolved:
    return resolve(route, emu.url(route), model)


def _run_turn(emu: Emulator, route: str, model: str, history: list[Message], *, stream: bool,
              settings_: Settings | None = None) -> list[provider.Exchange]:
    """Drive the tool loop of one user turn to its answer; tool results are canned."""
    resolved = _resolved(emu, route, model)
    out: list[provider.Exchange] = []
    while True:
        ex = provider.complete(resolved, history, tools=TOOLS, settings=settings_ or Settings(), stream=stream, api_key="test")
        out.append(ex)
        history.append(ex.response.message)
        calls = ex.response.message.tool_calls
        if not calls:
            return out
        history.append(Message("tool", tuple(ToolResult(c.id, f"output of {c.name}", c.name) for c in calls)))
        assert len(out) < 6, "scripted model never answered"


def _thinking_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for m in body["messages"] if m["role"] == "assistant" for b in m["content"] if b["type"] in THINKING]


def _as_block(p: Reasoning) -> dict[str, Any]:
    if p.blob_kind == wire.REDACTED:
        return {"type": "redacted_thinking", "data": p.blob}
    return {"type": "thinking", "thinking": p.text, "signature": p.blob}


def _stored_blocks(history: list[Message], upto: int) -> list[dict[str, Any]]:
    return [_as_block(p) for m in history[:upto] if m.role == "assistant" for p in m.reasoning]


# ----------------------------------------------------------------------------- tool loops


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize(("route", "model"), [
    ("anthropic", "claude-sonnet-4-6-redact"),
    ("anthropic-vertex", "claude-opus-4-6"),
    ("anthropic-foundry", "claude-opus-5"),
])
def test_tool_loop_replays_every_thinking_block_byte_exact(emulator: Emulator, route: str, model: str,
                                                           stream: bool) -> None:
    seen = len(emulator.requests(route))
    history = [Message.system("You are terse."), Message.user("Tidy the workspace #steps=2")]
    first = _run_turn(emulator, route, model, history, stream=stream)
    assert [len(ex.response.message.tool_calls) for ex in first] == [1, 1, 0]
    assert [c.name for ex in first for c in ex.response.message.tool_calls] == ["list_files", "read_file"]
    history.append(Message.user("Now summarise what you found."))
    second = _run_turn(emulator, route, model, history, stream=stream)
    assert len(second) == 2

    logged = [r for r in emulator.requests(route)[seen:]]
    assert len(logged) == 5
    # the stored history at the time of each request: everything before that request's answer
    assistant_positions = [i for i, m in enumerate(history) if m.role == "assistant"]
    per_block = 2 if "redact" in model else 1
    for n, req in enumerate(logged):
        upto = assistant_positions[n]
        sent = _thinking_blocks(req["body"])
        assert sent == _stored_blocks(history, upto), f"request {n} did not carry the stored blocks in order"
        assert len(sent) == n * per_block  # keep-all model: every earlier turn's thinking goes back
        head = ["thinking", *(["redacted_thinking"] * (per_block - 1)), "text"]
        for m in req["body"]["messages"]:
            if m["role"] == "assistant":  # blocks in the order the model produced them
                assert [b["type"] for b in m["content"]] in (head, [*head, "tool_use"])
    if "opus-5" in model:  # its display defaults to omitted: Hermes asks for the summary, so text is stored
        assert all(r["body"]["thinking"]["display"] == "summarized" for r in logged)
        assert all(b["thinking"] and b["signature"] for b in _thinking_blocks(logged[-1]["body"]))
    last = logged[-1]
    if route == "anthropic-vertex":
        verb = "streamRawPredict" if stream else "rawPredict"
        assert last["path"].endswith(f"/publishers/anthropic/models/{model}:{verb}")
        assert "model" not in last["body"] and last["body"]["anthropic_version"] == "vertex-2023-10-16"
    else:
        assert last["path"].endswith("/v1/messages") and last["body"]["model"] == model
        assert last["headers"]["anthropic-version"] == wire.API_VERSION
    assert last["body"]["thinking"]["type"] == "adaptive"
    assert last["body"]["system"] == "You are terse."


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_loop_only_model_drops_prior_turn_thinking(emulator: Emulator, stream: bool) -> None:
    model = "claude-sonnet-4-5"
    seen = len(emulator.requests("anthropic"))
    history = [Message.user("Look around #steps=2")]
    _run_turn(emulator, "anthropic", model, history, stream=stream)
    history.append(Message.user("And again"))
    _run_turn(emulator, "anthropic", model, history, stream=stream)
    logged = emulator.requests("anthropic")[seen:]
    assert len(logged) == 5
    def thinking_per_turn(n: int) -> list[int]:
        turns = [m for m in logged[n]["body"]["messages"] if m["role"] == "assistant"]
        return [sum(b["type"] == "thinking" for b in m["content"]) for m in turns]

    assert thinking_per_turn(3) == [0, 0, 0]  # turn 2 opens: earlier turns lose their thinking
    assert thinking_per_turn(4) == [0, 0, 0, 1]  # but its own tool loop keeps it
    body = logged[4]["body"]
    assert body["thinking"]["type"] == "enabled"
    assert body["max_tokens"] > body["thinking"]["budget_tokens"] >= 1024
    # the second request of turn 1 still carried its loop thinking
    assert logged[1]["body"]["messages"][1]["content"][0]["type"] == "thinking"


def _foreign(provider_: str, host: str, model: str, wire_: str) -> RouteKey:
    return RouteKey(provider_, host, model, wire_)


def test_switched_session_never_sends_foreign_signatures(emulator: Emulator) -> None:
    ds = _foreign("deepseek", "api.deepseek.com", "deepseek-reasoner", "openai_chat")
    orr = _foreign("openrouter", "openrouter.ai", "anthropic/claude-sonnet-4.6", "openai_chat")
    other = _foreign("anthropic", "api.anthropic.com", "claude-sonnet-4-6", "anthropic")
    details = orjson.dumps([{"type": "reasoning.text", "text": "hm", "signature": "EsFOREIGN1", "index": 0}]).decode()
    history = [
        Message.user("First question"),
        Message("assistant", (Reasoning("deepseek thought", ds), ToolCall("call_1", "list_files", '{"path": "."}'))),
        Message("tool", (ToolResult("call_1", "a.txt", "list_files"),)),
        Message("assistant", (Reasoning("hm", orr, details, "openrouter.details"),
                              Reasoning("claude elsewhere", other, "EsFOREIGN2", wire.SIGNATURE),
                              Text("It holds a.txt."))),
        Message.user("Second question"),
    ]
    seen = len(emulator.requests("anthropic"))
    exchanges = _run_turn(emulator, "anthropic", "claude-sonnet-4-6", history, stream=True)
    assert len(exchanges) == 2
    minted = {p.blob for ex in exchanges for p in ex.response.message.reasoning}
    for req in emulator.requests("anthropic")[seen:]:
        raw = orjson.dumps(req["body"]).decode()
        assert "FOREIGN" not in raw and "deepseek thought" not in raw
        assert {b.get("signature") or b.get("data") for b in _thinking_blocks(req["body"])} <= minted


def test_open_loop_from_another_route_turns_thinking_off(emulator: Emulator) -> None:
    ds = _foreign("deepseek", "api.deepseek.com", "deepseek-reasoner", "openai_chat")
    history = [
        Message.user("Check it"),
        Message("assistant", (Reasoning("deepseek thought", ds), ToolCall("call_9", "list_files", '{"path": "."}'))),
        Message("tool", (ToolResult("call_9", "a.txt", "list_files"),)),
    ]
    ex = provider.complete(_resolved(emulator, "anthropic", "claude-opus-4-6"), history, tools=TOOLS,
                           stream=False, api_key="test")
    assert "thinking" not in ex.body and not ex.plan.thinking
    assert ex.response.finish_reason == "end_turn" and not ex.response.message.reasoning


# ----------------------------------------------------------------------------- the emulator refuses what the API refuses


def _error(exc: pytest.ExceptionInfo[ProviderHTTPError]) -> str:
    body = exc.value.json()
    assert body["type"] == "error" and body["request_id"].startswith("req_")
    return str(body["error"]["message"])


def _loop_history(emu: Emulator, model: str) -> list[Message]:
    history = [Message.user("Look #steps=1")]
    ex = provider.complete(_resolved(emu, "anthropic", model), history, tools=TOOLS, api_key="test")
    call = ex.response.message.tool_calls[0]
    return [*history, ex.response.message, Message("tool", (ToolResult(call.id, "ok", call.name),))]


def _send(emu: Emulator, model: str, history: list[Message], hook: Callable[[dict[str, Any]], dict[str, Any]],
          route: str = "anthropic") -> provider.Exchange:
    return provider.complete(_resolved(emu, route, model), history, tools=TOOLS, api_key="test", body_hook=hook)


def _first_assistant(body: dict[str, Any]) -> list[dict[str, Any]]:
    return next(m for m in body["messages"] if m["role"] == "assistant")["content"]


def test_tampered_thinking_and_wrong_model_are_rejected(emulator: Emulator) -> None:
    history = _loop_history(emulator, "claude-opus-4-6")

    def tamper(body: dict[str, Any]) -> dict[str, Any]:
        _first_assistant(body)[0]["thinking"] += " "
        return body

    with pytest.raises(ProviderHTTPError) as exc:
        _send(emulator, "claude-opus-4-6", history, tamper)
    assert exc.value.status == 400
    assert _error(exc) == "messages.1.content.0: Invalid `signature` in `thinking` block"

    body = _send(emulator, "claude-opus-4-6", history, lambda b: b).body  # untouched: accepted
    body["model"] = "claude-sonnet-4-6"  # a block minted by another model
    r = httpx.post(emulator.url("anthropic") + "/v1/messages", content=orjson.dumps(body),
                   headers={"x-api-key": "test", "anthropic-version": wire.API_VERSION})
    assert r.status_code == 400
    assert r.json()["error"]["message"] == "messages.1.content.0: Invalid `signature` in `thinking` block"


def test_missing_thinking_on_the_tool_turn_is_the_real_error(emulator: Emulator) -> None:
    history = _loop_history(emulator, "claude-opus-4-6")

    def strip(body: dict[str, Any]) -> dict[str, Any]:
        content = _first_assistant(body)
        content[:] = [b for b in content if b["type"] not in THINKING]
        return body

    with pytest.raises(ProviderHTTPError) as exc:
        _send(emulator, "claude-opus-4-6", history, strip)
    msg = _error(exc)
    assert msg.startswith("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`.")
    assert "To avoid this requirement, disable `thinking`." in msg


def test_redacted_data_is_verified(emulator: Emulator) -> None:
    history = _loop_history(emulator, "claude-opus-4-6-redact")

    def tamper(body: dict[str, Any]) -> dict[str, Any]:
        block = _first_assistant(body)[1]
        assert block["type"] == "redacted_thinking"
        block["data"] = block["data"][:-4] + "AAAA"
        return body

    with pytest.raises(ProviderHTTPError) as exc:
        _send(emulator, "claude-opus-4-6-redact", history, tamper)
    assert "blocks in the latest assistant message cannot be modified" in _error(exc)


def test_unknown_fields_and_drift_are_refused_with_the_json_path(emulator: Emulator) -> None:
    history = [Message.user("hi")]
    with pytest.raises(ProviderHTTPError) as exc:
        _send(emulator, "claude-opus-4-6", history, lambda b: {**b, "extra_body": {}})
    assert _error(exc) == "extra_body: Extra inputs are not permitted"

    loop = _loop_history(emulator, "claude-opus-4-6")
    emulator.state.set_control("anthropic", reject_fields=["signature"])
    try:
        with pytest.raises(ProviderHTTPError) as exc:
            provider.complete(_resolved(emulator, "anthropic", "claude-opus-4-6"), loop, tools=TOOLS, api_key="test")
        assert _error(exc) == "messages.1.content.0.signature: Extra inputs are not permitted"
    finally:
        emulator.state.set_control("anthropic", reject_fields=[])

    with pytest.raises(ProviderHTTPError) as exc:
        _send(emulator, "x", history, lambda b: {**b, "model": "claude-opus-4-6"}, route="anthropic-vertex")
    assert _error(exc) == "model: Extra inputs are not permitted"
    assert exc.value.json()["request_id"].startswith("req_vrtx_")


def test_thinking_in_final_position_while_disabled(emulator: Emulator) -> None:
    history = _loop_history(emulator, "claude-opus-4-6")[:2]  # ends with the assistant turn (prefill)

    def off(body: dict[str, Any]) -> dict[str, Any]:
        body.pop("thinking")
        body["messages"][-1]["content"] = [b for b in body["messages"][-1]["content"] if b["type"] != "tool_use"]
        return body

    with pytest.raises(ProviderHTTPError) as exc:
        _send(emulator, "claude-opus-4-6", history, off)
    assert _error(exc).startswith("messages.1.content.0: When thinking is disabled, an `assistant` message in the "
                                  "final position cannot contain `thinking`.")


# ----------------------------------------------------------------------------- faults and bad streams


@pytest.mark.parametrize("fault", ["529", "429", "500"])
def test_retryable_faults_are_retried(emulator: Emulator, fault: str) -> None:
    emulator.state.set_control("anthropic-foundry", fault=fault, times=1)
    ex = provider.complete(_resolved(emulator, "anthropic-foundry", "claude-opus-4-6"), [Message.user("hi")],
                           api_key="test", stream=True)
    assert ex.response.finish_reason == "end_turn"


@pytest.mark.parametrize(("fault", "stream", "needle"), [
    ("orphan_signature", True, "signature delta with no thinking block"),
    ("truncate", True, "truncated"),
    ("truncate", False, "not JSON"),
    ("malformed", True, "not JSON"),
    ("error_event", True, "overloaded_error"),
    ("empty200", False, "empty response body"),
])
def test_bad_responses_raise_and_return_nothing(emulator: Emulator, fault: str, stream: bool, needle: str) -> None:
    emulator.state.set_control("anthropic", fault=fault, times=1)
    got: list[Delta] = []
    with pytest.raises(StreamError, match=needle):
        provider.complete(_resolved(emulator, "anthropic", "claude-opus-4-6"), [Message.user("hi")], tools=TOOLS,
                          api_key="test", stream=stream, on_delta=got.append)
    assert emulator.state.take_fault("anthropic") is None


def test_decoder_refuses_inconsistent_streams() -> None:
    d = wire.new_decoder()
    with pytest.raises(StreamError, match="signature delta with no thinking block"):
        d("content_block_delta", '{"type":"content_block_delta","index":0,'
                                 '"delta":{"type":"signature_delta","signature":"EsX"}}')
    d = wire.new_decoder()
    d("content_block_start", '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}')
    with pytest.raises(StreamError, match="signature delta with no thinking block"):
        d("content_block_delta", '{"type":"content_block_delta","index":0,'
                                 '"delta":{"type":"signature_delta","signature":"EsX"}}')
    with pytest.raises(StreamError, match="not JSON"):
        d("content_block_delta", "{nope")
    with pytest.raises(StreamError, match="overloaded_error"):
        d("error", '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}')


# ----------------------------------------------------------------------------- the official SDK as client


@pytest.mark.parametrize("route", ROUTES)
def test_official_sdk_parses_every_response(emulator: Emulator, route: str) -> None:
    model = "claude-opus-4-6-redact"
    client: anthropic.Anthropic | anthropic.AnthropicVertex | anthropic.AnthropicFoundry
    if route == "anthropic":
        client = anthropic.Anthropic(base_url=emulator.url(route), api_key="test", max_retries=0, timeout=30)
    elif route == "anthropic-vertex":
        client = anthropic.AnthropicVertex(base_url=f"{emulator.root}/{route}/v1", region="global",
                                           project_id="test", access_token="tok", max_retries=0, timeout=30)
    else:
        client = anthropic.AnthropicFoundry(base_url=emulator.url(route), api_key="test", max_retries=0, timeout=30)
    tools: Any = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in TOOLS]
    messages: list[Any] = [{"role": "user", "content": "Go #steps=1"}]
    first = client.messages.create(model=model, max_tokens=32000, thinking={"type": "adaptive"}, tools=tools,
                                   messages=messages)
    assert [b.type for b in first.content] == ["thinking", "redacted_thinking", "text", "tool_use"]
    assert first.stop_reason == "tool_use" and first.usage.output_tokens > 0
    call = first.content[-1]
    assert call.type == "tool_use" and call.input == {"path": "."}
    messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "ok"}]}]
    with client.messages.stream(model=model, max_tokens=32000, thinking={"type": "adaptive"}, tools=tools,
                                messages=messages) as s:
        final = s.get_final_message()
    assert final.stop_reason == "end_turn"
    assert [b.type for b in final.content] == ["thinking", "redacted_thinking", "text"]
    thinking = final.content[0]
    assert thinking.type == "thinking" and thinking.signature.startswith("Es") and thinking.thinking

    # our parser reads the very bytes the SDK read
    sdk_payload = first.model_dump(mode="json")
    ours = fold(RouteKey(route, "h", model, "anthropic"), wire.from_wire(sdk_payload))
    assert [type(p).__name__ for p in ours.message.parts] == ["Reasoning", "Reasoning", "Text", "ToolCall"]
    assert ours.message.reasoning[0].blob == first.content[0].signature  # type: ignore[union-attr]


# ----------------------------------------------------------------------------- pure wire


def _plan(model: str, parts: tuple[Any, ...], *, thinking: bool = True, route: str = "anthropic") -> ReplayPlan:
    target = resolve(route, "https://example.services.ai.azure.com/anthropic" if route == "anthropic-foundry"
                     else None, model)
    msgs = (PlannedMessage(0, "user", (Text("hi"),)), PlannedMessage(1, "assistant", parts))
    return ReplayPlan(target, msgs, {}, thinking)


def test_reasoning_without_blob_is_never_rendered() -> None:
    origin = RouteKey("anthropic", "api.anthropic.com", "claude-opus-4-6", "anthropic")
    with pytest.raises(UnsupportedPart):
        wire.to_wire(_plan("claude-opus-4-6", (Reasoning("bare", origin), Text("x"))))
    with pytest.raises(UnsupportedPart):
        wire.to_wire(_plan("claude-opus-4-6", (Reasoning("enc", origin, "b", "openai.encrypted"), Text("x"))))


@pytest.mark.parametrize(("model", "adaptive"), [
    ("claude-opus-4-6", True), ("claude-sonnet-4-6-20260101", True), ("claude-haiku-5-5", True),
    ("claude-fable-5-1", True), ("claude-sonnet-4-5-20250929", False), ("claude-opus-4-20250514", False),
    ("claude-3-7-sonnet-20250219", False), ("claude-opus-4-1", False),
])
def test_thinking_request_shape(model: str, adaptive: bool) -> None:
    body = wire.to_wire(_plan(model, (Text("x"),)), settings=Settings(effort="high"))
    if adaptive:
        assert body["thinking"]["type"] == "adaptive" and body["output_config"] == {"effort": "high"}
    else:
        assert body["thinking"]["type"] == "enabled"
        assert body["max_tokens"] > body["thinking"]["budget_tokens"] >= 1024
    off = wire.to_wire(_plan(model, (Text("x"),), thinking=False))
    if model == "claude-fable-5-1":  # cannot stop thinking: asks for the least (tests/test_model_facts.py)
        assert off["thinking"] == {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
        assert off["output_config"] == {"effort": "low"}
    else:
        assert "thinking" not in off and off["max_tokens"] > 0


def test_endpoints_per_variant() -> None:
    direct = resolve("anthropic", None, "claude-opus-4-6")
    assert wire.endpoint(direct, stream=True) == ("https://api.anthropic.com/v1/messages",
                                                  {"anthropic-version": "2023-06-01"})
    vertex = resolve("anthropic-vertex", "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5",
                     "claude-sonnet-4-5@20250929")
    url, headers = wire.endpoint(vertex, stream=True)
    assert url.endswith("/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict")
    assert wire.endpoint(vertex, stream=False)[0].endswith(":rawPredict")
    assert headers == {"anthropic-beta": "interleaved-thinking-2025-05-14"}  # a 4.5 budget model
    foundry = resolve("anthropic-foundry", "https://res.services.ai.azure.com/anthropic/", "claude-opus-4-6")
    assert wire.endpoint(foundry, stream=False)[0] == "https://res.services.ai.azure.com/anthropic/v1/messages"


def test_tool_results_merge_into_alternating_user_turns() -> None:
    origin = RouteKey("anthropic", "api.anthropic.com", "claude-opus-4-6", "anthropic")
    history = [
        Message.user("q"),
        Message("assistant", (Reasoning("t", origin, "EsSIG", wire.SIGNATURE), Text(""),
                              ToolCall("toolu_1", "list_files", '{"path": "."}'),
                              ToolCall("toolu_2", "read_file", '{"name": "a", "lines": 2}'))),
        Message("tool", (ToolResult("toolu_1", "a"),)),
        Message("tool", (ToolResult("toolu_2", "boom", is_error=True),)),
        Message.user("and?"),
    ]
    body = wire.to_wire(plan_replay(history, resolve("anthropic", None, "claude-opus-4-6")))
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "t", "signature": "EsSIG"},
        {"type": "tool_use", "id": "toolu_1", "name": "list_files", "input": {"path": "."}},
        {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"name": "a", "lines": 2}},
    ]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "boom", "is_error": True},
        {"type": "text", "text": "and?"},
    ]


# ----------------------------------------------------------------------------- parse == fold(stream)

_text = st.text(st.characters(codec="utf-8"), max_size=40)
_json_value = st.recursive(st.none() | st.booleans() | st.integers(-1000, 1000) | _text,
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
                           max_leaves=6)
_blocks = st.lists(st.one_of(
    st.builds(lambda t, s: {"type": "thinking", "thinking": t, "signature": "Es" + s}, _text,
              st.text("ABCDEFabcdef0123456789+/", min_size=4, max_size=60)),
    st.builds(lambda d: {"type": "redacted_thinking", "data": "Eq" + d}, st.text("abcXYZ019+/=", min_size=1, max_size=40)),
    st.builds(lambda t: {"type": "text", "text": t}, _text),
    st.builds(lambda n, i, a: {"type": "tool_use", "id": f"toolu_{i}", "name": n, "input": a},
              st.sampled_from(["list_files", "read_file"]), st.integers(0, 10**6),
              st.dictionaries(_text, _json_value, max_size=3)),
), min_size=1, max_size=6)


def _events(msg: dict[str, Any], cuts: st.DataObject) -> list[tuple[str, str]]:
    def ev(kind: str, **data: Any) -> tuple[str, str]:
        return kind, orjson.dumps({"type": kind, **data}).decode()

    def split(s: str) -> list[str]:
        n = cuts.draw(st.integers(1, 8))
        return [s[i:i + n] for i in range(0, len(s), n)]

    out = [ev("message_start", message={**msg, "content": [], "stop_reason": None,
                                        "usage": {"input_tokens": msg["usage"]["input_tokens"], "output_tokens": 1}}),
           ev("ping")]
    for i, b in enumerate(msg["content"]):
        kind = b["type"]
        start = {"thinking": {"type": "thinking", "thinking": "", "signature": ""}, "text": {"type": "text", "text": ""},
                 "tool_use": {**b, "input": {}}}.get(kind, b)
        out.append(ev("content_block_start", index=i, content_block=start))
        if kind == "thinking":
            out += [ev("content_block_delta", index=i, delta={"type": "thinking_delta", "thinking": c})
                    for c in split(b["thinking"])]
            out.append(ev("content_block_delta", index=i, delta={"type": "signature_delta", "signature": b["signature"]}))
        elif kind == "text":
            out += [ev("content_block_delta", index=i, delta={"type": "text_delta", "text": c}) for c in split(b["text"])]
        elif kind == "tool_use" and b["input"]:
            out += [ev("content_block_delta", index=i, delta={"type": "input_json_delta", "partial_json": c})
                    for c in split(orjson.dumps(b["input"]).decode())]
        out.append(ev("content_block_stop", index=i))
    out.append(ev("message_delta", delta={"stop_reason": msg["stop_reason"], "stop_sequence": None},
                  usage={"output_tokens": msg["usage"]["output_tokens"]}))
    out.append(ev("message_stop"))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks=_blocks, stop=st.sampled_from(["end_turn", "tool_use", "max_tokens"]),
       usage=st.tuples(st.integers(0, 10**5), st.integers(1, 10**5)), cuts=st.data())
def test_parse_equals_fold_of_stream_and_renders_back(blocks: list[dict[str, Any]], stop: str,
                                                      usage: tuple[int, int], cuts: st.DataObject) -> None:
    model = "claude-opus-4-6"
    target = resolve("anthropic", None, model)
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": blocks,
           "stop_reason": stop, "stop_sequence": None,
           "usage": {"input_tokens": usage[0], "output_tokens": usage[1]}}
    parsed = fold(target.key, wire.from_wire(orjson.loads(orjson.dumps(msg))))
    decode = wire.new_decoder()
    streamed = fold(target.key, [d for e, data in _events(msg, cuts) for d in decode(e, data)])
    assert parsed == streamed
    assert parsed.usage == {"input_tokens": usage[0], "output_tokens": usage[1]} and parsed.finish_reason == stop

    # and the stored turn renders back to exactly the blocks it came from (empty text aside)
    kept = [b for b in blocks if not (b["type"] == "text" and not b["text"])]
    if not any(b["type"] in ("text", "tool_use") for b in kept):
        return  # a reasoning-only turn is never replayed (it would read as prefill)
    history = [Message.user("q"), parsed.message]
    calls = parsed.message.tool_calls
    if calls:
        history.append(Message("tool", tuple(ToolResult(c.id, "ok") for c in calls)))
    body = wire.to_wire(plan_replay(history, target))
    assert body["messages"][1]["content"] == kept
