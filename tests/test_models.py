"""Model profiles: one table of model facts, read by every wire, the estimator and compaction.

Unit checks pin the three places the old code disagreed with itself; the model facts that are
request rules run over real HTTP against emulators that enforce them; the last tests add a
model family and an OpenAI-compatible provider from ``routes.toml`` alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.agent import provider
from hermes.agent.compaction import context_budget
from hermes.agent.compactor import model_summarizer
from hermes.builder.estimate import basis_for
from hermes.core.errors import ConfigError, ProviderHTTPError
from hermes.core.messages import Message, Reasoning, Text, ToolCall, ToolResult
from hermes.replay import Settings, plan_replay
from hermes.routing.models import PROFILES, model_key, profile_for
from hermes.routing.resolve import load_table, resolve
from hermes.wire import ToolSpec, anthropic, bedrock

TOOLS = (ToolSpec("ls", "List files", {"type": "object", "properties": {"path": {"type": "string"}},
                                       "required": ["path"]}),)


def _send(emu: Any, key: str, model: str, history: list[Message], settings: Settings = Settings(), *,
          table: Any = None, tools: tuple[ToolSpec, ...] = TOOLS) -> tuple[provider.Exchange, dict[str, Any]]:
    resolved = resolve(key, emu.url(key), model, **({"table": table} if table is not None else {}))
    before = len(emu.requests(key))
    ex = provider.complete(resolved, history, tools=tools, settings=settings, api_key="test-key")
    return ex, emu.requests(key)[before:][-1]["body"]


# ----------------------------------------------------------------------------- matching


@pytest.mark.parametrize(("model", "key"), [
    ("anthropic/claude-sonnet-4.5", "claude-sonnet-4.5"),
    ("us.anthropic.claude-sonnet-4-20250514-v1:0", "us.anthropic.claude-sonnet-4"),
    ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
    ("models/gemini-2.5-pro", "gemini-2.5-pro"),
    ("gpt-4o-2024-08-06", "gpt-4o"),
    ("claude-3-5-sonnet-latest", "claude-3-5-sonnet"),
    ("gpt-oss:20b", "gpt-oss:20b"),
])
def test_model_key_drops_path_and_release_suffix(model: str, key: str) -> None:
    assert model_key(model) == key


# Every spelling of one Claude model gets one answer, on every wire (the old code had three).
CLAUDE = [
    # (ids, adaptive, prior turns)
    (("claude-opus-4-6", "claude-sonnet-4.6", "us.anthropic.claude-sonnet-4-6-v1:0", "anthropic/claude-opus-4.6"),
     True, "all"),
    (("claude-opus-4-10-20270101", "claude-haiku-5-5", "claude-fable-5-1", "claude-sonnet-5@20270101"), True, "all"),
    (("claude-sonnet-4-5-20250929", "anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-haiku-4-5"), False, "loop"),
    (("claude-sonnet-4", "claude-sonnet-4-20250514", "us.anthropic.claude-opus-4-20250514-v1:0",
      "claude-opus-4-1", "claude-3-7-sonnet-20250219"), False, "loop"),
    (("claude-opus-4-5", "claude-opus-4-5-20251101"), False, "all"),
]


@pytest.mark.parametrize(("models", "adaptive", "prior"), CLAUDE)
def test_claude_classification_agrees_on_anthropic_and_bedrock(models: tuple[str, ...], adaptive: bool,
                                                                prior: str) -> None:
    for model in models:
        direct = resolve("anthropic", None, model)
        aws = resolve("bedrock", None, model)
        assert direct.profile == aws.profile, model
        assert (direct.profile.thinking == "adaptive") is adaptive, model
        assert direct.route.prior_turns == aws.route.prior_turns == prior, model
        body = anthropic.to_wire(plan_replay([Message.user("q")], direct), settings=Settings(effort="high"))
        extra, _ = bedrock.thinking_fields(aws.profile, Settings(effort="high"), True)
        assert body["thinking"]["type"] == extra["thinking"]["type"] == ("adaptive" if adaptive else "enabled")


@pytest.mark.parametrize("effort", ["minimal", "low", "medium", "high", "xhigh", "max", None])
def test_one_budget_table_for_both_claude_wires(effort: str | None) -> None:
    model = "claude-sonnet-4-5"
    settings = Settings(effort=effort)
    body = anthropic.to_wire(plan_replay([Message.user("q")], resolve("anthropic", None, model)), settings=settings)
    extra, _ = bedrock.thinking_fields(resolve("bedrock", None, f"anthropic.{model}-v1:0").profile, settings, True)
    assert body["thinking"]["budget_tokens"] == extra["thinking"]["budget_tokens"]


def test_minimal_effort_is_the_smallest_budget(emulator: Any) -> None:
    """``--effort minimal`` used to give direct Anthropic 8000 tokens (more than ``low``)."""
    budgets = {}
    for effort in ("minimal", "low", "medium"):
        _, body = _send(emulator, "anthropic", "claude-sonnet-4-5", [Message.user(f"hi {effort}")],
                        Settings(effort=effort), tools=())
        budgets[effort] = body["thinking"]["budget_tokens"]
    assert budgets["minimal"] == 1024 < budgets["low"] < budgets["medium"]


def test_adaptive_effort_is_mapped_to_a_level_the_api_takes(emulator: Any) -> None:
    _, body = _send(emulator, "anthropic", "claude-opus-4-6", [Message.user("hi")], Settings(effort="minimal"),
                    tools=())
    assert body["thinking"] == {"type": "adaptive"} and body["output_config"] == {"effort": "low"}


def test_context_window_and_token_basis_come_from_the_profile() -> None:
    assert context_budget(resolve("openrouter", None, "google/gemini-2.5-pro")) == int(1_048_576 * 0.75)
    assert context_budget(resolve("bedrock", None, "us.anthropic.claude-opus-4-6-v1:0")) == 150_000
    assert context_budget(resolve("generic", "https://x.example", "unknown-model")) == 96_000
    assert basis_for(resolve("openrouter", None, "openai/gpt-5-mini")).encoding == "o200k_base"
    assert basis_for(resolve("bedrock", None, "us.anthropic.claude-opus-4-6-v1:0")).label == "ratio:cl100k"
    assert basis_for(resolve("openai-responses", None, "a-future-model")).encoding == "o200k_base"


# ----------------------------------------------------------------------------- Vertex


@pytest.mark.parametrize(("host", "model", "key"), [
    ("us-east5-aiplatform.googleapis.com", "claude-sonnet-4-5@20250929", "anthropic-vertex"),
    ("aiplatform.googleapis.com", "claude-opus-4-6", "anthropic-vertex"),
    ("us-east5-aiplatform.googleapis.com", "gemini-2.5-pro", "gemini-vertex"),
    ("europe-west4-aiplatform.googleapis.com", "gemini-3-pro-preview", "gemini-vertex"),
])
def test_vertex_hosts_resolve_to_the_vertex_rows(host: str, model: str, key: str) -> None:
    r = resolve(None, f"https://{host}/v1/projects/p/locations/l", model)
    assert r.route.key == key and r.route.variant == "vertex"


def test_a_row_named_vertex_is_not_vertex_unless_it_says_so(tmp_path: Path) -> None:
    """The URL shape follows the row's ``variant``, never a substring of its key."""
    from hermes.wire import gemini

    f = tmp_path / "routes.toml"
    f.write_text('[[route]]\nkey = "my-vertex-proxy"\nwire = "gemini"\nbase_url = "https://proxy.example/v1beta"\n'
                 '[[route]]\nkey = "corp-vertex"\nwire = "gemini"\nvariant = "vertex"\n'
                 'base_url = "https://gw.example/v1/projects/p/locations/l"\n')
    table = load_table(f)
    plain = gemini.endpoint(resolve("my-vertex-proxy", None, "gemini-2.5-pro", table=table), stream=False)[0]
    assert plain == "https://proxy.example/v1beta/models/gemini-2.5-pro:generateContent"
    vertex = gemini.endpoint(resolve("corp-vertex", None, "gemini-2.5-pro", table=table), stream=False)[0]
    assert vertex.endswith("/locations/l/publishers/google/models/gemini-2.5-pro:generateContent")


