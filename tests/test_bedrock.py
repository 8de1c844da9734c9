"""Bedrock Converse: botocore as the real client against the loopback emulator.

Every request here is SigV4-signed by botocore and decoded by botocore's event-stream
parser; the emulator checks signatures it minted byte-exact, so a replayed reasoning block
that changed by one byte fails the run.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.session
import httpx
import orjson
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.eventstream import EventStream
from botocore.exceptions import ClientError
from botocore.parsers import EventStreamJSONParser, create_parser
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.agent.provider import Exchange, complete
from hermes.core import messages as hm
from hermes.core.errors import HermesError, ProviderHTTPError, RateLimited, StreamError
from hermes.core.messages import Message, Reasoning, Text, ToolCall, ToolResult
from hermes.core.stream import fold
from hermes.emulate.bedrock import encode_frame, event_frames
from hermes.replay import Settings, plan_replay
from hermes.routing.resolve import resolve
from hermes.wire import ToolSpec
from hermes.wire import bedrock as wire

CLAUDE = "us.anthropic.claude-opus-4-5-20251101-v1:0"
CLAUDE_REDACT = "anthropic.claude-redact-sonnet-4-5-v1:0"
DEEPSEEK = "us.deepseek.r1-v1:0"
GPT_OSS = "openai.gpt-oss-120b-1:0"
TOOL = ToolSpec("list_files", "List files in a directory",
                {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})


@pytest.fixture(autouse=True)
def _aws(aws_env: None) -> None:
    """Fake AWS credentials for the Bedrock emulator (see conftest.aws_env)."""


@pytest.fixture
def emu(emulator: Any) -> Iterator[Any]:
    yield emulator
    emulator.state.set_control("bedrock", fault=None, reject_fields=[], delay=0.0)


def _since(emu: Any, n: int) -> list[dict[str, Any]]:
    return [r["body"] for r in emu.requests("bedrock")[n:]]


def _turn(emu: Any, model: str, history: list[Message], *, stream: bool,
          tools: tuple[ToolSpec, ...] = (TOOL,)) -> list[Exchange]:
    """Run one user turn to completion (tool loop included), appending to ``history``."""
    resolved = resolve("bedrock", emu.url("bedrock"), model)
    out = []
    for _ in range(4):
        ex = complete(resolved, history, tools=tools, stream=stream)
        out.append(ex)
        history.append(ex.response.message)
        calls = ex.response.message.tool_calls
        if not calls:
            return out
        history.append(Message("tool", tuple(ToolResult(c.id, "a.txt b.txt", c.name) for c in calls)))
    raise AssertionError("tool loop did not end")


def _assistants(body: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [m["content"] for m in body["messages"] if m["role"] == "assistant"]


def _rc(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b["reasoningContent"] for b in content if "reasoningContent" in b]


# ----------------------------------------------------------------------------- boto3 fidelity


def test_boto3_client_talks_to_the_emulator(emu: Any) -> None:
    client = boto3.client("bedrock-runtime", endpoint_url=emu.url("bedrock"))
    tool_cfg = {"tools": [{"toolSpec": {"name": "ls", "inputSchema": {"json": {"type": "object"}}}}]}
    thinking = {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    msgs = [{"role": "user", "content": [{"text": "look around"}]}]
    r = client.converse(modelId=CLAUDE_REDACT, messages=msgs, toolConfig=tool_cfg,
                        additionalModelRequestFields=thinking)
    content = r["output"]["message"]["content"]
    assert r["stopReason"] == "tool_use"
    rt = content[0]["reasoningContent"]["reasoningText"]
    assert rt["signature"].startswith("Es") and "look around" in rt["text"]
    assert isinstance(content[1]["reasoningContent"]["redactedContent"], bytes)
    assert content[2]["toolUse"]["name"] == "ls"
    assert emu.requests("bedrock")[-1]["path"].endswith(f"/model/{CLAUDE_REDACT}/converse")

    events = list(client.converse_stream(modelId=CLAUDE_REDACT, messages=msgs, toolConfig=tool_cfg,
                                         additionalModelRequestFields=thinking)["stream"])
    kinds = [next(iter(e)) for e in events]
    assert kinds[0] == "messageStart" and kinds[-2:] == ["messageStop", "metadata"]
    sig = "".join(e["contentBlockDelta"]["delta"]["reasoningContent"].get("signature", "")
                  for e in events if "reasoningContent" in e.get("contentBlockDelta", {}).get("delta", {}))
    assert sig == rt["signature"]

    # the full replay is accepted; a tampered signature gets the service's error
    replay = [*msgs, {"role": "assistant", "content": content},
              {"role": "user", "content": [{"toolResult": {"toolUseId": content[2]["toolUse"]["toolUseId"],
                                                           "content": [{"text": "a b"}]}}]}]
    ok = client.converse(modelId=CLAUDE_REDACT, messages=replay, toolConfig=tool_cfg,
                         additionalModelRequestFields=thinking)
    assert ok["stopReason"] == "end_turn"
    rt["signature"] = rt["signature"][:-2] + ("AA" if not rt["signature"].endswith("AA") else "BB")
    with pytest.raises(ClientError) as err:
        client.converse(modelId=CLAUDE_REDACT, messages=replay, toolConfig=tool_cfg,
                        additionalModelRequestFields=thinking)
    assert err.value.response["Error"]["Code"] == "ValidationException"
    assert err.value.response["Error"]["Message"] == (
        "The model returned the following errors: messages.1.content.0: Invalid `signature` in `thinking` block")


def _signed_post(url: str, body: dict[str, Any], *, service: str = "bedrock") -> httpx.Response:
    """A raw request signed by botocore's SigV4 signer (for payloads botocore would refuse)."""
    req = AWSRequest("POST", url, data=orjson.dumps(body), headers={"content-type": "application/json"})
    SigV4Auth(Credentials("AKIDEXAMPLETEST01", "not-a-real-secret"), service, "us-west-2").add_auth(req)
    return httpx.post(url, content=req.body, headers=dict(req.headers.items()))


