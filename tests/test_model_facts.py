"""Model facts of the newest models (docs/models.md, "Per-model values"), each over real HTTP
against an emulator that enforces the provider's rule with its real error body: a request
Hermes builds from the profile is accepted, and the value the old table sent is refused in
the provider's own words (so each test fails on a table without the fact).
"""

from __future__ import annotations

from typing import Any

import pytest

from hermes.agent import provider
from hermes.core.errors import ProviderHTTPError
from hermes.core.messages import Message
from hermes.replay import Settings
from hermes.routing.models import profile_for
from hermes.routing.resolve import resolve


def _send(emu: Any, key: str, model: str, settings: Settings) -> dict[str, Any]:
    """One real request; the body the emulator logged (raises the provider's error)."""
    before = len(emu.requests(key))
    provider.complete(resolve(key, emu.url(key), model), [Message.user("ping")], settings=settings,
                      api_key="test-key")
    return emu.requests(key)[before:][-1]["body"]


def _refusal(emu: Any, key: str, model: str, hook: Any) -> str:
    """The provider's error for the body Hermes builds, changed by ``hook`` (the old value)."""
    with pytest.raises(ProviderHTTPError) as err:
        provider.complete(resolve(key, emu.url(key), model), [Message.user("x")], api_key="test-key",
                          settings=Settings(effort="high"), body_hook=hook)
    return err.value.body


@pytest.mark.parametrize(("model", "effort", "sent"), [
    ("gpt-5.1", "minimal", None), ("gpt-5.1", "none", "none"), ("gpt-5.2", "xhigh", "xhigh"),
    ("gpt-5.1", "xhigh", None), ("gpt-5", "none", None), ("gpt-5-mini", "minimal", "minimal"),
])
def test_openai_effort_values_follow_the_model(emulator: Any, model: str, effort: str, sent: str | None) -> None:
    body = _send(emulator, "openai-responses", model, Settings(effort=effort))
    assert body["reasoning"].get("effort") == sent


def test_gpt51_refuses_minimal_in_openais_words(emulator: Any) -> None:
    text = _refusal(emulator, "openai-responses", "gpt-5.1",
                    lambda b: {**b, "reasoning": {**b["reasoning"], "effort": "minimal"}})
    assert ("Unsupported value: 'minimal' is not supported with the 'gpt-5.1' model. Supported values are: "
            "'none', 'low', 'medium', and 'high'.") in text


@pytest.mark.parametrize("model", ["grok-4", "grok-4-latest", "grok-code-fast-1"])
def test_grok_models_get_no_effort(emulator: Any, model: str) -> None:
    body = _send(emulator, "xai", model, Settings(effort="high"))
    assert "reasoning_effort" not in body
    text = _refusal(emulator, "xai", model, lambda b: {**b, "reasoning_effort": "high"})
    assert f"Model {model} does not support parameter reasoningEffort." in text


def test_grok_3_mini_keeps_its_two_efforts(emulator: Any) -> None:
    assert _send(emulator, "xai", "grok-3-mini", Settings(effort="high"))["reasoning_effort"] == "high"
    assert "reasoning_effort" not in _send(emulator, "xai", "grok-3-mini", Settings(effort="medium"))


@pytest.mark.parametrize(("model", "effort", "level"), [
    ("gemini-3-pro-preview", "medium", "high"), ("gemini-3-pro-preview", "minimal", "low"),
    ("gemini-3.1-pro-preview", "minimal", "low"), ("gemini-3.1-pro-preview", "medium", "medium"),
    ("gemini-3-flash-preview", "minimal", "minimal"),
])
def test_gemini_thinking_levels_per_model(emulator: Any, model: str, effort: str, level: str) -> None:
    body = _send(emulator, "gemini", model, Settings(effort=effort))
    assert body["generationConfig"]["thinkingConfig"]["thinkingLevel"] == level


def test_gemini_3_pro_refuses_medium_in_googles_words(emulator: Any) -> None:
    def medium(b: dict[str, Any]) -> dict[str, Any]:
        cfg = {**b["generationConfig"]["thinkingConfig"], "thinkingLevel": "medium"}
        return {**b, "generationConfig": {**b["generationConfig"], "thinkingConfig": cfg}}

    assert "Thinking level MEDIUM is not supported for this model." in _refusal(
        emulator, "gemini", "gemini-3-pro-preview", medium)


@pytest.mark.parametrize("model", ["claude-mythos-preview", "anthropic.claude-mythos-preview-v1:0"])
def test_claude_mythos_thinks_adaptively(model: str) -> None:
    assert profile_for(model).thinking == "adaptive"


# ----------------------------------------------------------------------------- Claude 5.x


def _claude(emu: Any, key: str, model: str, settings: Settings) -> tuple[Message, dict[str, Any]]:
    """One real request to an Anthropic-wire row; (the stored turn, the body as sent)."""
    before = len(emu.requests(key))
    ex = provider.complete(resolve(key, emu.url(key), model), [Message.user("ping")], settings=settings,
                           api_key="test-key")
    return ex.response.message, emu.requests(key)[before:][-1]["body"]


def _thinking(body: dict[str, Any]) -> Any:
    return (body.get("additionalModelRequestFields") or body).get("thinking")