# ----------------------------------------------------------------------------- thinking off


@pytest.mark.parametrize(("key", "model", "off"), [
    ("glm", "glm-4.7-flash", {"thinking": {"type": "disabled"}}),
    ("kimi", "kimi-k2.6", {"thinking": {"type": "disabled"}}),
    ("dashscope", "qwen3.7-plus", {"enable_thinking": False}),
])
def test_thinking_off_is_said_where_the_model_thinks_by_default(emulator: Any, key: str, model: str,
                                                                 off: dict[str, Any]) -> None:
    on, _ = _send(emulator, key, model, [Message.user("ping")], tools=())
    assert on.response.message.reasoning, "the model thinks by default"
    ex, body = _send(emulator, key, model, [Message.user("ping")], Settings(thinking=False), tools=())
    assert {k: body[k] for k in off} == off
    assert not ex.response.message.reasoning


def test_compaction_summary_call_says_thinking_off(emulator: Any) -> None:
    resolved = resolve("glm", emulator.url("glm"), "glm-4.7-flash")
    before = len(emulator.requests("glm"))
    summary = model_summarizer(resolved, api_key="k")([Message.user("hello"), Message("assistant", (Text("hi"),))])
    body = emulator.requests("glm")[before]["body"]
    assert summary and body["thinking"] == {"type": "disabled"} and "reasoning_effort" not in body