def test_emulator_validates_like_the_service(emu: Any) -> None:
    base = f"{emu.url('bedrock')}/model/{CLAUDE}/converse"
    user = [{"role": "user", "content": [{"text": "hi"}]}]
    r = httpx.post(base, json={"messages": user})
    assert r.status_code == 403 and r.headers["x-amzn-errortype"].startswith("MissingAuthenticationToken")
    r = _signed_post(base, {"messages": user}, service="s3")
    assert r.status_code == 403 and r.headers["x-amzn-errortype"].startswith("InvalidSignatureException")
    r = _signed_post(base, {"messages": user, "reasoning_effort": "high"})
    assert r.status_code == 400 and r.headers["x-amzn-errortype"].startswith("ValidationException")
    assert "extraneous key [reasoning_effort]" in r.json()["message"]

    # thinking on, final assistant tool turn without reasoning: Claude's error, wrapped
    bare = [*user, {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "ls", "input": {}}}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "x"}]}}]}]
    tools = {"tools": [{"toolSpec": {"name": "ls", "inputSchema": {"json": {"type": "object"}}}}]}
    r = _signed_post(base, {"messages": bare, "toolConfig": tools,
                            "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}}})
    assert r.status_code == 400
    assert r.json()["message"].startswith(
        "The model returned the following errors: messages.1.content.0.type: Expected `thinking` or "
        "`redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message")

    # another model's signature is refused by Claude; any signature is refused by gpt-oss
    text = "some thought"
    foreign = emu.state.mint("bedrock", "anthropic.claude-opus-4-1-v1:0", text)
    signed = [*user, {"role": "assistant", "content": [
        {"reasoningContent": {"reasoningText": {"text": text, "signature": foreign}}}, {"text": "ok"}]},
        {"role": "user", "content": [{"text": "more"}]}]
    r = _signed_post(base, {"messages": signed})
    assert "Invalid `signature` in `thinking` block" in r.json()["message"]
    r = _signed_post(f"{emu.url('bedrock')}/model/{GPT_OSS}/converse", {"messages": signed})
    assert r.status_code == 400 and "signature" in r.json()["message"]

    # a 5-generation model reads a reasoning-only assistant turn as prefill
    sonnet5 = "anthropic.claude-sonnet-5-v1:0"
    own = emu.state.mint("bedrock", sonnet5, text)
    prefill = [*user, {"role": "assistant", "content": [
        {"reasoningContent": {"reasoningText": {"text": text, "signature": own}}}]},
        {"role": "user", "content": [{"text": "more"}]}]
    r = _signed_post(f"{emu.url('bedrock')}/model/{sonnet5}/converse", {"messages": prefill})
    assert r.json()["message"] == ("This model does not support assistant message prefill. "
                                   "The conversation must end with a user message.")


# ----------------------------------------------------------------------------- through hermes


@pytest.mark.parametrize("stream", [False, True], ids=["converse", "stream"])
def test_tool_loop_replays_signed_reasoning_byte_exact(emu: Any, stream: bool) -> None:
    n = len(emu.requests("bedrock"))
    history = [Message.system("You are terse."), Message.user(f"what is here? stream={stream}")]
    exchanges = _turn(emu, CLAUDE_REDACT, history, stream=stream)
    assert len(exchanges) == 2 and exchanges[-1].response.finish_reason == "end_turn"
    first = exchanges[0].response.message
    sig, red = first.reasoning
    assert sig.blob_kind == "anthropic.signature" and sig.blob and sig.text.startswith("The user asked")
    assert red.blob_kind == "anthropic.redacted" and red.text == ""
    assert sig.origin.provider == "bedrock" and sig.origin.model == CLAUDE_REDACT
    assert isinstance(first.tool_calls[0], ToolCall) and orjson.loads(first.tool_calls[0].arguments) == {"path": "."}

    sent = _since(emu, n)
    assert len(sent) == 2
    assert sent[0]["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 8000}, "anthropic_beta": ["interleaved-thinking-2025-05-14"]}
    assert sent[0]["inferenceConfig"]["maxTokens"] > 8000
    assert sent[0]["system"] == [{"text": "You are terse."}]
    replayed = sent[1]["messages"][1]["content"]
    assert replayed[0] == {"reasoningContent": {"reasoningText": {"text": sig.text, "signature": sig.blob}}}
    assert replayed[1] == {"reasoningContent": {"redactedContent": red.blob}}
    assert replayed[2]["toolUse"]["toolUseId"] == first.tool_calls[0].id
    assert sent[1]["messages"][2]["content"][0]["toolResult"]["content"] == [{"text": "a.txt b.txt"}]
    assert "Done" in exchanges[-1].response.message.text


@pytest.mark.parametrize(("model", "policy"), [(CLAUDE, "signed"), (DEEPSEEK, "strip"), (GPT_OSS, "unsigned")])
def test_per_model_policy_on_sent_bodies(emu: Any, model: str, policy: str) -> None:
    history = [Message.user("first task")]
    _turn(emu, model, history, stream=False)
    history.append(Message.user("second task"))
    n = len(emu.requests("bedrock"))
    ex = _turn(emu, model, history, stream=True)
    assert ex[-1].response.finish_reason == "end_turn"
    last = _since(emu, n)[-1]
    turns = _assistants(last)
    assert len(turns) == 3  # turn 1: tool + answer; turn 2: the open loop's tool call
    earlier, loop = turns[:2], turns[2]
    if policy == "signed":
        assert all(_rc(t) and "signature" in _rc(t)[0]["reasoningText"] for t in turns)
        assert "additionalModelRequestFields" in last
    elif policy == "strip":
        assert all(not _rc(t) for t in earlier)
        assert _rc(loop) and set(_rc(loop)[0]["reasoningText"]) == {"text"}
    else:
        assert all(_rc(t) and set(_rc(t)[0]["reasoningText"]) == {"text"} for t in turns)
        assert "additionalModelRequestFields" not in last
    assert b"redactedContent" not in orjson.dumps(last) or policy == "signed"


def test_reloaded_turn_replays_identically(emu: Any) -> None:
    history = [Message.user("reload me")]
    resolved = resolve("bedrock", emu.url("bedrock"), CLAUDE_REDACT)
    ex = complete(resolved, history, tools=(TOOL,))
    history.append(ex.response.message)
    history.append(Message("tool", (ToolResult(ex.response.message.tool_calls[0].id, "x", "list_files"),)))
    reloaded = [hm.loads(hm.dumps(m)) for m in history]
    assert reloaded == history
    live = wire.to_wire(plan_replay(history, resolved), tools=(TOOL,))
    again = wire.to_wire(plan_replay(reloaded, resolved), tools=(TOOL,))
    assert live == again
    n = len(emu.requests("bedrock"))
    done = complete(resolved, reloaded, tools=(TOOL,), stream=True)
    assert done.response.finish_reason == "end_turn"
    assert _since(emu, n)[0]["messages"][1]["content"][:2] == [
        {"reasoningContent": {"reasoningText": {"text": history[1].parts[0].text,  # type: ignore[union-attr]
                                                "signature": history[1].parts[0].blob}}},  # type: ignore[union-attr]
        {"reasoningContent": {"redactedContent": history[1].parts[1].blob}}]  # type: ignore[union-attr]


def test_model_switch_claude_to_gpt_oss_sends_no_claude_blob(emu: Any) -> None:
    history = [Message.user("start on claude")]
    _turn(emu, CLAUDE_REDACT, history, stream=True)
    claude_thoughts = [p.text for m in history for p in m.parts if isinstance(p, Reasoning) and p.text]
    history.append(Message.user("continue on gpt-oss"))
    n = len(emu.requests("bedrock"))
    ex = _turn(emu, GPT_OSS, history, stream=False)
    assert ex[-1].response.finish_reason == "end_turn"
    sent = _since(emu, n)
    for body in sent:
        raw = orjson.dumps(body)
        assert b"signature" not in raw and b"redactedContent" not in raw
        texts = [r["reasoningText"]["text"] for t in _assistants(body) for r in _rc(t)]
        assert all(t in texts for t in claude_thoughts)  # readable text still goes
    own = ex[0].response.message.reasoning[0]
    assert own.blob is None and own.origin.model == GPT_OSS
    # and back to Claude: its own signed blocks go back, gpt-oss's unsigned thoughts do not
    history.append(Message.user("back to claude"))
    n = len(emu.requests("bedrock"))
    _turn(emu, CLAUDE_REDACT, history, stream=False)
    body = _since(emu, n)[-1]
    assert all("signature" in r.get("reasoningText", {"signature": 1}) for t in _assistants(body) for r in _rc(t))


def test_reasoning_only_turn_is_not_sent_as_prefill(emu: Any) -> None:
    model = "anthropic.claude-sonnet-5-v1:0"
    resolved = resolve("bedrock", emu.url("bedrock"), model)
    thought = "only a thought"
    lone = Reasoning(thought, resolved.key, emu.state.mint("bedrock", model, thought), "anthropic.signature")
    history = [Message.user("hi"), Message("assistant", (lone,)), Message.user("again")]
    ex = complete(resolved, history, tools=(TOOL,))
    assert ex.body["messages"][1]["content"] == [{"text": wire.EMPTY}]
    assert ex.body["additionalModelRequestFields"]["thinking"] == {"type": "adaptive", "display": "summarized"}

    def restore(body: dict[str, Any]) -> dict[str, Any]:
        body["messages"][1]["content"] = [{"reasoningContent": {"reasoningText": {"text": thought,
                                                                                  "signature": lone.blob}}}]
        return body

    with pytest.raises(ProviderHTTPError, match="does not support assistant message prefill") as err:
        complete(resolved, history, tools=(TOOL,), body_hook=restore)
    assert err.value.status == 400 and orjson.loads(err.value.body)["__type"] == "ValidationException"


def test_loop_turn_from_another_route_turns_thinking_off(emu: Any) -> None:
    """An open-loop tool call with no thinking this route may receive: Claude would refuse
    thinking on, so the request goes without it and is accepted."""
    resolved = resolve("bedrock", emu.url("bedrock"), CLAUDE)
    elsewhere = resolve("anthropic", None, "claude-sonnet-4-5").key
    foreign = Reasoning("thought elsewhere", elsewhere, "EsForeign", "anthropic.signature")
    history = [Message.user("go"), Message("assistant", (foreign, ToolCall("toolu_1", "list_files", '{"path":"."}'))),
               Message("tool", (ToolResult("toolu_1", "a.txt", "list_files"),))]
    ex = complete(resolved, history, tools=(TOOL,), stream=True)
    assert "additionalModelRequestFields" not in ex.body
    assert ex.body["messages"][1]["content"] == [
        {"toolUse": {"toolUseId": "toolu_1", "name": "list_files", "input": {"path": "."}}}]
    assert ex.response.finish_reason == "end_turn" and not ex.response.message.reasoning


def test_slow_stream_arrives_in_pieces(emu: Any) -> None:
    resolved = resolve("bedrock", emu.url("bedrock"), GPT_OSS)
    emu.state.set_control("bedrock", fault="slow")
    seen: list[Any] = []
    ex = complete(resolved, [Message.user("slowly")], stream=True, on_delta=seen.append)
    assert len(seen) > 4 and ex.response.message.text.startswith("Done")


# ----------------------------------------------------------------------------- faults


@pytest.mark.parametrize("fault", ["badcrc", "truncate", "streamerror"])
def test_broken_stream_raises_and_returns_nothing(emu: Any, fault: str) -> None:
    resolved = resolve("bedrock", emu.url("bedrock"), CLAUDE)
    emu.state.set_control("bedrock", fault=fault)
    seen: list[Any] = []
    with pytest.raises(StreamError, match="nothing"):
        complete(resolved, [Message.user(f"break {fault}")], tools=(TOOL,), stream=True, on_delta=seen.append)
    assert seen  # something had arrived before the break, yet no turn came back


def test_truncated_converse_body_is_a_stream_error(emu: Any) -> None:
    resolved = resolve("bedrock", emu.url("bedrock"), CLAUDE)
    emu.state.set_control("bedrock", fault="truncate")
    with pytest.raises(StreamError):
        complete(resolved, [Message.user("cut")], stream=False)


def test_http_errors_map_to_provider_errors(emu: Any) -> None:
    resolved = resolve("bedrock", emu.url("bedrock"), CLAUDE)
    emu.state.set_control("bedrock", fault="500")
    with pytest.raises(ProviderHTTPError) as err:
        complete(resolved, [Message.user("x")], stream=True)
    assert err.value.status == 500 and err.value.json()["__type"] == "InternalServerException"
    emu.state.set_control("bedrock", fault="429")
    with pytest.raises(RateLimited) as rl:
        complete(resolved, [Message.user("x")])
    assert rl.value.status == 429 and "Too many requests" in str(rl.value)
    # a tampered blob: the service's 400, with the real text
    lone = Reasoning("t", resolved.key, "EsNOTMINTED", "anthropic.signature")
    hist = [Message.user("a"), Message("assistant", (lone, Text("b"))), Message.user("c")]
    with pytest.raises(ProviderHTTPError, match="Invalid `signature` in `thinking` block") as bad:
        complete(resolved, hist)
    assert bad.value.status == 400 and bad.value.route == "bedrock"


def test_botocore_client_side_validation_is_a_clear_error(emu: Any) -> None:
    resolved = resolve("bedrock", emu.url("bedrock"), CLAUDE)
    n = len(emu.requests("bedrock"))
    with pytest.raises(HermesError, match="Unknown parameter in input") as err:
        complete(resolved, [Message.user("x")], body_hook=lambda b: {**b, "reasoning_effort": "high"})
    assert not isinstance(err.value, ProviderHTTPError)
    assert len(emu.requests("bedrock")) == n  # refused before sending


def test_missing_credentials_is_a_config_error(emu: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(HermesError, match="no AWS credentials"):
        complete(resolve("bedrock", emu.url("bedrock"), CLAUDE), [Message.user("x")])


# ----------------------------------------------------------------------------- pure rendering


@pytest.mark.parametrize(("model", "effort", "extra", "max_tokens"), [
    ("anthropic.claude-3-7-sonnet-20250219-v1:0", "high",
     {"thinking": {"type": "enabled", "budget_tokens": 16000}}, 20096),
    ("us.anthropic.claude-opus-4-6-v1:0", "high",
     {"thinking": {"type": "adaptive", "display": "summarized"}, "output_config": {"effort": "high"}}, 32000),
    ("amazon.nova-2-lite-v1:0", "minimal", {"reasoningConfig": {"type": "enabled", "maxReasoningEffort": "low"}}, None),
    ("meta.llama3-3-70b-instruct-v1:0", "high", None, None),
])
def test_thinking_request_per_model(model: str, effort: str, extra: Any, max_tokens: int | None) -> None:
    resolved = resolve("bedrock", None, model)
    body = wire.to_wire(plan_replay([Message.user("q")], resolved, settings=Settings(effort=effort)),
                        settings=Settings(effort=effort))
    assert body.get("additionalModelRequestFields") == extra
    assert body.get("inferenceConfig", {}).get("maxTokens") == max_tokens


def test_alternation_and_empty_content() -> None:
    resolved = resolve("bedrock", None, GPT_OSS)
    history = [Message("assistant", (Text("hello first"),)), Message.user("u1"), Message.user("u2"),
               Message("assistant", (Text(""),)), Message("assistant", (Text("again"),))]
    body = wire.to_wire(plan_replay(history, resolved))
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
    assert body["messages"][0]["content"] == [{"text": wire.PLACEHOLDER_USER}]
    assert body["messages"][2]["content"] == [{"text": "u1"}, {"text": "u2"}]
    assert body["messages"][3]["content"] == [{"text": wire.EMPTY}]
    assert body["messages"][-1]["content"] == [{"text": wire.PLACEHOLDER_USER}]


# ----------------------------------------------------------------------------- parse == fold(stream)

_SHAPES = botocore.session.get_session().get_service_model("bedrock-runtime")
_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
_SIG = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", min_size=1, max_size=60)
_BLOCK = st.one_of(
    _TEXT.map(lambda t: {"text": t}),
    st.tuples(_TEXT, st.none() | _SIG).map(
        lambda ts: {"reasoningContent": {"reasoningText": {"text": ts[0], **({"signature": ts[1]} if ts[1] else {})}}}),
    st.binary(min_size=1, max_size=40).map(
        lambda b: {"reasoningContent": {"redactedContent": base64.b64encode(b).decode()}}),
    st.tuples(st.from_regex(r"tooluse_[a-z0-9]{4}", fullmatch=True), st.sampled_from(["ls", "read"]),
              st.dictionaries(st.sampled_from(["path", "n", "deep"]), st.integers(-5, 5) | _TEXT | st.booleans())).map(
        lambda t: {"toolUse": {"toolUseId": t[0], "name": t[1], "input": t[2]}}),
)


class _Raw:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self) -> Iterator[bytes]:
        for i in range(0, len(self.data), 7):  # odd chunking: frames split across reads
            yield self.data[i:i + 7]

    def close(self) -> None:
        pass


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_BLOCK, min_size=1, max_size=5), st.sampled_from(["end_turn", "tool_use", "max_tokens"]),
       st.integers(0, 10_000))
def test_parse_equals_fold_of_stream(blocks: list[dict[str, Any]], stop: str, tokens: int) -> None:
    payload = {"output": {"message": {"role": "assistant", "content": blocks}}, "stopReason": stop,
               "usage": {"inputTokens": tokens, "outputTokens": 3, "totalTokens": tokens + 3}}
    parser = create_parser("rest-json")
    parsed = parser.parse({"status_code": 200, "headers": {}, "body": orjson.dumps(payload)},
                          _SHAPES.operation_model("Converse").output_shape)
    origin = resolve("bedrock", None, CLAUDE).key
    whole = fold(origin, wire.from_wire(parsed))

    frames = b"".join(encode_frame([(":event-type", k), (":content-type", "application/json"),
                                    (":message-type", "event")], orjson.dumps(m)) for k, m in event_frames(payload))
    stream_shape = _SHAPES.operation_model("ConverseStream").output_shape.members["stream"]
    events = EventStream(_Raw(frames), stream_shape, EventStreamJSONParser(), "ConverseStream")
    deltas = [d for ev in events for name, data in ev.items() for d in wire.decode_event(name, data)]
    assert fold(origin, deltas) == whole
    assert fold(origin, [d for name, data in event_frames(payload) for d in wire.decode_event(name, data)]) == whole


def test_bad_frames_fail_in_decode() -> None:
    with pytest.raises(StreamError):
        wire.decode_event("contentBlockDelta", "{not json")
    with pytest.raises(StreamError):
        wire.decode_event("throttlingException", {"message": "slow down"})
    with pytest.raises(StreamError):
        wire.decode_event("contentBlockDelta", {"delta": {"text": "x"}, "contentBlockIndex": "zero"})
