"""Claude facts of the Messages API (docs/models.md), each over real HTTP against the Anthropic
emulators, which behave as the API does: a Claude 4.x budget model thinks between tool calls
only with the interleaved-thinking beta; Opus 4.7+ return empty thinking text unless asked to
summarise it; Fable 5.1 / Opus 5.5 / Sonnet 5.5 refuse a replayed block whose prefix changed
unless the request opts into ``drop_block`` (with its beta header). Each test fails on a wire
that does not send what the fact needs.
"""

from __future__ import annotations

from typing import Any

import pytest

from hermes.agent import provider
from hermes.core.errors import ProviderHTTPError
from hermes.core.messages import Message, ToolResult
from hermes.replay import Settings
from hermes.routing.resolve import resolve
from hermes.wire import ToolSpec

TOOLS = (ToolSpec("list_files", "List files", {"type": "object", "properties": {"path": {"type": "string"}}}),)
ROUTES = ("anthropic", "anthropic-vertex", "anthropic-foundry")


def _loop(emu: Any, route: str, model: str, prompt: str = "look around #steps=2") -> list[Message]:
    """One user turn's tool loop to its answer; the history it leaves."""
    target = resolve(route, emu.url(route), model)
    history = [Message.system("You are terse."), Message.user(prompt)]
    for _ in range(5):
        ex = provider.complete(target, history, tools=TOOLS, settings=Settings(effort="high"), api_key="k")
        history.append(ex.response.message)
        if not ex.response.message.tool_calls:
            return history
        history.append(Message("tool", tuple(ToolResult(c.id, "a.txt b.txt", c.name)
                                             for c in ex.response.message.tool_calls)))
    raise AssertionError("the scripted model never answered")


@pytest.mark.parametrize("route", ROUTES)
def test_a_budget_model_thinks_between_tool_calls(emulator: Any, route: str) -> None:
    history = _loop(emulator, route, "claude-sonnet-4-5")
    thought = [bool(m.reasoning) for m in history if m.role == "assistant"]
    assert thought == [True, True, True], "every step of the loop thinks (interleaved-thinking beta)"
    sent = emulator.requests(route)[-1]["headers"]
    assert "interleaved-thinking-2025-05-14" in sent.get("anthropic-beta", "")


@pytest.mark.parametrize("model", ["claude-opus-4-7", "claude-opus-5", "claude-fable-5-1"])
def test_thinking_text_is_stored_where_the_default_display_omits_it(emulator: Any, model: str) -> None:
    history = _loop(emulator, "anthropic", model, "hello")
    assert all(p.text for m in history if m.role == "assistant" for p in m.reasoning)
    # the emulator's default, as the API's: without "display" the text is empty
    target = resolve("anthropic", emulator.url("anthropic"), model)

    def bare(b: dict[str, Any]) -> dict[str, Any]:
        return {**b, "thinking": {k: v for k, v in b["thinking"].items() if k != "display"}}

    ex = provider.complete(target, [Message.user("hello")], settings=Settings(effort="high"), api_key="k",
                           body_hook=bare)
    assert [p.text for p in ex.response.message.reasoning] == [""]


def _rewritten(history: list[Message]) -> list[Message]:
    """The history as compaction leaves it: the turns before the kept ones changed."""
    return [history[0], Message.user("Summary of earlier turns: the user asked to look around."), *history[2:],
            Message.user("and now?")]


@pytest.mark.parametrize("route", ROUTES)
def test_a_rewritten_prefix_drops_the_blocks_not_the_request(emulator: Any, route: str) -> None:
    model = "claude-fable-5-1"
    history = _rewritten(_loop(emulator, route, model))
    target = resolve(route, emulator.url(route), model)
    n = len(emulator.requests(route))
    ex = provider.complete(target, history, tools=TOOLS, settings=Settings(effort="high"), api_key="k")
    assert ex.response.message.text, "answered on the first request"
    sent = emulator.requests(route)[n:]
    assert len(sent) == 1
    assert sent[0]["body"]["thinking"]["block_binding"] == {"prefix_mismatch_behavior": "drop_block"}
    assert "thinking-binding-controls-2026-08-01" in sent[0]["headers"]["anthropic-beta"]
    assert any(b["type"] == "thinking" for m in sent[0]["body"]["messages"] if m["role"] == "assistant"
               for b in m["content"]), "the blocks still go back; the API drops the unbound ones"

    def unbound(b: dict[str, Any]) -> dict[str, Any]:
        return {**b, "thinking": {k: v for k, v in b["thinking"].items() if k != "block_binding"}}

    with pytest.raises(ProviderHTTPError) as err:
        provider.complete(target, history, tools=TOOLS, settings=Settings(effort="high"), api_key="k",
                          body_hook=unbound)
    assert ("Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the "
            'block, or set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".') in str(err.value)