def test_qwen3_default_off_models_are_told_to_think_next_to_the_keep_switch(emulator: Any) -> None:
    ex, body = _send(emulator, "dashscope", "qwen3-32b", [Message.user("ping")], tools=())
    assert body["enable_thinking"] is True and ex.response.message.reasoning
    _, body = _send(emulator, "dashscope", "qwen3.7-plus", [Message.user("ping")], tools=())
    assert body["enable_thinking"] is True and body["preserve_thinking"] is True


# ----------------------------------------------------------------------------- efforts


def test_glm5_gets_no_reasoning_effort(emulator: Any) -> None:
    ex, body = _send(emulator, "glm", "glm-5.1", [Message.user("ping")], Settings(effort="high"), tools=())
    assert "reasoning_effort" not in body and ex.response.message.reasoning
    # the emulator refuses it, as the rule says
    resolved = resolve("glm", emulator.url("glm"), "glm-5.1")
    with pytest.raises(ProviderHTTPError, match="Invalid API parameter"):
        provider.complete(resolved, [Message.user("x")], api_key="k", body_hook=lambda b: {**b, "reasoning_effort": "high"})


def test_kimi_effort_max_falls_back_to_the_plain_switch(emulator: Any) -> None:
    _, high = _send(emulator, "kimi", "kimi-k2.6", [Message.user("a")], Settings(effort="high"), tools=())
    assert high["thinking"] == {"type": "enabled", "keep": "all", "effort": "high"}
    ex, top = _send(emulator, "kimi", "kimi-k2.6", [Message.user("b")], Settings(effort="max"), tools=())
    assert top["thinking"] == {"type": "enabled", "keep": "all"} and ex.response.message.reasoning
    resolved = resolve("kimi", emulator.url("kimi"), "kimi-k2.6")
    with pytest.raises(ProviderHTTPError, match=r"thinking\.effort"):
        provider.complete(resolved, [Message.user("x")], api_key="k",
                          body_hook=lambda b: {**b, "thinking": {**b["thinking"], "effort": "max"}})


# ----------------------------------------------------------------------------- OpenRouter-format gateways


@pytest.mark.parametrize(("key", "model"), [("openrouter", "anthropic/claude-sonnet-4.5"),
                                            ("vercel", "google/gemini-3-pro-preview"), ("kilo", "openai/gpt-5.1")])
def test_gateways_are_asked_for_reasoning_the_documented_way(emulator: Any, key: str, model: str) -> None:
    ex, body = _send(emulator, key, model, [Message.user("ping")], tools=())
    assert body["reasoning"] == {"enabled": True} and ex.response.message.reasoning
    ex, body = _send(emulator, key, model, [Message.user("pong")], Settings(effort="high"), tools=())
    assert body["reasoning"] == {"enabled": True, "effort": "high"} and "reasoning_effort" not in body
    assert ex.response.message.reasoning
    # without the ask these models do not think at all (what hermes used to send)
    resolved = resolve(key, emulator.url(key), model)
    bare = provider.complete(resolved, [Message.user("x")], api_key="k",
                             body_hook=lambda b: {k: v for k, v in b.items() if k != "reasoning"})
    assert not bare.response.message.reasoning


# ----------------------------------------------------------------------------- Responses


