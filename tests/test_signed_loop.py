"""``signed_loop``: the Messages API's open-loop thinking rule is a route-row field, not a wire name.

A user's own Anthropic-wire row from ``routes.toml`` gets the rule by saying ``signed_loop =
true`` (as the built-in Anthropic and Bedrock rows do) and does not without it. Over real
loopback HTTP: the emulator answers with the real 400 when the rule is missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.agent import provider
from hermes.core.errors import ProviderHTTPError
from hermes.core.messages import Message, Reasoning, RouteKey, ToolCall, ToolResult
from hermes.emulate import Emulator
from hermes.replay import Settings, plan_replay
from hermes.routing.resolve import Resolved, load_table, resolve
from hermes.routing.routes import ROUTES
from hermes.wire import ToolSpec

TOOLS = (ToolSpec("list_files", "List files", {"type": "object", "properties": {"path": {"type": "string"}}}),)
MODEL = "claude-opus-4-6"
ROW = ('[[route]]\nkey = "corp-claude"\nwire = "anthropic"\nhosts = ["claude.corp.example"]\n'
       'policy = "signed"\nblob_kinds = ["anthropic.signature", "anthropic.redacted"]\n'
       'tool_ids = "anthropic"\nauth = "x-api-key"\n')


def _target(tmp_path: Path, emulator: Emulator, extra: str) -> Resolved:
    f = tmp_path / "routes.toml"
    f.write_text(ROW + extra)
    return resolve("corp-claude", emulator.url("anthropic"), MODEL, table=load_table(f))


def _loop_from_another_route() -> list[Message]:
    """An open tool loop whose tool turn was answered on DeepSeek: no block this row may receive."""
    ds = RouteKey("deepseek", "api.deepseek.com", "deepseek-reasoner", "openai_chat")
    return [
        Message.user("Check it"),
        Message("assistant", (Reasoning("deepseek thought", ds), ToolCall("call_9", "list_files", '{"path": "."}'))),
        Message("tool", (ToolResult("call_9", "a.txt", "list_files"),)),
    ]


def test_built_in_rows_that_need_the_rule_say_so() -> None:
    assert {r.key for r in ROUTES if r.signed_loop} == {"anthropic", "anthropic-vertex", "anthropic-foundry", "bedrock"}


def test_a_custom_row_with_signed_loop_turns_thinking_off_for_a_foreign_loop(tmp_path: Path,
                                                                            emulator: Emulator) -> None:
    target = _target(tmp_path, emulator, "signed_loop = true\n")
    assert target.route.signed_loop and target.route.source == str(tmp_path / "routes.toml")
    ex = provider.complete(target, _loop_from_another_route(), tools=TOOLS, api_key="test")
    assert not ex.plan.thinking and "thinking" not in ex.body
    assert any("thinking off for this request" in n for n in ex.plan.notes)
    assert ex.response.finish_reason == "end_turn"


def test_the_same_row_without_it_sends_thinking_and_gets_the_real_400(tmp_path: Path, emulator: Emulator) -> None:
    target = _target(tmp_path, emulator, "")
    assert not target.route.signed_loop
    with pytest.raises(ProviderHTTPError) as exc:
        provider.complete(target, _loop_from_another_route(), tools=TOOLS, api_key="test")
    assert exc.value.status == 400
    assert "Expected `thinking` or `redacted_thinking`" in exc.value.json()["error"]["message"]


@pytest.mark.parametrize(("extra", "dropped"), [("signed_loop = true\n", True), ("", False)])
def test_thinking_off_drops_own_blocks_only_with_signed_loop(tmp_path: Path, emulator: Emulator,
                                                             extra: str, dropped: bool) -> None:
    target = _target(tmp_path, emulator, extra)
    history = [Message.user("Look #steps=1")]
    first = provider.complete(target, history, tools=TOOLS, api_key="test").response.message
    assert first.reasoning and first.tool_calls  # the row's own signed thinking
    call = first.tool_calls[0]
    history += [first, Message("tool", (ToolResult(call.id, "ok", call.name),))]
    plan = plan_replay(history, target, settings=Settings(thinking=False))
    sent = [p for pm in plan.messages for p in pm.parts if isinstance(p, Reasoning)]
    assert (sent == []) is dropped
    drops = [d for pm in plan.messages for d in pm.decisions if d.reason == "thinking is off for this request"]
    assert bool(drops) is dropped
