"""``hermes proxy``'s Messages door on the vendors' Anthropic-compatible routes: relayed under their rules.

A Messages history continued from Claude (signed and redacted thinking, ``cache_control`` on a
block) and from a client that kept no thinking on a tool turn reaches DeepSeek's Anthropic API
through ``/deepseek-anthropic`` with readable unsigned blocks only, a pad on the bare tool turn,
and is accepted — sent straight to the emulator, the same body is DeepSeek's 400. Streamed and not.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from _proxy import running_proxy

from hermes.emulate.anthropic_rules import mint_redacted, mint_signature
from hermes.replay import PAD

MODEL = "deepseek-v4-pro"
VENDORS = ("deepseek-anthropic", "kimi-anthropic", "mimo-anthropic", "minimax-anthropic")


@pytest.fixture(scope="module")
def px(emulator: Any) -> Iterator[Any]:
    with running_proxy(emulator, **{r: emulator.url(r) for r in VENDORS}) as p:
        yield p


def _history(emulator: Any) -> list[dict[str, Any]]:
    claude = "I should read a first."
    return [
        {"role": "user", "content": "read a, then b"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": claude, "signature": mint_signature(emulator.state, "claude-sonnet-4-5", claude),
             "cache_control": {"type": "ephemeral"}},
            {"type": "redacted_thinking", "data": mint_redacted(emulator.state, "claude-sonnet-4-5")},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "A"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_2", "name": "read_file",
                                           "input": {"path": "b"}}]},  # a client that kept no thinking
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "B"}]},
    ]


def _post(url: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{url}/v1/messages", json=body, timeout=30,
                      headers={"x-api-key": "sk-client", "anthropic-version": "2023-06-01"})


@pytest.mark.parametrize("stream", [False, True])
def test_a_history_from_claude_reaches_deepseek_unsigned_and_padded(emulator: Any, px: Any, stream: bool) -> None:
    body = {"model": MODEL, "max_tokens": 2000, "messages": _history(emulator), "stream": stream,
            "tools": [{"name": "read_file", "input_schema": {"type": "object"}}]}
    direct = _post(emulator.url("deepseek-anthropic"), body)  # the schema refuses cache_control on thinking
    assert direct.status_code == 400 and "cache_control" in direct.json()["error"]["message"]
    plain = [dict(m) for m in body["messages"]]
    plain[1] = {**plain[1], "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in plain[1]["content"]]}
    direct = _post(emulator.url("deepseek-anthropic"), {**body, "messages": plain})
    assert direct.status_code == 400 and direct.json()["error"]["message"] == \
        "The `content[].thinking` in the thinking mode must be passed back to the API."
    before = len(emulator.requests("deepseek-anthropic"))
    r = _post(px.url("deepseek-anthropic"), body)
    assert r.status_code == 200, r.text
    if stream:
        assert "event: message_stop" in r.text
    else:
        assert r.json()["content"][0]["type"] == "thinking"
    sent = emulator.requests("deepseek-anthropic")[before]["body"]["messages"]
    first, second = sent[1]["content"], sent[3]["content"]
    assert first[0] == {"type": "thinking", "thinking": "I should read a first."}  # no signature, no cache_control
    assert [b["type"] for b in first] == ["thinking", "tool_use"]  # redacted_thinking left out
    assert second[0] == {"type": "thinking", "thinking": PAD}
    assert sent[0] == body["messages"][0] and sent[2] == body["messages"][2]


def test_deepseeks_own_blocks_come_back_as_the_client_sent_them_text_and_all(emulator: Any, px: Any) -> None:
    """A loop through the proxy as Claude Code runs it: the client sends DeepSeek's own blocks
    back; their text reaches DeepSeek unchanged (nothing to seal: the thinking is readable)."""
    tools = [{"name": "read_file", "input_schema": {"type": "object"}}]
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "#steps=2 read twice"}]
    for _ in range(3):
        r = _post(px.url("deepseek-anthropic"), {"model": MODEL, "max_tokens": 2000, "messages": msgs, "tools": tools})
        assert r.status_code == 200, r.text
        answer = r.json()
        msgs.append({"role": "assistant", "content": answer["content"]})
        calls = [b for b in answer["content"] if b["type"] == "tool_use"]
        if not calls:
            break
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": c["id"], "content": "ok"}
                                                 for c in calls]})
    assert answer["stop_reason"] == "end_turn"
    last = emulator.requests("deepseek-anthropic")[-1]["body"]["messages"]
    got = [b["thinking"] for m in last if m["role"] == "assistant" for b in m["content"] if b["type"] == "thinking"]
    kept = [b["thinking"] for m in msgs[:-1] if m["role"] == "assistant" for b in m["content"] if b["type"] == "thinking"]
    assert got == kept and len(got) == 2 and all(t.strip() for t in got)


def test_kimi_k2_7_code_is_not_sent_thinking_off(emulator: Any, px: Any) -> None:
    """Claude Code's sub-agents send ``thinking: disabled``; kimi-k2.7-code refuses it
    (MoonshotAI/Kimi-K2 issue 141). Through the proxy the switch is left out."""
    body = {"model": "kimi-k2.7-code", "max_tokens": 100, "thinking": {"type": "disabled"},
            "messages": [{"role": "user", "content": "hi"}]}
    assert _post(emulator.url("kimi-anthropic"), body).status_code == 400
    before = len(emulator.requests("kimi-anthropic"))
    assert _post(px.url("kimi-anthropic"), body).status_code == 200
    assert "thinking" not in emulator.requests("kimi-anthropic")[before]["body"]
    other = {**body, "model": "kimi-k2.6"}  # a model that takes it keeps it
    assert _post(px.url("kimi-anthropic"), other).status_code == 200
    assert emulator.requests("kimi-anthropic")[-1]["body"]["thinking"] == {"type": "disabled"}


def test_minimax_gets_its_own_signed_blocks_back_as_they_came(emulator: Any, px: Any) -> None:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "read it"}]
    tools = [{"name": "read_file", "input_schema": {"type": "object"}}]
    r = _post(px.url("minimax-anthropic"), {"model": "MiniMax-M3", "max_tokens": 2000, "messages": msgs, "tools": tools})
    answer = r.json()
    call = next(b for b in answer["content"] if b["type"] == "tool_use")
    msgs += [{"role": "assistant", "content": answer["content"]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "ok"}]}]
    assert _post(px.url("minimax-anthropic"), {"model": "MiniMax-M3", "max_tokens": 2000, "messages": msgs,
                                               "tools": tools}).status_code == 200
    assert emulator.requests("minimax-anthropic")[-1]["body"]["messages"][1]["content"] == answer["content"]