def _two_turns(emu: Any, model: str, table: Any = None) -> tuple[list[Message], dict[str, Any]]:
    history = [Message.user("list the workspace")]
    ex, _ = _send(emu, "openai-responses", model, history, table=table)
    call = ex.response.message.tool_calls[0]
    history += [ex.response.message, Message("tool", (ToolResult(call.id, "a.txt", "ls"),))]
    ex, _ = _send(emu, "openai-responses", model, history, table=table)
    history += [ex.response.message, Message.user("and now?")]
    _, body = _send(emu, "openai-responses", model, history, table=table)
    return history, body


def test_gpt55_asks_for_all_turns_context(emulator: Any) -> None:
    _, body = _two_turns(emulator, "gpt-5.5")  # the emulator's loopback host is nobody's own API
    assert "context" not in body["reasoning"]
    _, body = _two_turns(emulator, "gpt-5.5", table=_as_openai("127.0.0.1"))
    assert body["reasoning"]["context"] == "all_turns"
    assert sum(1 for i in body["input"] if i.get("type") == "reasoning") == 2


def _as_openai(host: str) -> Any:
    """The built-in table with the all_turns rules also on ``host`` (the emulator stands in for OpenAI)."""
    from dataclasses import replace as _replace

    from hermes.routing.resolve import Table
    from hermes.routing.routes import ROUTES

    rows = [_replace(r, model_rules=tuple(_replace(m, hosts=(*m.hosts, host)) for m in r.model_rules))
            if r.key == "openai-responses" else r for r in ROUTES]
    return Table(rows)


@pytest.mark.parametrize(("model", "url", "asked"), [
    ("gpt-5.4", None, True), ("gpt-5.5-mini", None, True), ("gpt-6.1", None, True), ("gpt-5.12", None, True),
    ("gpt-5.2", None, False), ("o3", None, False),
    ("gpt-5.4", "https://relay.example.net/v1", False),
    ("gpt-6.1", "https://chatgpt.com/backend-api/codex", False),
    ("gpt-5.5", "https://eu.api.openai.com/v1", True),
])
def test_all_turns_follows_the_family_and_the_host(model: str, url: str | None, asked: bool) -> None:
    switches = resolve("openai-responses", url, model).route.switches
    assert (switches.get("reasoning", {}).get("context") == "all_turns") is asked


def test_o_series_prunes_earlier_turn_reasoning_and_takes_only_its_efforts(emulator: Any) -> None:
    _, body = _two_turns(emulator, "o4-mini")
    assert not [i for i in body["input"] if i.get("type") == "reasoning"], "o-series ignores them: not paid for"
    _, body = _send(emulator, "openai-responses", "o4-mini", [Message.user("q")], Settings(effort="minimal"))
    assert "effort" not in body["reasoning"]
    resolved = resolve("openai-responses", emulator.url("openai-responses"), "o4-mini")
    with pytest.raises(ProviderHTTPError, match="Supported values are: 'low', 'medium', and 'high'"):
        provider.complete(resolved, [Message.user("x")], api_key="k",
                          body_hook=lambda b: {**b, "reasoning": {**b["reasoning"], "effort": "minimal"}})


# ----------------------------------------------------------------------------- one row each


def test_a_model_family_with_its_own_budget_is_one_profile_row(tmp_path: Path, emulator: Any) -> None:
    f = tmp_path / "routes.toml"
    f.write_text('[[model]]\nmodels = ["claude-nimbus-*"]\nthinking = "budget"\ncontext_window = 500000\n'
                 'budgets = { default = 3000, high = 12000, minimal = 1100 }\n')
    table = load_table(f)
    resolved = resolve("anthropic", None, "claude-nimbus-1", table=table)
    assert resolved.profile.context_window == 500_000 and resolved.profile.prior_turns == ""
    assert profile_for("claude-nimbus-1", PROFILES).thinking == "budget"  # the built-in *claude* row
    for effort, budget in ((None, 3000), ("high", 12000), ("minimal", 1100)):
        _, body = _send(emulator, "anthropic", "claude-nimbus-1", [Message.user(f"n {effort}")],
                        Settings(effort=effort), table=table, tools=())
        assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert context_budget(resolved) == 375_000


