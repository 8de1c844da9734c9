"""The vendors' own Anthropic-compatible endpoints (DeepSeek, Kimi, MiMo, MiniMax) as routes.

Their base URLs (``https://api.deepseek.com/anthropic`` ...) pick the Anthropic-wire row, not
the chat one; their emulators refuse a tool turn without its thinking with the vendor's own
400; and ``hermes chat`` runs a tool loop there and switches to and from the chat-wire DeepSeek
and Anthropic in one session, each turn's reasoning going back as the route takes it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from hermes.emulate.anthropic_rules import mint_signature
from hermes.routing.resolve import resolve

TOOL_TURN = [{"role": "user", "content": "read it"},
             {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file",
                                                "input": {"path": "a"}}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}]


@pytest.mark.parametrize(("url", "key"), [
    ("https://api.deepseek.com/anthropic", "deepseek-anthropic"), ("https://api.deepseek.com/anthropic/", "deepseek-anthropic"),
    ("https://api.deepseek.com", "deepseek"), ("https://api.deepseek.com/v1", "deepseek"),
    ("https://api.moonshot.ai/anthropic", "kimi-anthropic"), ("https://api.moonshot.cn/anthropic", "kimi-anthropic"),
    ("https://api.kimi.com/coding", "kimi-anthropic"), ("https://api.kimi.com/coding/v1", "kimi"),
    ("https://api.moonshot.ai/v1", "kimi"), ("https://api.xiaomimimo.com/anthropic", "mimo-anthropic"),
    ("https://token-plan-cn.xiaomimimo.com/anthropic", "mimo-anthropic"), ("https://api.xiaomimimo.com/v1", "mimo"),
    ("https://api.minimax.io/anthropic", "minimax-anthropic"), ("https://api.minimaxi.com/anthropic", "minimax-anthropic"),
    ("https://api.minimax.io/v1", "minimax"), ("https://api.deepseek.com/anthropicx", "deepseek"),
])
def test_a_vendor_anthropic_base_url_picks_the_anthropic_wire_row(url: str, key: str) -> None:
    r = resolve(None, url, "m")
    assert r.route.key == key and r.route.wire == ("anthropic" if key.endswith("-anthropic") else "openai_chat")


def test_a_named_chat_row_with_its_vendors_anthropic_url_is_that_api() -> None:
    """The reference agent's users write ``provider: deepseek`` with the /anthropic base URL
    (hermes-agent issue 22313): that is DeepSeek's Anthropic API, not chat completions there."""
    r = resolve("deepseek", "https://api.deepseek.com/anthropic", "deepseek-v4-pro")
    assert r.route.key == "deepseek-anthropic" and any("other API" in w for w in r.why)
    assert not any("confused with 'deepseek-anthropic'" in w for w in r.why)  # it is the row chosen
    assert resolve("kimi", "https://api.kimi.com/coding/v1", "kimi-k2.6").route.key == "kimi"
    assert resolve("deepseek", "http://127.0.0.1:9/anthropic", "m").route.key == "deepseek"  # not its host


def _post(emulator: Any, name: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{emulator.url(name)}/v1/messages", json={"max_tokens": 100, **body},
                      headers={"x-api-key": "k", "anthropic-version": "2023-06-01"}, timeout=10)


