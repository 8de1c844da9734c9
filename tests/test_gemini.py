"""Gemini native wire against the AI Studio / Vertex emulators, over real HTTP.

Fidelity: the official ``google-genai`` SDK talks to the emulator and parses every response.
Replay: signatures come back byte-exact on their functionCall / last text part, thought text
never does, foreign calls get the documented validator skip, and the emulator (which checks
signatures like Gemini 3 does) accepts every request Hermes builds.

Decision (blob_scope "provider"): switching to another Gemini model on the same route keeps
the signatures. Gemini documents that signatures from another model family are ignored, not
rejected, so sending them costs nothing and keeps same-family switches (3 Pro → 3.1 Pro)
rehydrating their thoughts.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.agent import provider
from hermes.core.errors import ProviderHTTPError, RateLimited, StreamError, UnsupportedPart
from hermes.core.messages import (
    Message,
    NativeRecord,
    Reasoning,
    RouteKey,
    Text,
    ToolCall,
    ToolResult,
)
from hermes.core.stream import fold
from hermes.replay import GEMINI_SKIP_SIGNATURE, Settings, plan_replay
from hermes.routing.resolve import resolve
from hermes.wire import ToolSpec
from hermes.wire import gemini as wire

MODEL = "gemini-3-pro-preview"
KEY = "test-gemini-key-0001"
TOOLS = [
    ToolSpec("list_dir", "List a directory", {"type": "object", "properties": {"path": {"type": "string"}},
                                              "required": ["path"], "additionalProperties": False}),
    ToolSpec("read_file", "Read a file", {"type": "object", "properties": {"file": {"type": "string"}},
                                          "required": ["file"]}),
]
ORIGIN = RouteKey("gemini", "127.0.0.1", MODEL, "gemini")


def _resolved(emu: Any, name: str = "gemini", model: str = MODEL) -> Any:
    return resolve(name, emu.url(name), model)


def _complete(emu: Any, name: str, history: list[Message], *, stream: bool, model: str = MODEL, **kw: Any) -> Any:
    return provider.complete(_resolved(emu, name, model), history, tools=TOOLS, stream=stream, api_key=KEY, **kw)


def _loop(emu: Any, name: str, history: list[Message], *, stream: bool, model: str = MODEL) -> list[Any]:
    """Run the tool loop of the current user turn to its answer; returns the exchanges."""
    out = []
    for _ in range(5):
        ex = _complete(emu, name, history, stream=stream, model=model)
        out.append(ex)
        history.append(ex.response.message)
        calls = ex.response.message.tool_calls
        if not calls:
            return out
        history.append(Message("tool", tuple(ToolResult(c.id, f"result of {c.name}") for c in calls)))
    raise AssertionError("tool loop did not end")


def _native(m: Message) -> NativeRecord:
    recs = [p.native for p in m.reasoning if p.native]
    assert len(recs) == 1
    return recs[0]


def _walk(obj: Any) -> list[Any]:
    out = [obj]
    if isinstance(obj, dict):
        for v in obj.values():
            out += _walk(v)
    elif isinstance(obj, list):
        for v in obj:
            out += _walk(v)
    return out


# ----------------------------------------------------------------------------- SDK fidelity


def test_google_genai_sdk_parses_every_response(emulator: Any) -> None:
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="test", http_options=types.HttpOptions(
        base_url=emulator.url("gemini").removesuffix("/v1beta"), api_version="v1beta"))
    tool = types.Tool(function_declarations=[types.FunctionDeclaration(
        name="list_dir", description="List", parameters_json_schema=dict(TOOLS[0].parameters))])
    cfg = types.GenerateContentConfig(tools=[tool], thinking_config=types.ThinkingConfig(include_thoughts=True),
                                      automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
    first = client.models.generate_content(model=MODEL, contents="what is here?", config=cfg)
    parts = first.candidates[0].content.parts
    assert parts[0].thought is True and parts[0].text
    assert parts[1].function_call.name == "list_dir" and parts[1].function_call.args == {"path": "."}
    assert isinstance(parts[1].thought_signature, bytes) and len(parts[1].thought_signature) > 16
    assert first.usage_metadata.thoughts_token_count > 0

    # The SDK re-encodes the signature bytes (URL-safe base64); the emulator must accept it.
    history = [types.Content(role="user", parts=[types.Part(text="what is here?")]), first.candidates[0].content,
               types.Content(role="user", parts=[types.Part.from_function_response(
                   name="list_dir", response={"output": "a.txt"})])]
    chunks = list(client.models.generate_content_stream(model=MODEL, contents=history, config=cfg))
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    streamed = [p for ch in chunks for p in (ch.candidates[0].content.parts or [])]
    assert any(p.thought for p in streamed)
    assert not any(p.function_call for p in streamed)
    # Second tool of the chain is not offered here, so the model answers; signature on the trailing part.
    assert streamed[-1].text == "" and streamed[-1].thought_signature
    assert "".join(p.text or "" for p in streamed if not p.thought).startswith("Done (gemini-3-pro-preview)")

    # The SDK's chat keeps signatures itself: a full loop is accepted.
    chat = client.chats.create(model=MODEL, config=cfg)
    assert chat.send_message("list it").function_calls[0].name == "list_dir"
    final = chat.send_message(types.Part.from_function_response(name="list_dir", response={"output": "x"}))
    assert final.text.startswith("Done")

    # A missing signature is the real 400 the SDK surfaces.
    stripped = first.candidates[0].content.model_copy(deep=True)
    stripped.parts[1].thought_signature = None
    with pytest.raises(genai.errors.ClientError) as e:
        client.models.generate_content(model=MODEL, contents=[history[0], stripped, history[2]], config=cfg)
    assert "missing a thought_signature" in str(e.value) and "`default_api:list_dir`" in str(e.value)


# ----------------------------------------------------------------------------- replay over HTTP


@pytest.mark.parametrize("name", ["gemini", "gemini-vertex"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_tool_loop_replays_signatures_byte_exact(emulator: Any, name: str, stream: bool) -> None:
    before = len(emulator.requests(name))
    history = [Message.system("Be brief."), Message.user(f"inspect the project ({name}, {stream})")]
    turn1 = _loop(emulator, name, history, stream=stream)
    assert [len(ex.response.message.tool_calls) for ex in turn1] == [1, 1, 0]
    sig1 = dict(_native(turn1[0].response.message).tool_signatures)
    sig2 = dict(_native(turn1[1].response.message).tool_signatures)
    text_sig = _native(turn1[2].response.message).thought_signature
    assert len(sig1) == len(sig2) == 1 and text_sig
    history.append(Message.user("and once more"))
    _loop(emulator, name, history, stream=stream)

    log = emulator.requests(name)[before:]
    assert len(log) == 6
    path = log[0]["path"]
    method = "streamGenerateContent" if stream else "generateContent"
    assert path.endswith(f"/models/{MODEL}:{method}")
    assert ("/publishers/google/models/" in path) == (name == "gemini-vertex")
    assert (log[0]["query"] == "alt=sse") == stream
    body3, body4 = log[2]["body"], log[3]["body"]
    assert body3["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    model_turns = [c for c in body3["contents"] if c["role"] == "model"]
    (cid1, s1), (_, s2) = next(iter(sig1.items())), next(iter(sig2.items()))
    assert model_turns[0]["parts"] == [{"functionCall": {"name": "list_dir", "args": {"path": "."}, "id": cid1},
                                        "thoughtSignature": s1}]
    assert model_turns[1]["parts"][0]["thoughtSignature"] == s2
    # The answer turn comes back with its signature on the last text part; no thought text ever.
    answer = [c for c in body4["contents"] if c["role"] == "model"][-1]
    assert answer["parts"][-1] == {"text": turn1[2].response.message.text, "thoughtSignature": text_sig}
    for entry in log:
        assert not any(isinstance(x, dict) and x.get("thought") for x in _walk(entry["body"]))
        fr = [x["functionResponse"] for x in _walk(entry["body"]) if isinstance(x, dict) and "functionResponse" in x]
        assert all(r["id"] and r["name"] in ("list_dir", "read_file") for r in fr)


def test_stream_and_json_give_the_same_turn(emulator: Any) -> None:
    history = [Message.user("same either way")]
    a = _complete(emulator, "gemini", history, stream=False).response
    b = _complete(emulator, "gemini", history, stream=True).response
    assert a == b
    assert a.usage["reasoning_tokens"] > 0 and a.finish_reason == "stop"


def test_missing_and_tampered_signatures_are_rejected_like_gemini(emulator: Any) -> None:
    history = [Message.user("tamper test")]
    _loop_first = _complete(emulator, "gemini", history, stream=False)
    history += [_loop_first.response.message,
                Message("tool", (ToolResult(_loop_first.response.message.tool_calls[0].id, "x"),))]

    def strip(body: dict[str, Any]) -> dict[str, Any]:
        body["contents"][1]["parts"][0].pop("thoughtSignature")
        return body

    def tamper(body: dict[str, Any]) -> dict[str, Any]:
        part = body["contents"][1]["parts"][0]
        part["thoughtSignature"] = part["thoughtSignature"][:-6] + "AAAAAA"
        return body

    with pytest.raises(ProviderHTTPError) as e:
        _complete(emulator, "gemini", history, stream=False, body_hook=strip)
    assert e.value.status == 400
    assert e.value.json()["error"]["message"] == (
        "Function call is missing a thought_signature in functionCall parts. This is required for tools to work "
        "correctly, and missing thought_signature may lead to degraded model performance. Additional data, "
        "function call `default_api:list_dir` , position 1. Please refer to "
        "https://ai.google.dev/gemini-api/docs/thought-signatures for more details.")
    with pytest.raises(ProviderHTTPError, match="Corrupted thought signature"):
        _complete(emulator, "gemini", history, stream=True, body_hook=tamper)
    assert _complete(emulator, "gemini", history, stream=False).response.message.tool_calls  # untouched: fine


def test_unknown_field_is_a_strict_proto_json_400(emulator: Any) -> None:
    def extra(body: dict[str, Any]) -> dict[str, Any]:
        body["contents"][0]["parts"][0]["reasoning_content"] = "x"
        return body

    with pytest.raises(ProviderHTTPError) as e:
        _complete(emulator, "gemini", [Message.user("hi")], stream=False, body_hook=extra)
    err = e.value.json()["error"]
    assert err["status"] == "INVALID_ARGUMENT"
    assert err["message"] == ("Invalid JSON payload received. Unknown name \"reasoning_content\" at "
                              "'contents[0].parts[0]': Cannot find field.")
    assert err["details"][0]["fieldViolations"][0]["field"] == "contents[0].parts[0]"


def test_switch_from_anthropic_sends_no_foreign_signature(emulator: Any) -> None:
    ant = RouteKey("anthropic", "api.anthropic.com", "claude-sonnet-4-5", "anthropic")
    foreign_sig = "EqQBCkYIBxgCKkDforeignanthropicsignature=="
    history = [
        Message.user("look around"),
        Message("assistant", (Reasoning("I should list the directory.", ant, foreign_sig, "anthropic.signature"),
                              Text("Let me look."), ToolCall("toolu_01", "list_dir", '{"path": "."}'),
                              ToolCall("toolu_02", "read_file", '{"file": "a.txt"}'))),
        Message("tool", (ToolResult("toolu_01", "a.txt"), ToolResult("toolu_02", "hello"))),
    ]
    ex = _complete(emulator, "gemini", history, stream=True)
    assert ex.response.message.text.startswith("Done")
    raw = orjson.dumps(ex.body).decode()
    assert foreign_sig not in raw and "I should list the directory." not in raw
    model = next(c for c in ex.body["contents"] if c["role"] == "model")
    assert model["parts"][0] == {"text": "Let me look."}
    assert model["parts"][1]["thoughtSignature"] == GEMINI_SKIP_SIGNATURE
    assert "thoughtSignature" not in model["parts"][2]  # parallel calls: only the first is signed
    responses = [c for c in ex.body["contents"] if c["role"] == "user"][1]["parts"]
    assert [r["functionResponse"]["name"] for r in responses] == ["list_dir", "read_file"]
    assert emulator.requests("gemini")[-1]["body"] == ex.body


def test_switch_to_another_gemini_model_keeps_signatures(emulator: Any) -> None:
    history = [Message.user("switch models mid-loop")]
    first = _complete(emulator, "gemini", history, stream=False)
    sig = dict(_native(first.response.message).tool_signatures)
    history += [first.response.message,
                Message("tool", (ToolResult(first.response.message.tool_calls[0].id, "x"),))]
    for model in ("gemini-3-flash-preview", "gemini-3-pro-preview"):
        ex = _complete(emulator, "gemini", history, stream=False, model=model)
        part = ex.body["contents"][1]["parts"][0]
        assert part["thoughtSignature"] == next(iter(sig.values()))  # same route: kept (blob_scope provider)
        assert ex.response.message.tool_calls[0].name == "read_file"
    # Another route (Vertex) may not receive AI Studio signatures: the documented skip instead.
    ex = _complete(emulator, "gemini-vertex", history, stream=False)
    assert ex.body["contents"][1]["parts"][0]["thoughtSignature"] == GEMINI_SKIP_SIGNATURE


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize(("fault", "match"), [
    ("noparts", "no content parts"),
    ("safety", "blocked \\(finishReason SAFETY\\)"),
    ("truncate", "truncated|not JSON"),
    ("malformed", "not JSON"),
])
def test_bad_responses_raise_clear_errors(emulator: Any, fault: str, match: str, stream: bool) -> None:
    emulator.state.set_control("gemini", fault=fault, times=1)
    seen: list[Any] = []
    with pytest.raises(StreamError, match=match):
        _complete(emulator, "gemini", [Message.user(f"fault {fault}")], stream=stream, on_delta=seen.append)
    assert emulator.state.take_fault("gemini") is None


def test_rate_limit_maps_to_rate_limited(emulator: Any) -> None:
    emulator.state.set_control("gemini", fault="429", times=3)
    try:
        with pytest.raises(RateLimited, match="Resource has been exhausted"):
            _complete(emulator, "gemini", [Message.user("quota")], stream=False)
    finally:
        emulator.state.set_control("gemini", fault=None)


def test_error_object_in_stream_and_prompt_block() -> None:
    with pytest.raises(StreamError, match="RESOURCE_EXHAUSTED"):
        wire.decode_event("message", '{"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}')
    with pytest.raises(StreamError, match="blocked"):
        wire.from_wire({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}})
    with pytest.raises(StreamError, match="not JSON"):
        wire.decode_event("message", "{oops")
    with pytest.raises(StreamError, match="no candidates"):
        wire.from_wire({"usageMetadata": {"promptTokenCount": 1}})


# ----------------------------------------------------------------------------- pure wire


def test_to_wire_shapes_and_model_facts(emulator: Any) -> None:
    r = _resolved(emulator)
    sig = "EuYCsignature-for-first-call"
    reasoning = Reasoning("thought text", ORIGIN, native=NativeRecord(
        thought_signature="EuYCtextsig", tool_signatures=(("c1", sig),)))
    history = [
        Message.user("q"),
        Message("assistant", (reasoning, Text("part one"), ToolCall("c1", "list_dir", '{"path": "/"}'),
                              ToolCall("c2", "read_file", '{"file": "f"}'))),
        Message("tool", (ToolResult("c1", "out"),)),
        Message("tool", (ToolResult("c2", "boom", is_error=True),)),
        Message.user("next"),
    ]
    body = wire.to_wire(plan_replay(history, r), tools=TOOLS, settings=Settings(effort="high"))
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["contents"][1]["parts"] == [
        {"text": "part one", "thoughtSignature": "EuYCtextsig"},
        {"functionCall": {"name": "list_dir", "args": {"path": "/"}, "id": "c1"}, "thoughtSignature": sig},
        {"functionCall": {"name": "read_file", "args": {"file": "f"}, "id": "c2"}}]
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"name": "list_dir", "response": {"output": "out"}, "id": "c1"}},
        {"functionResponse": {"name": "read_file", "response": {"error": "boom"}, "id": "c2"}},
        {"text": "next"}]
    assert body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]["additionalProperties"] is False
    assert body["generationConfig"] == {"thinkingConfig": {"includeThoughts": True, "thinkingLevel": "high"}}
    old = resolve("gemini", emulator.url("gemini"), "gemini-2.5-flash")
    body25 = wire.to_wire(plan_replay(history, old), settings=Settings(effort="low"))
    assert body25["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 1024}
    assert "id" not in body25["contents"][1]["parts"][1]["functionCall"]
    off = wire.to_wire(plan_replay(history, old, settings=Settings(thinking=False)), settings=Settings(thinking=False))
    assert off["generationConfig"]["thinkingConfig"] == {"includeThoughts": False, "thinkingBudget": 0}
    bad = [Message.user("q"), Message("assistant", (ToolCall("c9", "x", "not json"),))]
    with pytest.raises(UnsupportedPart, match="not JSON"):
        wire.to_wire(plan_replay(bad, r))


def test_endpoints() -> None:
    ai = resolve("gemini", None, MODEL)
    assert wire.endpoint(ai, stream=False)[0] == (
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-3-pro-preview:generateContent")
    vx = resolve("gemini-vertex", "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1",
                 MODEL)
    assert wire.endpoint(vx, stream=True)[0] == (
        "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1"
        "/publishers/google/models/gemini-3-pro-preview:streamGenerateContent?alt=sse")


# ----------------------------------------------------------------------------- parse == fold

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
_sig = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", min_size=4, max_size=16)
_part = st.one_of(
    st.builds(lambda t: {"text": t, "thought": True}, _text),
    st.builds(lambda t, s: {"text": t, **({"thoughtSignature": s} if s else {})}, _text, st.none() | _sig),
    st.builds(lambda n, a, i, s: {"functionCall": {"name": n, "args": a, **({"id": i} if i else {})},
                                  **({"thoughtSignature": s} if s else {})},
              st.sampled_from(["list_dir", "read_file"]), st.dictionaries(st.sampled_from("abc"), st.integers(0, 9)),
              st.none() | st.text("xyz0123", min_size=4, max_size=6), st.none() | _sig),
)


def _chunk(parts: list[dict[str, Any]], finish: bool, usage: dict[str, int]) -> str:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        cand["finishReason"] = "STOP"
    return orjson.dumps({"candidates": [cand], "usageMetadata": usage}).decode()


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(_part, min_size=1, max_size=6), cuts=st.lists(st.integers(0, 6), max_size=4),
       split_text=st.booleans(), trailing_sig=st.booleans())
def test_parse_equals_fold_of_stream(parts: list[dict[str, Any]], cuts: list[int], split_text: bool,
                                     trailing_sig: bool) -> None:
    calls = [p["functionCall"] for p in parts if "functionCall" in p]
    ids = [c.get("id") for c in calls if c.get("id")]
    anon = [orjson.dumps(c, option=orjson.OPT_SORT_KEYS) for c in calls if not c.get("id")]
    if len(set(ids)) != len(ids) or len(set(anon)) != len(anon):
        return  # call ids are unique within a turn; id-less calls are told apart by content
    usage = {"promptTokenCount": 3, "candidatesTokenCount": 2, "thoughtsTokenCount": 5, "totalTokenCount": 10}
    payload = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
               "usageMetadata": usage}
    whole = fold(ORIGIN, wire.from_wire(payload))
    # The stream: the same parts in chunks, long texts split, a last text signature moved to a
    # trailing empty-text chunk as the service sends it.
    streamed: list[dict[str, Any]] = []
    for p in parts:
        if split_text and "text" in p and len(p["text"]) > 1 and "thoughtSignature" not in p:
            streamed += [{**p, "text": p["text"][:1]}, {**p, "text": p["text"][1:]}]
        else:
            streamed.append(dict(p))
    tail: list[dict[str, Any]] = [{"text": ""}]
    if trailing_sig and "text" in streamed[-1] and "thoughtSignature" in streamed[-1] and not streamed[-1].get("thought"):
        tail = [{"text": "", "thoughtSignature": streamed[-1].pop("thoughtSignature")}]
    bounds = sorted({c for c in cuts if 0 < c < len(streamed)})
    groups = [streamed[a:b] for a, b in zip([0, *bounds], [*bounds, len(streamed)], strict=True)]
    events = [_chunk(g, False, usage) for g in groups] + [_chunk(tail, True, usage)]
    deltas = [d for e in events for d in wire.decode_event("message", e)]
    assert fold(ORIGIN, deltas) == whole
    assert [c.name for c in whole.message.tool_calls] == [c["name"] for c in calls]


def test_transient_500_is_retried_and_slow_stream_completes(emulator: Any) -> None:
    emulator.state.set_control("gemini", fault="500", times=1)
    assert _complete(emulator, "gemini", [Message.user("flaky")], stream=False).response.message.tool_calls
    emulator.state.set_control("gemini", fault="slow", times=1)
    seen: list[Any] = []
    ex = _complete(emulator, "gemini", [Message.user("slowly")], stream=True, on_delta=seen.append)
    assert ex.response.message.tool_calls and len(seen) >= 4


# ----------------------------------------------------------------------------- Gemma on Google's routes


@pytest.mark.parametrize("name", ["gemini", "gemini-vertex"])
def test_gemma_takes_back_its_own_signatures_and_never_a_gemini_ones(emulator: Any, name: str) -> None:
    """Gemma does not read Gemini's thought signatures: one replayed to it is a 400 (hermes-agent
    issue 36907, gemini-3-flash → gemma-4-31b-it). Its own go back; a call without one gets no
    validator skip (Gemma checks none)."""
    history = [Message.user("switch models mid-loop")]
    first = _complete(emulator, name, history, stream=False, model="gemini-3-flash-preview")
    gemini_sig = next(iter(dict(_native(first.response.message).tool_signatures).values()))
    history += [first.response.message, Message("tool", (ToolResult(first.response.message.tool_calls[0].id, "x"),))]
    gemma = _loop(emulator, name, history, stream=False, model="gemma-4-31b-it")
    sent = [c for ex in gemma for c in ex.body["contents"] if c["role"] == "model"]
    assert gemini_sig not in orjson.dumps(sent).decode()
    assert "thoughtSignature" not in sent[0]["parts"][0], "no validator skip for Gemma"
    own = next(iter(dict(_native(gemma[0].response.message).tool_signatures).values()))
    assert sent[-1]["parts"][0]["thoughtSignature"] == own, "Gemma's own signature goes back"


@pytest.mark.parametrize("name", ["gemini", "gemini-vertex"])
def test_gemma_refuses_a_gemini_signature_in_googles_words(emulator: Any, name: str) -> None:
    history = [Message.user("switch models mid-loop")]
    first = _complete(emulator, name, history, stream=False, model="gemini-3-flash-preview")
    history += [first.response.message, Message("tool", (ToolResult(first.response.message.tool_calls[0].id, "x"),))]
    sig = next(iter(dict(_native(first.response.message).tool_signatures).values()))

    def signed(b: dict[str, Any]) -> dict[str, Any]:
        contents = [dict(c) for c in b["contents"]]
        contents[1] = {**contents[1], "parts": [{**contents[1]["parts"][0], "thoughtSignature": sig}]}
        return {**b, "contents": contents}

    with pytest.raises(ProviderHTTPError) as err:
        _complete(emulator, name, history, stream=False, model="gemma-4-31b-it", body_hook=signed)
    assert err.value.status == 400 and "Request contains an invalid argument." in err.value.body


def test_gemma_on_the_openai_compatible_endpoint_gets_no_validator_skip(emulator: Any) -> None:
    """The compat row pads a bare call with the skip for Gemini 3; Gemma checks no signature."""
    history = [Message.user("switch models mid-loop")]
    first = _complete(emulator, "gemini-openai", history, stream=False, model="gemini-3-flash-preview")
    history += [first.response.message, Message("tool", (ToolResult(first.response.message.tool_calls[0].id, "x"),))]
    gemma = _loop(emulator, "gemini-openai", history, stream=False, model="gemma-4-31b-it")
    sent = [m for ex in gemma for m in ex.body["messages"] if m["role"] == "assistant"]
    assert "extra_content" not in sent[0]["tool_calls"][0], "neither Gemini's signature nor the skip"
    assert gemma[-1].response.message.text
