"""Table tests: every route x every part kind, asserting present and absent keys exactly.

The expected carrier sets are written out here from the product brief, independently of
``hermes/routing/routes.py``, so a wrong row fails.
"""

from __future__ import annotations

import orjson
import pytest

from hermes.core.messages import (
    Message,
    NativeRecord,
    Reasoning,
    RouteKey,
    Text,
    ToolCall,
    ToolResult,
)
from hermes.replay import GEMINI_SKIP_SIGNATURE, PAD, Learned, Settings, plan_replay
from hermes.routing.resolve import resolve
from hermes.routing.routes import ROUTES
from hermes.wire.openai_chat import render_message

RC, R, RD = "reasoning_content", "reasoning", "reasoning_details"
EXPECTED_CHAT: dict[str, set[str]] = {
    **dict.fromkeys(["openrouter", "kilo", "vercel", "nous"], {RC, R, RD}),
    **dict.fromkeys(["novita", "minimax", "tencent"], {RC, RD}),
    **dict.fromkeys(["ollama", "ollama-cloud", "vllm", "llamacpp", "lmstudio", "sglang", "local", "upstage"], {RC, R}),
    **dict.fromkeys(["openai", "xai", "glm", "dashscope", "fireworks", "generic", "gemini-openai"], {RC}),
    **dict.fromkeys(["mistral", "groq", "sambanova", "hunyuan", "copilot"], set()),  # groq: model m-1 is no reasoning model
    "cerebras": {R},
    **dict.fromkeys(["deepseek", "kimi", "mimo"], {RC}),
}
MUST_ECHO = {"deepseek", "kimi", "mimo"}
CHAT_ROUTES = [r.key for r in ROUTES if r.wire == "openai_chat"]
MODEL = "m-1"


def target(key: str, model: str = MODEL):
    return resolve(key, None if resolve_base(key) else "http://127.0.0.1:9/v1", model)


def resolve_base(key: str) -> str:
    return next(r.base_url for r in ROUTES if r.key == key)


def own(key: str, model: str = MODEL) -> RouteKey:
    return target(key, model).key


def turn(*parts, tool: bool = True) -> list[Message]:
    calls = (ToolCall("call_1", "read_file", '{"path": "a"}'),) if tool else (Text("ok"),)
    return [Message.user("hi"), Message("assistant", (*parts, *calls)),
            *([Message("tool", (ToolResult("call_1", "contents"),))] if tool else [])]


def assistant_plan(history, key: str, **kw):
    plan = plan_replay(history, target(key), **kw)
    return next(m for m in plan.messages if m.role == "assistant")


def test_every_chat_route_is_in_the_expectation_table():
    assert set(CHAT_ROUTES) == set(EXPECTED_CHAT)


@pytest.mark.parametrize("key", CHAT_ROUTES)
def test_chat_reasoning_text_goes_to_exactly_the_rows_text_carriers(key):
    text = "I will read a first."
    pm = assistant_plan(turn(Reasoning(text, own(key))), key)
    want = EXPECTED_CHAT[key] & {RC, R}
    assert set(pm.fields) == want
    assert all(pm.fields[f] == text for f in want)
    assert not any(isinstance(p, Reasoning) for p in pm.parts)


@pytest.mark.parametrize("key", CHAT_ROUTES)
def test_chat_reasoning_details_blob_only_where_the_row_reads_it(key):
    details = [{"type": "reasoning.text", "text": "t", "signature": "EsSig==", "index": 0},
               {"type": "reasoning.encrypted", "data": "gAAAAx", "index": 1}]
    blob = orjson.dumps(details).decode()
    pm = assistant_plan(turn(Reasoning("t", own(key), blob, "openrouter.details")), key)
    assert set(pm.fields) == EXPECTED_CHAT[key]
    if RD in EXPECTED_CHAT[key]:
        assert pm.fields[RD] == details


@pytest.mark.parametrize("key", CHAT_ROUTES)
def test_chat_tool_turn_without_reasoning_is_padded_only_on_must_echo(key):
    pm = assistant_plan(turn(), key)
    if key in MUST_ECHO:
        assert pm.fields == {RC: PAD}
    else:
        assert pm.fields == {}


@pytest.mark.parametrize("key", CHAT_ROUTES)
def test_chat_signed_anthropic_blocks_never_reach_a_chat_route(key):
    sig = Reasoning("deep thought", RouteKey("anthropic", "api.anthropic.com", MODEL, "anthropic"),
                    "EsSIGNATURE", "anthropic.signature")
    red = Reasoning("", RouteKey("anthropic", "api.anthropic.com", MODEL, "anthropic"), "REDACTED", "anthropic.redacted")
    pm = assistant_plan(turn(sig, red), key)
    dumped = orjson.dumps(dict(pm.fields)).decode()
    assert "EsSIGNATURE" not in dumped and "REDACTED" not in dumped
    want = EXPECTED_CHAT[key] & {RC, R}
    assert {k for k in pm.fields if k in (RC, R)} == want
    assert all(pm.fields[f] == "deep thought" for f in want)