@pytest.mark.usefixtures("aws_env")
@pytest.mark.parametrize(("key", "model", "least"), [
    ("bedrock", "us.anthropic.claude-opus-5-5-v1:0", "adaptive"),
    ("bedrock", "anthropic.claude-fable-5-1-v1:0", "adaptive"),
    ("bedrock", "anthropic.claude-sonnet-5-5-v1:0", "between_tools"),
    ("anthropic", "claude-sonnet-5-5", "between_tools"),
    ("anthropic", "claude-opus-5-5", "adaptive"),
])
def test_claude_5_that_cannot_stop_thinking_get_the_least_not_disabled(
        emulator: Any, key: str, model: str, least: str) -> None:
    """``--no-thinking`` (and compaction's summary call) on these used to send ``disabled``: a 400."""
    _, body = _claude(emulator, key, model, Settings(thinking=False))
    assert _thinking(body)["type"] == least
    if least == "adaptive":
        assert (body.get("additionalModelRequestFields") or body)["output_config"] == {"effort": "low"}


@pytest.mark.usefixtures("aws_env")
def test_claude_5_refuses_disabled_in_anthropics_words(emulator: Any) -> None:
    r = resolve("bedrock", emulator.url("bedrock"), "anthropic.claude-opus-5-5-v1:0")

    def disabled(b: dict[str, Any]) -> dict[str, Any]:
        extra = {**b["additionalModelRequestFields"], "thinking": {"type": "disabled"}}
        extra.pop("output_config", None)
        return {**b, "additionalModelRequestFields": extra}

    with pytest.raises(ProviderHTTPError) as err:
        provider.complete(r, [Message.user("x")], settings=Settings(thinking=False), body_hook=disabled)
    assert '"thinking.type.disabled" is not supported for this model. Use "thinking.type.adaptive"' in str(err.value)


@pytest.mark.parametrize("key", ["anthropic", "anthropic-vertex", "anthropic-foundry"])
def test_opus_5_thinking_off_is_said_not_omitted(emulator: Any, key: str) -> None:
    """On Opus 5+ an omitted ``thinking`` is adaptive thinking on: off must be explicit."""
    msg, body = _claude(emulator, key, "claude-opus-5", Settings(thinking=False))
    assert body["thinking"] == {"type": "disabled"}
    assert not msg.reasoning, "the model did not think"
    msg, body = _claude(emulator, key, "claude-opus-5", Settings())
    assert body["thinking"]["type"] == "adaptive" and msg.reasoning


@pytest.mark.parametrize("model", ["claude-opus-4-8", "claude-sonnet-4-5"])
def test_older_claude_thinking_off_is_still_by_omission(emulator: Any, model: str) -> None:
    msg, body = _claude(emulator, "anthropic", model, Settings(thinking=False))
    assert "thinking" not in body and not msg.reasoning


@pytest.mark.usefixtures("aws_env")
@pytest.mark.parametrize(("key", "model"), [("anthropic", "claude-mythos-preview"),
                                            ("bedrock", "anthropic.claude-mythos-preview-v1:0")])
def test_claude_mythos_is_asked_adaptively(emulator: Any, key: str, model: str) -> None:
    """A budget request (what the old table sent) is refused: ``thinking.type.enabled`` is not supported."""
    assert profile_for(model).thinking == "adaptive"
    msg, body = _claude(emulator, key, model, Settings(effort="high"))
    assert _thinking(body)["type"] == "adaptive" and msg.reasoning


# --- DashScope Qwen3: enable_thinking only streamed; non-hybrid models -----------------------------


def _dashscope(emu: Any, model: str, *, thinking: bool = True, hook: Any = None) -> tuple[Any, dict[str, Any]]:
    before = len(emu.requests("dashscope"))
    ex = provider.complete(resolve("dashscope", emu.url("dashscope"), model), [Message.user("ping")],
                           settings=Settings(thinking=thinking), stream=False, api_key="k", body_hook=hook)
    return ex, emu.requests("dashscope")[before:][-1]["body"]


def test_a_hybrid_qwen3_thinks_on_a_call_made_without_streaming(emulator: Any) -> None:
    ex, body = _dashscope(emulator, "qwen3-32b")
    assert body["enable_thinking"] is True and body["stream"] is True
    assert ex.response.message.reasoning, "the thinking came back"
    _, off = _dashscope(emulator, "qwen3-32b", thinking=False)
    assert off["enable_thinking"] is False and not off.get("stream")
    with pytest.raises(ProviderHTTPError) as err:
        _dashscope(emulator, "qwen3-32b", hook=lambda b: {k: v for k, v in b.items() if k not in ("stream",
                                                                                                   "stream_options")})
    assert "parameter.enable_thinking must be set to false for non-streaming calls" in err.value.body


@pytest.mark.parametrize("model", ["qwen3-235b-a22b-instruct-2507", "qwen3-coder-plus"])
def test_an_instruct_only_qwen3_gets_no_enable_thinking(emulator: Any, model: str) -> None:
    for thinking in (True, False):
        _, body = _dashscope(emulator, model, thinking=thinking)
        assert "enable_thinking" not in body
    with pytest.raises(ProviderHTTPError) as err:
        _dashscope(emulator, model, thinking=False, hook=lambda b: {**b, "enable_thinking": False})
    assert "current model does not support parameter `enable_thinking`" in err.value.body


def test_a_thinking_only_qwen3_is_never_told_to_stop(emulator: Any) -> None:
    _, body = _dashscope(emulator, "qwen3-235b-a22b-thinking-2507", thinking=False)
    assert body["enable_thinking"] is True and body["stream"] is True
    with pytest.raises(ProviderHTTPError) as err:
        _dashscope(emulator, "qwen3-235b-a22b-thinking-2507", thinking=False,
                   hook=lambda b: {**b, "enable_thinking": False})
    assert "The value of the enable_thinking parameter is restricted to True." in err.value.body
