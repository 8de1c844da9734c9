"""The Anthropic door with the official ``anthropic`` SDK, unmodified, in multi-step tool loops.

Through ``/<route>/v1/messages`` every request of every loop is accepted by the chat route's
emulator and each tool-call turn carries back exactly the reasoning the route returned (the
client only ever held it as a ``thinking`` block with a sealed signature); a restarted proxy
with an empty memory restores it from the signatures alone; an altered signature restores
nothing and the route's real error comes back in Anthropic's error shape.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import httpx
import orjson
import pytest
from _proxy import RESULT, running_proxy

from hermes.replay import PAD
from hermes.store import Store

TOOLS = [{"name": "list_files", "description": "List the files under a path.",
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]
QUESTIONS = ('what is in this repository? #call=list_files{"path": "."} #call=list_files{"path": "tests"}',
             "and which of those are tests?")
CASES = [("deepseek", "deepseek-v4-pro"), ("kimi", "kimi-k2.6"), ("glm", "glm-5.1"), ("gemini-openai", "gemini-3-pro-preview"),
         ("openrouter", "deepseek/deepseek-v4"), ("openrouter", "anthropic/claude-sonnet-4.5")]


def _client(base: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=base, api_key="sk-claude-client", max_retries=0)


def _step(client: anthropic.Anthropic, model: str, messages: list[dict[str, Any]], stream: bool) -> Any:
    kw: dict[str, Any] = {"model": model, "max_tokens": 2048, "messages": messages, "tools": TOOLS,
                          "system": "You are terse.", "thinking": {"type": "enabled", "budget_tokens": 1024}}
    if not stream:
        return client.messages.create(**kw)
    with client.messages.stream(**kw) as s:
        return s.get_final_message()


def _loop(client: anthropic.Anthropic, model: str, stream: bool, questions: tuple[str, ...] = QUESTIONS,
          messages: list[dict[str, Any]] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """The SDK's documented tool loop: the answer's ``content`` appended as it is."""
    messages = messages if messages is not None else []
    thoughts: list[str] = []
    for q in questions:
        messages.append({"role": "user", "content": q})
        for _ in range(5):
            resp = _step(client, model, messages, stream)
            messages.append({"role": "assistant", "content": resp.content})
            thoughts += [b.thinking for b in resp.content if b.type == "thinking"]
            calls = [b for b in resp.content if b.type == "tool_use"]
            if not calls:
                assert resp.stop_reason == "end_turn"
                break
            assert resp.stop_reason == "tool_use"
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": c.id, "content": RESULT} for c in calls]})
    return messages, thoughts


def _tool_turns(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["body"]["messages"] if m.get("role") == "assistant" and m.get("tool_calls")]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("route", "model"), CASES, ids=[f"{r}:{m.split('/')[0]}" for r, m in CASES])
def test_sdk_loop_through_the_messages_door(emulator: Any, proxy: Any, route: str, model: str, stream: bool) -> None:
    before = len(emulator.requests(route))
    _, thoughts = _loop(_client(proxy.url(route)), model, stream)
    proxied = emulator.requests(route)[before:]
    assert len(proxied) == 5, "three tool calls and two answers, one request each"
    assert all(r["path"].endswith("/chat/completions") for r in proxied)
    turns = _tool_turns(proxied[-1])
    assert len(turns) == 3
    # exactly the reasoning the route returned, in order, on every tool-call turn
    if route == "openrouter":  # signed reasoning_details, and their readable text as `reasoning`
        assert all(m.get("reasoning_details") for m in turns), turns
    sent = [m.get("reasoning_content") or m.get("reasoning") for m in turns]
    assert all(s and s != PAD for s in sent)
    assert sent == [t for t in thoughts if t in sent]
    assert set(sent) <= set(thoughts)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("route", "model"), [CASES[0], CASES[3]], ids=["deepseek", "gemini-openai"])
def test_restart_with_empty_memory_restores_from_signatures(emulator: Any, tmp_path: Path, route: str, model: str,
                                                            stream: bool) -> None:
    """Turn one through a proxy, turn two through another with its own empty memory but the
    deployment's key (``HERMES_HOME``): the signature alone restores the reasoning — Gemini's
    thought signatures on tool calls too (they arrive after the thinking block closed)."""
    with running_proxy(emulator) as a:
        messages, thoughts = _loop(_client(a.url(route)), model, stream, QUESTIONS[:1])
    first_sent = _tool_turns(emulator.requests(route)[-1])
    other = Store(tmp_path / "other.db")
    try:
        with running_proxy(emulator, store=other) as b:
            before = len(emulator.requests(route))
            _loop(_client(b.url(route)), model, stream, QUESTIONS[1:], messages)  # raises on a rejection
    finally:
        other.close()
    restored = _tool_turns(emulator.requests(route)[before])
    assert [m["reasoning_content"] for m in restored] == [t for t in thoughts if t][:2]
    assert restored == first_sent  # every carrier as the first proxy sent it, signatures included


def test_altered_signature_restores_nothing_and_the_error_is_anthropic_shaped(emulator: Any, tmp_path: Path) -> None:
    other = Store(tmp_path / "empty.db")  # no memory to fall back on
    try:
        with running_proxy(emulator) as a:
            messages, _ = _loop(_client(a.url("deepseek")), "deepseek-v4-pro", False, ("list the files",))
        for m in messages:
            if m["role"] == "assistant":
                m["content"] = [b.model_dump() for b in m["content"]]
                for b in m["content"]:
                    if b["type"] == "thinking":
                        b["signature"] = b["signature"][:-2] + ("AA" if not b["signature"].endswith("AA") else "BB")
        with running_proxy(emulator, store=other) as b:
            r = httpx.post(b.url("deepseek") + "/v1/messages", headers={"x-api-key": "sk-claude-client"},
                           json={"model": "deepseek-v4-pro", "max_tokens": 100, "tools": TOOLS,
                                 "messages": [*messages, {"role": "user", "content": "again"}]})
    finally:
        other.close()
    # the route's own fallback (the must-echo pad) keeps the request acceptable, never a stranger's text
    sent = emulator.requests("deepseek")[-1]["body"]["messages"]
    assert all(m.get("reasoning_content") in (None, PAD) for m in sent if m["role"] == "assistant")
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(("path", "body", "says"), [
    ("/v1/v1/messages", {"model": "m", "max_tokens": 5, "messages": []}, "/deepseek/v1/messages"),
    ("/v1/messages", {"model": "m", "input": "hi"}, "/deepseek/v1/responses"),
    ("/v1/messages", {"model": "m", "messages": [{"role": "tool", "content": "x", "tool_call_id": "c"}]},
     "/deepseek/chat/completions"),
    ("/chat/completions", {"model": "m", "max_tokens": 5, "system": "x",
                           "messages": [{"role": "user", "content": "x"}]}, "/deepseek/v1/messages"),
])
def test_another_familys_request_is_a_400_naming_the_right_url(proxy: Any, path: str, body: dict[str, Any],
                                                               says: str) -> None:
    r = httpx.post(proxy.url("deepseek") + path, json=body, headers={"x-api-key": "k"})
    assert r.status_code == 400, r.text
    assert says in r.text


def test_errors_are_anthropic_shaped_for_the_sdk(emulator: Any, proxy: Any, hermes_home: Path) -> None:
    emulator.state.set_control("deepseek", fault="429")
    with pytest.raises(anthropic.RateLimitError) as e:
        _client(proxy.url("deepseek")).messages.create(model="deepseek-v4-pro", max_tokens=10,
                                                        messages=[{"role": "user", "content": "hi"}])
    assert e.value.body["type"] == "error" and e.value.body["error"]["type"] == "rate_limit_error"
    records = [orjson.loads(line) for line in (hermes_home / "logs" / "hermes.log").read_text().splitlines()]
    assert [r["status"] for r in records if r.get("event") == "proxy"] == [429]  # the refusal is in the request log
    with pytest.raises(anthropic.BadRequestError, match="web_search"):
        _client(proxy.url("deepseek")).messages.create(
            model="deepseek-v4-pro", max_tokens=10, messages=[{"role": "user", "content": "hi"}],
            tools=[{"type": "web_search_20250305", "name": "web_search"}])


def test_count_tokens(proxy: Any) -> None:
    def count(n: int) -> int:
        return _client(proxy.url("deepseek")).messages.count_tokens(
            model="deepseek-v4-pro", messages=[{"role": "user", "content": "hello there, " * n}],
            tools=TOOLS).input_tokens

    small, big = count(50), count(500)
    assert 50 < small < 400 and 5 * small < big < 12 * small


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_anthropic_itself_is_relayed_with_its_signatures_untouched(emulator: Any, stream: bool) -> None:
    """The ``anthropic`` route: the Messages door relays to Anthropic as it is, so the real
    signatures go back byte for byte (the emulator verifies them, as Anthropic does)."""
    with running_proxy(emulator, anthropic=emulator.url("anthropic")) as px:
        before = len(emulator.requests("anthropic"))
        _, thoughts = _loop(_client(px.url("anthropic")), "claude-sonnet-4-5", stream, QUESTIONS[:1])
    sent = emulator.requests("anthropic")[before:]
    assert len(sent) == 3 and thoughts
    sigs = [b["signature"] for m in sent[-1]["body"]["messages"] if m["role"] == "assistant"
            for b in m["content"] if b["type"] == "thinking"]
    assert sigs and not any(s.startswith("hseal1") for s in sigs)


def test_vertex_is_refused_in_anthropics_shape(proxy: Any) -> None:
    r = httpx.post(proxy.url("anthropic-vertex") + "/v1/messages", headers={"x-api-key": "k"},
                   json={"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": []})
    assert r.status_code == 400 and r.json()["type"] == "error" and "anthropic wire" in r.text