NATIVE_GEMINI = NativeRecord(thought_signature="GSIG", tool_signatures=(("call_1", "TSIG"),))
NATIVE_COPILOT = NativeRecord(reasoning_opaque="OPAQUE", reasoning_text="readable", tool_signatures=(("call_1", "CSIG"),))


@pytest.mark.parametrize("key", CHAT_ROUTES)
def test_native_records_reach_only_their_owner(key):
    for owner, record in (("gemini-openai", NATIVE_GEMINI), ("copilot", NATIVE_COPILOT)):
        pm = assistant_plan(turn(Reasoning("readable", own(owner), native=record)), key)
        native_keys = {"extra_content", "reasoning_opaque", "reasoning_text"} & set(pm.fields)
        if key == owner == "gemini-openai":  # neutral intents in the plan; the wire places them
            assert native_keys == set() and pm.thought_signature == "GSIG"
            assert dict(pm.tool_signatures) == {"call_1": "TSIG"}
            sent = render_message(pm, target(key).route)[-1]
            assert sent["extra_content"] == {"google": {"thought_signature": "GSIG"}}
            assert sent["tool_calls"][0]["extra_content"] == {"google": {"thought_signature": "TSIG"}}
        elif key == owner == "copilot":
            assert pm.fields["reasoning_opaque"] == "OPAQUE" and pm.fields["reasoning_text"] == "readable"
            assert dict(pm.tool_signatures) == {"call_1": "CSIG"}
        elif key == "gemini-openai":  # a foreign tool turn gets Gemini's documented validator skip
            assert native_keys == set() and dict(pm.tool_signatures) == {"call_1": GEMINI_SKIP_SIGNATURE}
        else:
            assert native_keys == set() and dict(pm.tool_signatures) == {}
        if not key == owner == "gemini-openai":
            assert pm.thought_signature is None


def test_copilot_reasoning_text_is_never_sent_without_its_opaque_blob():
    record = NativeRecord(reasoning_text="only text")
    pm = assistant_plan(turn(Reasoning("only text", own("copilot"), native=record)), "copilot")
    assert "reasoning_text" not in pm.fields


def test_a_native_record_from_another_model_is_not_sent():
    pm = assistant_plan(turn(Reasoning("x", own("copilot", "other-model"), native=NATIVE_COPILOT)), "copilot")
    assert "reasoning_opaque" not in pm.fields


@pytest.mark.parametrize("key", ["anthropic", "anthropic-vertex", "anthropic-foundry"])
def test_anthropic_keeps_own_signed_and_redacted_blocks_in_order(key):
    o = own(key)
    parts = (Reasoning("a", o, "SIG-A", "anthropic.signature"), Text("interim"),
             Reasoning("", o, "RED", "anthropic.redacted"), Reasoning("unsigned", o))
    pm = assistant_plan(turn(*parts), key)
    kinds = [(type(p).__name__, getattr(p, "blob", None)) for p in pm.parts]
    assert kinds == [("Reasoning", "SIG-A"), ("Text", None), ("Reasoning", "RED"), ("ToolCall", None)]
    assert [d.action for d in pm.decisions] == ["native", "native", "drop"]


def test_anthropic_drops_foreign_and_other_model_signatures():
    other_model = Reasoning("a", own("anthropic", "claude-opus-5"), "SIG", "anthropic.signature")
    bedrock = Reasoning("b", own("bedrock", MODEL), "SIG2", "anthropic.signature")
    pm = assistant_plan(turn(other_model, bedrock), "anthropic")
    assert not any(isinstance(p, Reasoning) for p in pm.parts)


@pytest.mark.parametrize("model,keeps_prior", [("claude-sonnet-4-5", False), ("claude-3-7-sonnet", False),
                                               ("claude-opus-5", True), ("claude-sonnet-4-6", True)])
def test_anthropic_prior_turn_thinking_follows_the_model(model, keeps_prior):
    o = own("anthropic", model)
    history = [Message.user("q1"), Message("assistant", (Reasoning("old", o, "S1", "anthropic.signature"), Text("a1"))),
               Message.user("q2"), Message("assistant", (Reasoning("new", o, "S2", "anthropic.signature"),
                                                         ToolCall("c", "t", "{}")))]
    plan = plan_replay(history, target("anthropic", model))
    first, second = (m for m in plan.messages if m.role == "assistant")
    assert any(isinstance(p, Reasoning) for p in first.parts) is keeps_prior
    assert any(isinstance(p, Reasoning) for p in second.parts)


def test_anthropic_thinking_is_turned_off_when_the_open_loop_has_only_foreign_thinking():
    history = turn(Reasoning("x", own("deepseek"), None, None))
    plan = plan_replay(history, target("anthropic"))
    assert plan.thinking is False and plan.notes


@pytest.mark.parametrize("model,policy", [("anthropic.claude-sonnet-4-6-v1:0", "signed"),
                                          ("deepseek.r1-v1:0", "strip"), ("openai.gpt-oss-120b-1:0", "unsigned")])