@pytest.mark.parametrize(("name", "model", "error"), [
    ("deepseek-anthropic", "deepseek-v4-pro", {"error": {
        "message": "The `content[].thinking` in the thinking mode must be passed back to the API.",
        "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}}),
    ("kimi-anthropic", "kimi-k2.6", {"error": {
        "message": "thinking is enabled but reasoning_content is missing in assistant tool call message at index 1",
        "type": "invalid_request_error", "param": None, "code": None}}),
    ("mimo-anthropic", "mimo-v2.5-pro", {"error": {
        "message": "Param Incorrect", "type": "invalid_request_error",
        "param": "The reasoning_content in the thinking mode must be passed back to the API.", "code": "400"}}),
])
def test_a_tool_turn_without_its_thinking_gets_the_vendors_400(emulator: Any, name: str, model: str,
                                                                error: dict[str, Any]) -> None:
    r = _post(emulator, name, {"model": model, "messages": TOOL_TURN})
    assert (r.status_code, r.json()) == (400, error)
    # thinking off: nothing to pass back
    assert _post(emulator, name, {"model": model, "messages": TOOL_TURN, "thinking": {"type": "disabled"}}).status_code == 200


def test_unsigned_thinking_is_taken_and_a_foreign_signature_is_ignored(emulator: Any) -> None:
    """The vendors read a thinking block's text, never its signature (DeepSeek signs with the
    message id): an unsigned block, or one carrying Anthropic's signature, is accepted."""
    unsigned = [dict(m) for m in TOOL_TURN]
    unsigned[1] = {"role": "assistant", "content": [{"type": "thinking", "thinking": "I will read a."},
                                                    *TOOL_TURN[1]["content"]]}
    r = _post(emulator, "deepseek-anthropic", {"model": "deepseek-v4-pro", "messages": unsigned})
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["content"][0]["signature"] == answer["id"]  # DeepSeek's own: the message id
    claude = mint_signature(emulator.state, "claude-sonnet-4-5", "I will read a.")
    unsigned[1]["content"][0]["signature"] = claude
    assert _post(emulator, "deepseek-anthropic", {"model": "deepseek-v4-pro", "messages": unsigned}).status_code == 200
    # MiniMax has no must-echo refusal
    assert _post(emulator, "minimax-anthropic", {"model": "MiniMax-M3", "messages": TOOL_TURN}).status_code == 200


def test_kimi_k2_7_code_refuses_thinking_off(emulator: Any) -> None:
    """MoonshotAI/Kimi-K2 issue 141: Claude Code's sub-agents sent thinking off and got this 400."""
    r = _post(emulator, "kimi-anthropic", {"model": "kimi-k2.7-code", "thinking": {"type": "disabled"},
                                           "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 400 and r.json()["error"]["message"] == \
        "invalid thinking: only type=enabled is allowed for this model"


def _chat(home: Path, emulator: Any, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HERMES_HOME=str(home), HERMES_EMULATE=emulator.root)
    return subprocess.run([sys.executable, "-m", "hermes", "chat", "--json", *args], capture_output=True,
                          text=True, env=env, timeout=120, cwd=home.parent)


def _messages(emulator: Any, name: str, before: int) -> list[dict[str, Any]]:
    return [q["body"] for q in emulator.requests(name)[before:]]


def test_chat_switches_between_claude_chat_deepseek_and_deepseek_anthropic(emulator: Any, hermes_home: Path) -> None:
    """One session: Claude (signed thinking), DeepSeek's chat API, DeepSeek's Anthropic API, then
    chat again. On the Anthropic API every earlier tool turn carries a thinking block — Claude's
    as unsigned text, the chat turn's ``reasoning_content`` as unsigned text, DeepSeek's own
    block with its own signature — and no Anthropic signature; back on chat, the Anthropic
    API's turn goes as ``reasoning_content``."""
    (hermes_home.parent / "a.txt").write_text("hello\n")
    steps = [("anthropic", "claude-sonnet-4-5"), ("deepseek", "deepseek-v4-pro"),
             ("deepseek-anthropic", "deepseek-v4-pro"), ("deepseek", "deepseek-v4-pro")]
    before = {n: len(emulator.requests(n)) for n, _ in steps}
    for n, (route, model) in enumerate(steps):
        r = _chat(hermes_home, emulator, *(["-c"] if n else []), "-q", f"#steps=1 turn {n}", "-p", route, "-m", model)
        assert r.returncode == 0, r.stderr[-2000:]
        assert orjson.loads(r.stdout)["answer"].startswith(f"Done ({model})")
    sent = _messages(emulator, "deepseek-anthropic", before["deepseek-anthropic"])
    assert len(sent) == 2
    tool_turns = [m["content"] for m in sent[-1]["messages"] if m["role"] == "assistant"
                  and any(b["type"] == "tool_use" for b in m["content"])]
    assert len(tool_turns) == 3
    firsts = [t[0] for t in tool_turns]
    assert all(b["type"] == "thinking" and b["thinking"].startswith("The user asked: '#steps=1 turn")
               for b in firsts), firsts
    assert "signature" not in firsts[0] and "signature" not in firsts[1]  # Claude's and the chat turn's
    own = firsts[2]["signature"]
    answers = [q for q in emulator.requests("deepseek-anthropic")[before["deepseek-anthropic"]:]]
    assert own and len(own) == 36 and answers  # DeepSeek's own (a UUID), as it came
    signatures = [b.get("signature") for q in sent for m in q["messages"] if m["role"] == "assistant"
                  for b in m["content"] if b["type"] == "thinking" and "signature" in b]
    assert not any(s.startswith("Es") for s in signatures)  # no Anthropic signature reaches DeepSeek
    back = _messages(emulator, "deepseek", before["deepseek"])[-1]["messages"]
    rc = [m.get("reasoning_content") for m in back if m["role"] == "assistant" and m.get("tool_calls")]
    assert rc[2] == firsts[2]["thinking"]  # the Anthropic API's turn, as reasoning_content