def test_an_unchanged_prefix_keeps_every_block(emulator: Any) -> None:
    history = [*_loop(emulator, "anthropic", "claude-opus-5-5"), Message.user("and now?")]
    target = resolve("anthropic", emulator.url("anthropic"), "claude-opus-5-5")
    n = len(emulator.requests("anthropic"))
    ex = provider.complete(target, history, tools=TOOLS, settings=Settings(effort="high"), api_key="k",
                           body_hook=lambda b: {**b, "thinking": {"type": "adaptive"}})
    assert ex.response.message.text and len(emulator.requests("anthropic")[n:]) == 1


@pytest.mark.usefixtures("aws_env")
def test_bedrock_a_rewritten_prefix_drops_the_blocks_not_the_request(emulator: Any) -> None:
    """Bedrock runs Fable 5.1's prefix check too (AWS's "Preserved thinking" page): the opt-in
    rides in ``additionalModelRequestFields``, its beta in ``anthropic_beta``."""
    model = "us.anthropic.claude-fable-5-1-v1:0"
    history = _rewritten(_loop(emulator, "bedrock", model))
    target = resolve("bedrock", emulator.url("bedrock"), model)
    n = len(emulator.requests("bedrock"))
    ex = provider.complete(target, history, tools=TOOLS, settings=Settings(effort="high"), api_key="k")
    assert ex.response.message.parts, "answered on the first request"
    sent = emulator.requests("bedrock")[n:]
    assert len(sent) == 1
    extra = sent[0]["body"]["additionalModelRequestFields"]
    assert extra["thinking"]["block_binding"] == {"prefix_mismatch_behavior": "drop_block"}
    assert "reasoningContent" in sent[0]["body"]["messages"][1]["content"][0], "the blocks still go back"

    def unbound(b: dict[str, Any]) -> dict[str, Any]:
        thinking = {k: v for k, v in b["additionalModelRequestFields"]["thinking"].items() if k != "block_binding"}
        return {**b, "additionalModelRequestFields": {**b["additionalModelRequestFields"], "thinking": thinking}}

    with pytest.raises(ProviderHTTPError) as err:
        provider.complete(target, history, tools=TOOLS, settings=Settings(effort="high"), api_key="k",
                          body_hook=unbound)
    assert err.value.status == 400
    assert ("messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different "
            "conversation.") in str(err.value)


@pytest.mark.usefixtures("aws_env")
def test_bedrock_an_unchanged_prefix_keeps_every_block(emulator: Any) -> None:
    model = "us.anthropic.claude-fable-5-1-v1:0"
    history = [*_loop(emulator, "bedrock", model), Message.user("and now?")]
    target = resolve("bedrock", emulator.url("bedrock"), model)

    def unbound(b: dict[str, Any]) -> dict[str, Any]:
        return {**b, "additionalModelRequestFields": {"thinking": {"type": "adaptive"}}}

    ex = provider.complete(target, history, tools=TOOLS, settings=Settings(effort="high"), api_key="k",
                           body_hook=unbound)
    assert ex.response.message.parts


def test_bedrock_asks_the_same_of_a_prefix_bound_model() -> None:
    from hermes.wire.bedrock import thinking_fields

    target = resolve("bedrock", None, "anthropic.claude-fable-5-1-v1:0")
    extra, _ = thinking_fields(target.profile, Settings(effort="high"), True)
    assert extra["thinking"]["block_binding"] == {"prefix_mismatch_behavior": "drop_block"}
    assert extra["anthropic_beta"] == ["thinking-binding-controls-2026-08-01"]


@pytest.mark.parametrize(("model", "earlier"), [("claude-haiku-5", False), ("claude-haiku-5-5", True)])
def test_a_haiku_before_5_5_gets_only_the_open_loops_thinking(emulator: Any, model: str, earlier: bool) -> None:
    """Haiku keeps earlier turns' thinking from 5.5 (the reference agent's keep table; Anthropic's
    Haiku 5.5 page lists its changes against Haiku 4.5): an earlier Haiku's prior turns are pruned."""
    history = [*_loop(emulator, "anthropic", model), Message.user("and now? #steps=1")]
    target = resolve("anthropic", emulator.url("anthropic"), model)
    n = len(emulator.requests("anthropic"))
    provider.complete(target, history, tools=TOOLS, settings=Settings(effort="high"), api_key="k")
    sent = emulator.requests("anthropic")[n]["body"]["messages"]
    prior = [b for m in sent if m["role"] == "assistant" for b in m["content"] if b["type"] == "thinking"]
    assert bool(prior) is earlier
