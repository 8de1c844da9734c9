"""The chat-completions emulators, driven over real loopback HTTP by the official ``openai`` SDK.

Expectations here are written out by hand from the providers' documented behaviour (not read from the
emulator's own table), so a wrong row in ``chat_rules.FACTS`` fails a test.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.emulate import Emulator

RC, R, RD, RT, RO = "reasoning_content", "reasoning", "reasoning_details", "reasoning_text", "reasoning_opaque"
REASONING_KEYS = (RC, R, RD, RT, RO)

# What each personality's tool-call turn carries (default model = first of GET /models).
RETURNS: dict[str, frozenset[str]] = {
    **dict.fromkeys(["openrouter", "kilo", "vercel"], frozenset({R, RD})),
    **dict.fromkeys(["novita", "minimax", "tencent"], frozenset({RC, RD})),
    **dict.fromkeys(["deepseek", "kimi", "mimo", "glm", "dashscope", "xai", "generic", "llamacpp", "sglang",
                     "fireworks", "openai", "hunyuan", "gemini-openai", "upstage"], frozenset({RC})),
    **dict.fromkeys(["vllm", "ollama", "ollama-cloud", "lmstudio", "local", "groq", "cerebras"], frozenset({R})),
    **dict.fromkeys(["nous", "sambanova", "mistral"], frozenset()),
    "copilot": frozenset({RT, RO}),
}
THINK_TAGS = {"nous", "sambanova"}
"""Reasoning arrives as ``<think>…</think>`` inside ``content``."""
NO_REPLAY = {"mistral", "groq", "cerebras", "sambanova", "hunyuan"}
"""Strict schemas with no reasoning key at all: the echo carries none."""
_ASK = {"reasoning": {"enabled": True}}
EXTRA_BODY: dict[str, dict[str, Any]] = {"minimax": {"reasoning_split": True}, "openrouter": _ASK, "kilo": _ASK,
                                         "vercel": _ASK}
"""How each personality is asked to think where its models think only when asked."""
NAMES = sorted(RETURNS)
TOOLS = [{"type": "function", "function": {"name": "list_files", "description": "List files",
                                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                                          "required": ["path"]}}}]


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator(NAMES) as e:
        yield e


_CLIENTS: dict[tuple[int, str], openai.OpenAI] = {}
_MODELS: dict[tuple[int, str], str] = {}


def client(emu: Emulator, name: str) -> openai.OpenAI:
    """One SDK client per personality (building one costs an SSL context)."""
    key = (emu.port, name)
    if key not in _CLIENTS:
        _CLIENTS[key] = openai.OpenAI(base_url=emu.url(name), api_key="test", max_retries=0, timeout=10)
    return _CLIENTS[key]


def default_model(emu: Emulator, name: str) -> str:
    key = (emu.port, name)
    if key not in _MODELS:
        _MODELS[key] = client(emu, name).models.list().data[0].id
    return _MODELS[key]


def accumulate(stream: Any) -> tuple[dict[str, Any], str | None, Any]:
    """Fold chat.completion.chunk deltas into the message a non-streaming call returns."""
    msg: dict[str, Any] = {"role": "assistant"}
    content: list[str] = []
    details: dict[int, dict[str, Any]] = {}
    calls: dict[int, dict[str, Any]] = {}
    finish, usage = None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            delta = choice.delta
            extra = delta.model_extra or {}
            content.append(delta.content or "")
            for key in (RC, R, RT):
                if extra.get(key):
                    msg[key] = msg.get(key, "") + extra[key]
            if extra.get(RO):
                msg[RO] = extra[RO]
            if extra.get("extra_content"):
                msg["extra_content"] = extra["extra_content"]
            for frag in extra.get(RD) or []:
                d = details.setdefault(frag["index"], {})
                for k, v in frag.items():
                    if k in ("text", "summary") and k in d:
                        d[k] += v
                    elif v or k not in d:
                        d[k] = v
            for tc in delta.tool_calls or []:
                call = calls.setdefault(tc.index, {"function": {"arguments": ""}})
                dumped = tc.model_dump(exclude_none=True)
                fn = dumped.pop("function", {})
                call["function"]["arguments"] += fn.pop("arguments", "")
                call["function"].update(fn)
                call.update({k: v for k, v in dumped.items() if k != "index"})
    msg["content"] = "".join(content) or None
    if details:
        msg[RD] = [details[i] for i in sorted(details)]
    if calls:
        msg["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {k: v for k, v in msg.items() if v is not None}, finish, usage


def ask(emu: Emulator, name: str, messages: list[dict[str, Any]], *, stream: bool, model: str | None = None,
        **kw: Any) -> tuple[dict[str, Any], str | None, Any]:
    c = client(emu, name)
    kw.setdefault("extra_body", EXTRA_BODY.get(name))
    model = model or default_model(emu, name)
    if stream:
        return accumulate(c.chat.completions.create(model=model, messages=messages, stream=True,  # type: ignore[arg-type]
                                                    stream_options={"include_usage": True}, **kw))
    r = c.chat.completions.create(model=model, messages=messages, **kw)  # type: ignore[arg-type]
    return r.choices[0].message.model_dump(exclude_none=True), r.choices[0].finish_reason, r.usage


def echo(name: str, msg: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in msg.items() if not (name in NO_REPLAY and k in REASONING_KEYS)}


def raises(fn: Any) -> openai.APIStatusError:
    with pytest.raises(openai.APIStatusError) as info:
        fn()
    return info.value


USER = {"role": "user", "content": "What is in the workspace?"}


# --- every personality: a tool exchange, streaming and not ---------------------------------
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("name", NAMES)
def test_tool_exchange_replays_reasoning(emu: Emulator, name: str, stream: bool) -> None:
    first, finish, usage = ask(emu, name, [USER], stream=stream, tools=TOOLS)
    assert finish == "tool_calls"
    assert {k for k in REASONING_KEYS if k in first} == RETURNS[name]
    assert usage.completion_tokens_details.reasoning_tokens > 0
    (call,) = first["tool_calls"]
    assert call["function"]["name"] == "list_files" and json.loads(call["function"]["arguments"]) == {"path": "."}
    if name in THINK_TAGS:
        assert first["content"].startswith("<think>\n") and "</think>" in first["content"]
    if name == "gemini-openai":
        assert call["extra_content"]["google"]["thought_signature"]
    if stream:  # the stream folds into exactly the non-streaming message
        assert first == ask(emu, name, [USER], stream=False, tools=TOOLS)[0]

    replayed = echo(name, first)
    history = [USER, replayed, {"role": "tool", "tool_call_id": call["id"], "content": "a.txt b.txt"}]
    second, finish2, usage2 = ask(emu, name, history, stream=stream, tools=TOOLS)
    assert finish2 == "stop"
    assert "after 1 tool result(s)" in second["content"]
    assert usage2.prompt_tokens > usage.prompt_tokens
    logged = emu.requests(name)[-1]["body"]["messages"][1]
    assert logged == json.loads(json.dumps(replayed))  # byte-exact replay reached the server


@pytest.mark.parametrize("name", NAMES)
def test_models_list(emu: Emulator, name: str) -> None:
    models = client(emu, name).models.list().data
    assert models and all(m.owned_by == name for m in models)


# --- strict schemas ------------------------------------------------------------------------
STRICT: dict[str, tuple[str, int, dict[str, Any]]] = {
    "mistral": (RC, 422, {"object": "error", "message": {"detail": [{
        "type": "extra_forbidden", "loc": ["body", "messages", 1, "assistant", "reasoning_content"],
        "msg": "Extra inputs are not permitted", "input": "I thought."}]},
        "type": "invalid_request_error", "param": None, "code": None}),
    "groq": (RC, 400, {"error": {"message": "'messages.1' : for 'role:assistant' the following must be satisfied"
                                            "[('messages.1' : property 'reasoning_content' is unsupported)]",
                                 "type": "invalid_request_error"}}),
    "cerebras": (RC, 400, {"message": "messages.1.assistant.reasoning_content: property "
                                      "'messages.1.assistant.reasoning_content' is unsupported",
                           "type": "invalid_request_error", "param": "validation_error", "code": "wrong_api_format"}),
    **{n: (RC, 400, {"error": {"message": "Additional properties are not allowed ('reasoning_content' was "
                                          "unexpected) - 'messages.1'",
                               "type": "invalid_request_error", "param": None, "code": None}})
       for n in ("sambanova", "hunyuan", "copilot")},
    **{n: (R, 400, {"error": {"message": "Additional properties are not allowed ('reasoning' was unexpected) - "
                                         "'messages.1'", "type": "invalid_request_error", "param": None, "code": None}})
       for n in ("fireworks", "openai")},
    "gemini-openai": (R, 400, {"error": {
        "code": 400, "status": "INVALID_ARGUMENT",
        "message": "Invalid JSON payload received. Unknown name \"reasoning\" at 'messages[1]': Cannot find field.",
        "details": [{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [{
            "field": "messages[1].reasoning",
            "description": "Invalid JSON payload received. Unknown name \"reasoning\" at 'messages[1]': "
                           "Cannot find field."}]}]}}),
}


@pytest.mark.parametrize("name", sorted(STRICT))
def test_strict_personality_rejects_unknown_reasoning_key(emu: Emulator, name: str) -> None:
    field, status, body = STRICT[name]
    history = [USER, {"role": "assistant", "content": "Nothing.", field: "I thought."},
               {"role": "user", "content": "Again?"}]
    err = raises(lambda: ask(emu, name, history, stream=False))
    assert err.status_code == status
    assert err.response.json() == body


@pytest.mark.parametrize(("name", "key", "text"), [
    ("groq", "thinking", "property 'thinking' is unsupported"),
    ("openai", "thinking", "Unrecognized request argument supplied: thinking"),
    ("copilot", "reasoning", "Unrecognized request argument supplied: reasoning"),
])
def test_strict_personality_rejects_unknown_top_level_switch(emu: Emulator, name: str, key: str, text: str) -> None:
    err = raises(lambda: ask(emu, name, [USER], stream=False, extra_body={key: {"type": "enabled"}}))
    assert err.status_code == 400 and err.response.json()["error"]["message"] == text


def test_lenient_personality_ignores_unknown_keys(emu: Emulator) -> None:
    history = [USER, {"role": "assistant", "content": "x", "cot_summary": "?", RC: "a", R: "b"},
               {"role": "user", "content": "Again?"}]
    for name in ("openrouter", "vllm", "ollama", "deepseek", "kimi"):
        assert ask(emu, name, history, stream=False, extra_body={"whatever": 1})[1] == "stop"


# --- must-echo -------------------------------------------------------------------------------
DS_TEXT = "The `reasoning_content` in the thinking mode must be passed back to the API."
MUST_ECHO = {
    "deepseek": {"error": {"message": DS_TEXT, "type": "invalid_request_error", "param": None,
                           "code": "invalid_request_error"}},
    "mimo": {"error": {"message": DS_TEXT, "type": "invalid_request_error", "param": None,
                       "code": "invalid_request_error"}},
    "kimi": {"error": {"message": "thinking is enabled but reasoning_content is missing in assistant tool call "
                                  "message at index 1", "type": "invalid_request_error", "param": None, "code": None}},
}


def tool_history(assistant_extra: dict[str, Any]) -> list[dict[str, Any]]:
    call = {"id": "call_1", "type": "function", "function": {"name": "list_files", "arguments": "{}"}}
    return [USER, {"role": "assistant", "content": None, "tool_calls": [call], **assistant_extra},
            {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"}]


@pytest.mark.parametrize("name", sorted(MUST_ECHO))
@pytest.mark.parametrize("rc", [None, ""], ids=["missing", "empty"])
def test_must_echo_rejects_tool_turn_without_reasoning_content(emu: Emulator, name: str, rc: str | None) -> None:
    err = raises(lambda: ask(emu, name, tool_history({} if rc is None else {RC: rc}), stream=False))
    assert err.status_code == 400 and err.response.json() == MUST_ECHO[name]


@pytest.mark.parametrize("name", sorted(MUST_ECHO))
def test_must_echo_accepts_single_space_and_thinking_off(emu: Emulator, name: str) -> None:
    assert ask(emu, name, tool_history({RC: " "}), stream=True)[1] == "stop"
    off = ask(emu, name, tool_history({}), stream=False, extra_body={"thinking": {"type": "disabled"}})
    assert off[1] == "stop" and RC not in off[0]


# --- signed blobs ----------------------------------------------------------------------------
def first_turn(emu: Emulator, name: str, model: str) -> dict[str, Any]:
    return ask(emu, name, [USER], stream=False, tools=TOOLS, model=model)[0]


def replay(emu: Emulator, name: str, model: str, msg: dict[str, Any]) -> tuple[dict[str, Any], str | None, Any]:
    history = [USER, msg, {"role": "tool", "tool_call_id": msg["tool_calls"][0]["id"], "content": "a.txt"}]
    return ask(emu, name, history, stream=False, tools=TOOLS, model=model)


@pytest.mark.parametrize(("name", "model"), [("openrouter", "anthropic/claude-sonnet-4.5"),
                                             ("kilo", "anthropic/claude-sonnet-4.5"),
                                             ("vercel", "anthropic/claude-sonnet-4.5"),
                                             ("nous", "moonshotai/kimi-k2.6")])
def test_gateway_rejects_tampered_reasoning_details_signature(emu: Emulator, name: str, model: str) -> None:
    msg = first_turn(emu, name, model)
    assert msg[RD][0]["signature"]
    tampered = {**msg, RD: [{**msg[RD][0], "text": msg[RD][0]["text"] + " (edited)"}]}
    err = raises(lambda: replay(emu, name, model, tampered))
    assert err.status_code == 400
    error = err.response.json()["error"]
    assert error["message"] == "Provider returned error" and error["metadata"]["provider_name"] == "Anthropic"
    assert json.loads(error["metadata"]["raw"])["error"]["message"] == \
        "messages.1.content.0: Invalid `signature` in `thinking` block"
    # a signature minted for another model is foreign too
    other = client(emu, name).models.list().data[1].id
    assert raises(lambda: replay(emu, name, other, msg)).status_code == 400
    assert replay(emu, name, model, msg)[1] == "stop"


def test_openrouter_encrypted_reasoning_is_verified(emu: Emulator) -> None:
    msg = first_turn(emu, "openrouter", "openai/gpt-5.1")
    kinds = [d["type"] for d in msg[RD]]
    assert kinds == ["reasoning.summary", "reasoning.encrypted"] and msg[RD][1]["data"].startswith("gAAAAAB")
    tampered = {**msg, RD: [msg[RD][0], {**msg[RD][1], "data": msg[RD][1]["data"][:-4] + "AAAA"}]}
    raw = json.loads(raises(lambda: replay(emu, "openrouter", "openai/gpt-5.1", tampered))
                     .response.json()["error"]["metadata"]["raw"])
    assert raw["error"]["message"] == f"The encrypted content for item {msg[RD][1]['id']} could not be verified."
    assert replay(emu, "openrouter", "openai/gpt-5.1", msg)[1] == "stop"


@pytest.mark.parametrize(("name", "model", "kinds", "error"), [
    ("vercel", "openai/gpt-5", ["reasoning.summary", "reasoning.encrypted"], "could not be verified"),
    ("vercel", "google/gemini-3-pro-preview", ["reasoning.text", "reasoning.encrypted"], "Corrupted thought"),
])
def test_gateway_pairs_share_index_zero_and_must_come_back_unmerged(
        emu: Emulator, name: str, model: str, kinds: list[str], error: str) -> None:
    """The real gateways return a readable and an encrypted entry that both say ``index: 0``;
    folding them into one entry (merge by index) loses the pairing and is rejected."""
    msg = first_turn(emu, name, model)
    assert [d["type"] for d in msg[RD]] == kinds and [d["index"] for d in msg[RD]] == [0, 0]
    merged = {**msg[RD][0], **msg[RD][1]}
    raw = raises(lambda: replay(emu, name, model, {**msg, RD: [merged]})).response.json()["error"]["metadata"]["raw"]
    assert error in raw
    assert replay(emu, name, model, msg)[1] == "stop"


def test_copilot_verifies_reasoning_opaque_and_gemini_tool_signature(emu: Emulator) -> None:
    expected = {"error": {"message": "Invalid signature in thinking block", "type": "invalid_request_error",
                          "param": None, "code": "invalid_request_body"}}
    msg = first_turn(emu, "copilot", "claude-sonnet-4.5")
    err = raises(lambda: replay(emu, "copilot", "claude-sonnet-4.5", {**msg, RT: msg[RT] + "!"}))
    assert err.status_code == 400 and err.response.json() == expected
    gem = first_turn(emu, "copilot", "gemini-3-pro-preview")
    sig = gem["tool_calls"][0]["function"]["thought_signature"]
    bad_call = {**gem["tool_calls"][0], "function": {**gem["tool_calls"][0]["function"], "thought_signature": sig[::-1]}}
    err = raises(lambda: replay(emu, "copilot", "gemini-3-pro-preview", {**gem, "tool_calls": [bad_call]}))
    assert err.response.json() == expected
    assert replay(emu, "copilot", "gemini-3-pro-preview", gem)[1] == "stop"


MISSING_SIG = ("Function call is missing a thought_signature in functionCall parts. This is required for tools to "
               "work correctly, and missing thought_signature may lead to degraded model performance. Additional "
               "data, function call `default_api:list_files` , position 1. Please refer to "
               "https://ai.google.dev/gemini-api/docs/thought-signatures for more details.")


def test_gemini_openai_thought_signatures(emu: Emulator) -> None:
    name, model = "gemini-openai", "gemini-3-pro-preview"
    msg = first_turn(emu, name, model)
    call = msg["tool_calls"][0]

    def with_sig(sig: str | None) -> dict[str, Any]:
        c = {k: v for k, v in call.items() if k != "extra_content"}
        return {**msg, "tool_calls": [c if sig is None else {**c, "extra_content": {"google": {"thought_signature": sig}}}]}

    err = raises(lambda: replay(emu, name, model, with_sig("Es" + "A" * 40)))
    assert err.response.json() == {"error": {"code": 400, "message": "Corrupted thought signature.",
                                             "status": "INVALID_ARGUMENT"}}
    err = raises(lambda: replay(emu, name, model, with_sig(None)))
    assert err.status_code == 400 and err.response.json()["error"]["message"] == MISSING_SIG
    assert replay(emu, name, model, with_sig("skip_thought_signature_validator"))[1] == "stop"
    assert replay(emu, name, "gemini-2.5-flash", with_sig(None))[1] == "stop"  # 2.5 does not enforce
    answer, _, _ = replay(emu, name, model, msg)
    text_sig = answer["extra_content"]["google"]["thought_signature"]
    # earlier turns (before the last user message) are not required to carry signatures...
    later = [USER, with_sig(None), {"role": "tool", "tool_call_id": call["id"], "content": "a"}, answer,
             {"role": "user", "content": "And now?"}]
    assert ask(emu, name, later, stream=False, model=model)[1] == "stop"
    # ...but a text-turn signature that does not match its text is corrupted
    later[3] = {**answer, "content": answer["content"] + "!"}
    assert raises(lambda: ask(emu, name, later, stream=False, model=model)).status_code == 400
    assert text_sig


# --- drift -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "field", "check"), [
    ("openrouter", R, lambda b: json.loads(b["error"]["metadata"]["raw"])["error"]["message"]
     == "Additional properties are not allowed ('reasoning' was unexpected) - 'messages.1'"),
    ("vllm", R, lambda b: b["error"]["message"]
     == "Additional properties are not allowed ('reasoning' was unexpected) - 'messages.1'"),
    ("deepseek", RC, lambda b: b["error"]["message"].startswith(
        "Failed to deserialize the JSON body into the target type: messages[1]: unknown field `reasoning_content`")),
    ("glm", "thinking", lambda b: b["error"]["message"] == "Unrecognized request argument supplied: thinking"),
])
def test_drift_makes_a_lenient_personality_reject_a_field(emu: Emulator, name: str, field: str, check: Any) -> None:
    history = [USER, {"role": "assistant", "content": "x", field: "y"}, {"role": "user", "content": "Again?"}]
    body = {"thinking": {"type": "enabled"}} if field == "thinking" else None
    assert ask(emu, name, history, stream=False, extra_body=body)[1] == "stop"
    emu.state.set_control(name, reject_fields=[field])
    try:
        err = raises(lambda: ask(emu, name, history, stream=False, extra_body=body))
        assert err.status_code == 400 and check(err.response.json())
    finally:
        emu.state.set_control(name, reject_fields=[])
    assert ask(emu, name, history, stream=False, extra_body=body)[1] == "stop"


# --- switches and usage --------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "switch"), [
    ("glm", {"thinking": {"type": "enabled", "clear_thinking": False}}),
    ("dashscope", {"preserve_thinking": True}),
    ("kimi", {"thinking": {"type": "enabled", "keep": "all"}}),
    ("vllm", {"chat_template_kwargs": {"preserve_thinking": True}}),
    ("llamacpp", {"chat_template_kwargs": {"preserve_thinking": True}}),
])
def test_keep_thinking_switch_keeps_prior_reasoning(emu: Emulator, name: str, switch: dict[str, Any]) -> None:
    field = R if name == "vllm" else RC
    history = [USER, {"role": "assistant", "content": "Nothing.", field: "a long earlier thought " * 40},
               {"role": "user", "content": "Again?"}]
    cleared = ask(emu, name, history, stream=False)[2].prompt_tokens
    kept = ask(emu, name, history, stream=False, extra_body=switch)[2].prompt_tokens
    assert kept > cleared + 150  # the kept thought is read as input
    logged = emu.requests(name)[-1]["body"]
    assert all(logged[k] == v for k, v in switch.items())


def test_usage_accounting_of_reasoning(emu: Emulator) -> None:
    for name, excluded in (("xai", True), ("deepseek", False), ("openrouter", False)):
        u = ask(emu, name, [USER], stream=False)[2]
        rt = u.completion_tokens_details.reasoning_tokens
        assert rt > 0
        assert u.total_tokens == u.prompt_tokens + u.completion_tokens + (rt if excluded else 0)


def test_thinking_off_returns_no_reasoning(emu: Emulator) -> None:
    msg, _, usage = ask(emu, "glm", [USER], stream=False, extra_body={"thinking": {"type": "disabled"}})
    assert RC not in msg and usage.completion_tokens_details.reasoning_tokens == 0
    assert R not in ask(emu, "groq", [USER], stream=False, extra_body={"reasoning_format": "hidden"})[0]
    raw = ask(emu, "groq", [USER], stream=False, extra_body={"reasoning_format": "raw"})[0]
    assert raw["content"].startswith("<think>") and R not in raw
    assert ask(emu, "minimax", [USER], stream=False, extra_body={})[0]["content"].startswith("<think>")


# --- stream shape ---------------------------------------------------------------------------------
def sse_lines(emu: Emulator, name: str, body: dict[str, Any]) -> tuple[int, list[str]]:
    r = httpx.post(emu.url(name) + "/chat/completions", json=body, timeout=10)
    return r.status_code, [line for line in r.text.split("\n") if line]


def body_for(emu: Emulator, name: str, **kw: Any) -> dict[str, Any]:
    return {"model": default_model(emu, name), "messages": [USER], "tools": TOOLS, **EXTRA_BODY.get(name, {}), **kw}


def test_stream_wire_shape(emu: Emulator) -> None:
    status, lines = sse_lines(emu, "openrouter", body_for(emu, "openrouter", stream=True))
    assert status == 200 and lines[0] == ": OPENROUTER PROCESSING" and lines[-1] == "data: [DONE]"
    events = [json.loads(line[6:]) for line in lines if line.startswith("data: {")]
    deltas = [e["choices"][0]["delta"] for e in events if e["choices"]]
    details = [d[RD][0] for d in deltas if RD in d]
    assert all(d["signature"] == "" for d in details[:-1]) and details[-1]["text"] == "" and details[-1]["signature"]
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert calls[0]["id"] and calls[0]["function"]["name"] == "list_files" and len(calls) >= 3
    assert all("id" not in c for c in calls[1:])
    assert not any(e for e in events if not e["choices"])  # no usage chunk unless asked
    _, lines = sse_lines(emu, "copilot", body_for(emu, "copilot", stream=True))
    deltas = [json.loads(line[6:])["choices"][0]["delta"] for line in lines if line.startswith("data: {")]
    opaque_at = next(i for i, d in enumerate(deltas) if RO in d)
    assert opaque_at > max(i for i, d in enumerate(deltas) if "tool_calls" in d)


# --- faults ----------------------------------------------------------------------------------------
@pytest.fixture
def fault(emu: Emulator) -> Iterator[Any]:
    def arm(name: str, kind: str, delay: float | None = None) -> None:
        emu.state.set_control(name, fault=kind, times=1, delay=delay)

    yield arm
    for name in NAMES:
        emu.state.set_control(name, delay=0.0)


@pytest.mark.parametrize("name", ["deepseek", "openrouter", "cerebras"])
def test_fault_500_and_429(emu: Emulator, name: str, fault: Any) -> None:
    fault(name, "500")
    assert raises(lambda: ask(emu, name, [USER], stream=False)).status_code == 500
    fault(name, "429")
    err = raises(lambda: ask(emu, name, [USER], stream=True))
    assert isinstance(err, openai.RateLimitError) and err.response.headers["retry-after"] == "0"
    assert ask(emu, name, [USER], stream=False)[1] == "stop"  # consumed


def test_fault_non_json_bodies(emu: Emulator, fault: Any) -> None:
    body = body_for(emu, "kimi")
    fault("kimi", "html502")
    r = httpx.post(emu.url("kimi") + "/chat/completions", json=body)
    assert r.status_code == 502 and r.headers["content-type"].startswith("text/html") and "<html>" in r.text
    fault("kimi", "empty200")
    r = httpx.post(emu.url("kimi") + "/chat/completions", json=body)
    assert r.status_code == 200 and r.content == b""
    fault("kimi", "text4xx")
    r = httpx.post(emu.url("kimi") + "/chat/completions", json=body)
    assert r.status_code == 400 and r.headers["content-type"].startswith("text/plain")
    with pytest.raises(json.JSONDecodeError):
        json.loads(r.text)


@pytest.mark.parametrize("name", ["glm", "openrouter"])
def test_fault_truncate_and_malformed_streams(emu: Emulator, name: str, fault: Any) -> None:
    fault(name, "truncate")
    _, lines = sse_lines(emu, name, body_for(emu, name, stream=True))
    payloads = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
    assert "data: [DONE]" not in lines and payloads
    assert all(c["finish_reason"] is None for p in payloads for c in p["choices"])
    fault(name, "malformed")
    _, lines = sse_lines(emu, name, body_for(emu, name, stream=True))
    bad = [line for line in lines if line.startswith("data: {")]
    with pytest.raises(json.JSONDecodeError):
        for line in bad:
            json.loads(line[6:])
    assert lines[-1] == "data: [DONE]"
    fault(name, "truncate")
    r = httpx.post(emu.url(name) + "/chat/completions", json=body_for(emu, name))
    with pytest.raises(json.JSONDecodeError):
        r.json()


def test_fault_slow_and_delay(emu: Emulator, fault: Any) -> None:
    fault("ollama", "slow", delay=0.02)
    start = time.monotonic()
    _, lines = sse_lines(emu, "ollama", body_for(emu, "ollama", stream=True))
    events = [line for line in lines if line.startswith("data: ")]
    assert time.monotonic() - start >= 0.02 * (len(events) - 1)
    assert lines[-1] == "data: [DONE]"


# --- property: the stream and the JSON response are the same turn ----------------------------------
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60),
       name=st.sampled_from(["openrouter", "copilot", "gemini-openai", "novita", "sambanova"]),
       tools=st.booleans())
def test_stream_folds_to_the_json_message(emu: Emulator, text: str, name: str, tools: bool) -> None:
    messages = [{"role": "user", "content": text}]
    kw: dict[str, Any] = {"tools": TOOLS} if tools else {}
    streamed = ask(emu, name, messages, stream=True, **kw)
    plain = ask(emu, name, messages, stream=False, **kw)
    assert streamed[0] == plain[0] and streamed[1] == plain[1]
    assert streamed[2].completion_tokens == plain[2].completion_tokens


# --- the emulators agree with the route table ---------------------------------------------------
RECORDED_ACCEPTS: dict[str, set[str]] = {"cerebras": {R}}
"""Carriers a strict row does not send but a recorded real request showed the provider accepts
(docs/realworld.md): the emulator takes them, the row stays conservative."""


def test_every_chat_route_has_a_personality_that_accepts_its_carriers(emu: Emulator) -> None:
    from hermes.emulate.chat_rules import FACTS
    from hermes.routing.routes import ROUTES

    chat = [r for r in ROUTES if r.wire == "openai_chat"]
    assert {r.key for r in chat} == set(FACTS) == set(RETURNS)
    for route in chat:
        facts = FACTS[route.key]
        assert route.carriers <= facts.accepts, route.key
        if route.strict:  # the row sends nothing; the personality takes only what a recording proved
            assert not ({RC, R, RD} & facts.accepts - RECORDED_ACCEPTS.get(route.key, set())), route.key
            assert facts.strict, route.key
        if "reasoning_opaque" in route.native:
            assert {RT, RO} <= facts.accepts