def test_bedrock_policy_per_model(model, policy):
    t = target("bedrock", model)
    assert t.route.policy == policy
    o = t.key
    history = [Message.user("q1"),
               Message("assistant", (Reasoning("prior", o, "SIG0", "anthropic.signature"), Text("a1"))),
               Message.user("q2"),
               Message("assistant", (Reasoning("loop", o, "SIG1", "anthropic.signature"),
                                     Reasoning("", o, "RED", "anthropic.redacted"), ToolCall("c", "t", "{}"))),
               Message("tool", (ToolResult("c", "r"),))]
    plan = plan_replay(history, t)
    prior, loop = (m for m in plan.messages if m.role == "assistant")
    sent = lambda m: [(p.text, p.blob) for p in m.parts if isinstance(p, Reasoning)]
    if policy == "signed":
        assert sent(prior) == [("prior", "SIG0")] and sent(loop) == [("loop", "SIG1"), ("", "RED")]
    elif policy == "strip":
        assert sent(prior) == [] and sent(loop) == [("loop", "SIG1"), ("", "RED")]
    else:
        assert sent(prior) == [("prior", None)] and sent(loop) == [("loop", "SIG1"), ("", "RED")]


def test_bedrock_never_sends_a_reasoning_only_assistant_turn():
    t = target("bedrock", "anthropic.claude-sonnet-5")
    history = [Message.user("q"), Message("assistant", (Reasoning("r", t.key, "S", "anthropic.signature"),))]
    pm = next(m for m in plan_replay(history, t).messages if m.role == "assistant")
    assert not any(isinstance(p, Reasoning) for p in pm.parts)


def test_gemini_signatures_go_back_and_foreign_calls_get_the_validator_skip():
    t = target("gemini", "gemini-3-pro")
    ownr = Reasoning("thought", t.key, native=NativeRecord(thought_signature="TXT", tool_signatures=(("call_1", "S1"),)))
    history = turn(ownr)
    pm = next(m for m in plan_replay(history, t).messages if m.role == "assistant")
    assert dict(pm.tool_signatures) == {"call_1": "S1"} and pm.thought_signature == "TXT"
    foreign = turn(Reasoning("x", own("copilot"), native=NATIVE_COPILOT))
    pm = next(m for m in plan_replay(foreign, t).messages if m.role == "assistant")
    assert dict(pm.tool_signatures) == {"call_1": GEMINI_SKIP_SIGNATURE} and pm.thought_signature is None


def test_responses_replays_only_own_encrypted_items():
    t = target("openai-responses", "gpt-5")
    mine = Reasoning("summary", t.key, "gAAAAmine", "openai.encrypted", item_id="rs_1")
    theirs = Reasoning("summary", own("xai-responses", "gpt-5"), "gAAAAtheirs", "openai.encrypted", item_id="rs_2")
    pm = next(m for m in plan_replay(turn(mine, theirs), t).messages if m.role == "assistant")
    assert [p.blob for p in pm.parts if isinstance(p, Reasoning)] == ["gAAAAmine"]


def test_learned_rejection_drops_fields_but_never_must_echo_rc():
    history = turn(Reasoning("t", own("openrouter")))
    pm = assistant_plan(history, "openrouter", learned=Learned(dropped=frozenset({R, RD})))
    assert set(pm.fields) == {RC}
    pm = next(m for m in plan_replay(turn(), target("deepseek"), Learned(dropped=frozenset({RC}))).messages
              if m.role == "assistant")
    assert pm.fields == {RC: PAD}


def test_switches_are_sent_whenever_thinking_is_on():
    assert plan_replay([], target("glm", "glm-4.7")).request_fields == {"thinking": {"type": "enabled", "clear_thinking": False}}
    assert plan_replay([], target("dashscope", "qwen3.7-plus")).request_fields == {"preserve_thinking": True,
                                                                                   "enable_thinking": True}
    assert plan_replay([], target("dashscope", "qwen-max")).request_fields == {}
    kimi = plan_replay([], target("kimi", "kimi-k2.6"), settings=Settings(effort="high")).request_fields
    assert kimi == {"thinking": {"type": "enabled", "keep": "all", "effort": "high"}}
    assert "reasoning_effort" not in kimi
    assert plan_replay([], target("vllm", "Qwen3.6-32B")).request_fields == {"chat_template_kwargs": {"preserve_thinking": True}}
    assert plan_replay([], target("glm", "glm-4.7"), settings=Settings(thinking=False)).request_fields == {
        "thinking": {"type": "disabled"}}
    assert plan_replay([], target("openai", "o4"), settings=Settings(effort="low")).request_fields == {"reasoning_effort": "low"}


def test_compaction_window_starts_at_the_latest_checkpoint():
    from hermes.core.messages import Compaction

    o = own("deepseek")
    history = [Message.user("old"), Message("assistant", (Reasoning("old thought", o), Text("a"))),
               Message("user", (Compaction("summary"),)), Message.user("new"),
               Message("assistant", (Reasoning("new thought", o), ToolCall("c", "t", "{}")))]
    plan = plan_replay(history, target("deepseek"))
    assert [m.index for m in plan.messages] == [2, 3, 4]
    assert plan.messages[-1].fields == {RC: "new thought"}