def test_a_new_openai_compatible_provider_is_one_route_row(tmp_path: Path, emulator: Any) -> None:
    """``acme`` speaks like vLLM (``reasoning`` carrier, a keep switch): one row, nothing else."""
    f = tmp_path / "routes.toml"
    f.write_text('[[route]]\nkey = "acme"\nwire = "openai_chat"\nlabel = "Acme Inference"\n'
                 'hosts = ["llm.acme.example"]\ncarriers = ["reasoning"]\n'
                 'headers = { "x-acme-team" = "research" }\n'
                 '[route.switches]\nchat_template_kwargs = { preserve_thinking = true }\n'
                 '[route.thinking_off]\nchat_template_kwargs = { enable_thinking = false }\n')
    table = load_table(f)
    assert resolve(None, "https://eu.llm.acme.example/v1", "Qwen/Qwen3-32B", table=table).route.key == "acme"
    history = [Message.user("what is in the workspace? (acme)")]
    resolved = resolve("acme", emulator.url("vllm"), "Qwen/Qwen3-32B", table=table)
    before = len(emulator.requests("vllm"))
    ex = provider.complete(resolved, history, tools=TOOLS, api_key="k")
    turn = ex.response.message
    assert turn.reasoning and turn.reasoning[0].origin.provider == "acme"
    history += [turn, Message("tool", (ToolResult(turn.tool_calls[0].id, "a.txt", "ls"),))]
    provider.complete(resolved, history, tools=TOOLS, api_key="k")
    first, second = emulator.requests("vllm")[before:]
    assert first["body"]["chat_template_kwargs"] == {"preserve_thinking": True}
    assert first["headers"].get("x-acme-team") == "research"
    sent = [m for m in second["body"]["messages"] if m["role"] == "assistant"][-1]
    assert sent["reasoning"] == turn.reasoning[0].text and "reasoning_content" not in sent


@pytest.mark.parametrize(("content", "needle", "line"), [
    ('[[model]]\nthinking = "budget"\n', "needs 'models'", 1),
    ('[[route]]\nkey = "x"\nwire = "openai_chat"\n\n[[model]]\nmodels = "m*"\nthinking = "loud"\n', "thinking", 5),
    ('[[model]]\nmodels = "a*"\n[[model]]\nmodels = ["b*"]\ncontext_window = "big"\n', "non-negative integer", 3),
    ('[[model]]\nmodels = "a*"\nbudgets = { high = "lots" }\n', "effort = token count", 1),
    ('[[model]]\nmodels = "a*"\ncolour = "red"\n', "unknown field", 1),
    ('model = 3\n', "array of tables", 1),
])
def test_malformed_model_rows_name_file_and_line(tmp_path: Path, content: str, needle: str, line: int) -> None:
    f = tmp_path / "routes.toml"
    f.write_text(content)
    with pytest.raises(ConfigError) as e:
        load_table(f)
    assert needle in str(e.value) and str(e.value).startswith(f"{f}:{line}:")


def test_claude_40_gets_only_the_open_loops_thinking_on_both_wires() -> None:
    """docs/replay.md: Claude 4.0-4.5 (but Opus 4.5) keep only the open tool loop's thinking."""
    for key, model in (("anthropic", "claude-sonnet-4"), ("bedrock", "anthropic.claude-sonnet-4-20250514-v1:0")):
        t = resolve(key, None, model)
        o = t.key
        history = [Message.user("q1"), Message("assistant", (Reasoning("prior", o, "S0", anthropic.SIGNATURE),
                                                              Text("a1"))),
                   Message.user("q2"), Message("assistant", (Reasoning("loop", o, "S1", anthropic.SIGNATURE),
                                                              ToolCall("c", "ls", "{}"))),
                   Message("tool", (ToolResult("c", "r"),))]
        prior, loop = (m for m in plan_replay(history, t).messages if m.role == "assistant")
        assert not any(isinstance(p, Reasoning) for p in prior.parts), key
        assert any(isinstance(p, Reasoning) for p in loop.parts), key


@settings(max_examples=400, deadline=None)
@given(st.text("ab-.*?[]!", max_size=10), st.data())
def test_profile_rows_match_exactly_as_fnmatch(pattern: str, data: st.DataObject) -> None:
    """The plain-run check in front of ``fnmatchcase`` never turns a match away: keys the glob
    matches (drawn from its regex) and keys it may not."""
    from fnmatch import fnmatchcase, translate

    from hermes.routing.models import ProfileRow

    matching = st.from_regex(translate(pattern), fullmatch=True, alphabet="ab-.*?[]!")
    key = data.draw(matching | st.text("ab-.*?[]!", max_size=8))
    assert ProfileRow((pattern,)).matches(key) == fnmatchcase(key, pattern)
    assert ProfileRow(("z", pattern)).matches(key) == fnmatchcase(key, pattern)
