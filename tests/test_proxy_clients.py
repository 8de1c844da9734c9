"""Real client libraries that drop reasoning, unmodified, in multi-step tool loops.

Through ``hermes proxy`` every request of every loop is accepted and carries back the
reasoning the route returned; sent directly to the same emulators, the same loops fail with
the providers' real errors (DeepSeek, Kimi, Gemini 3) or silently lose the reasoning
(OpenRouter, GLM, Copilot). Clients: the official ``openai`` SDK used the common way
(``model_dump(include={"role", "content", "tool_calls"})``, or deltas summed by hand when
streaming) and ``langchain-openai``'s ``ChatOpenAI``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest
from _proxy import ASK, langchain_loop, openai_loop

from hermes.proxy.rewrite import REASONING_KEYS
from hermes.replay import GEMINI_SKIP_SIGNATURE, PAD

QUESTIONS = ("what is in this repository?", "and which of those are tests?")


def _sig(call: dict[str, Any]) -> Any:
    return ((call.get("extra_content") or {}).get("google") or {}).get("thought_signature")


def _rc(m: dict[str, Any]) -> bool:
    return bool(m.get("reasoning_content")) and m["reasoning_content"] != PAD


def _gemini(m: dict[str, Any]) -> bool:
    return all(_sig(c) and _sig(c) != GEMINI_SKIP_SIGNATURE for c in m["tool_calls"]) and _rc(m)


def _details(m: dict[str, Any]) -> bool:
    return bool(m.get("reasoning_details")) and bool(m.get("reasoning"))


def _opaque(m: dict[str, Any]) -> bool:
    return bool(m.get("reasoning_opaque")) and bool(m.get("reasoning_text"))


# (route, model, carried-back check on each assistant tool-call message, direct error or None)
ECHO = "The `reasoning_content` in the thinking mode must be passed back"
CASES: list[tuple[str, str, Callable[[dict[str, Any]], bool], str | None]] = [
    ("deepseek", "deepseek-v4-pro", _rc, ECHO),
    ("kimi", "kimi-k2.6", _rc, "reasoning_content is missing in assistant tool call message"),
    ("gemini-openai", "gemini-3-pro-preview", _gemini, "Function call is missing a thought_signature"),
    ("openrouter", "anthropic/claude-sonnet-4.5", _details, None),
    ("openrouter", "deepseek/deepseek-v4", _details, f"maybe:{ECHO}"),
    ("glm", "glm-5.1", _rc, None),
    ("copilot", "claude-sonnet-4.5", _opaque, None),
    ("copilot", "gemini-3-pro-preview", _opaque, None),
]


def _run(client: str, base: str, model: str, stream: bool) -> None:
    extra = ASK if "/openrouter" in base else None  # how OpenRouter clients ask for reasoning
    if client == "openai":
        openai_loop(openai.OpenAI(base_url=base, api_key="sk-openai-client", max_retries=0), model, QUESTIONS,
                    stream, extra=extra)
    else:
        langchain_loop(base, model, QUESTIONS, stream, extra)


def _footprint(m: dict[str, Any]) -> set[str]:
    keys = {k for k in REASONING_KEYS if m.get(k)}
    for c in m.get("tool_calls") or []:
        keys |= {f"call.{k}" for k in ("extra_content",) if c.get(k)}
        keys |= {f"fn.{k}" for k in ("thought_signature",) if (c.get("function") or {}).get(k)}
    return keys


def _tool_turns(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["body"]["messages"] if m.get("role") == "assistant" and m.get("tool_calls")]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("client", ["openai", "langchain"])
@pytest.mark.parametrize(("route", "model", "carried", "direct_error"), CASES,
                         ids=[f"{c[0]}:{c[1].split('/')[0]}" for c in CASES])
def test_client_loop_through_proxy_and_direct(emulator: Any, proxy: Any, client: str, stream: bool, route: str,
                                              model: str, carried: Callable[[dict[str, Any]], bool],
                                              direct_error: str | None) -> None:
    before = len(emulator.requests(route))
    _run(client, proxy.url(route), model, stream)  # raises on any rejection
    proxied = emulator.requests(route)[before:]
    assert len(proxied) == 4, "two questions, each a tool call and an answer, one request each"
    last = proxied[-1]
    turns = _tool_turns(last)
    assert len(turns) == 2
    assert all(carried(m) for m in turns), turns
    if route == "glm":
        assert last["body"]["thinking"]["clear_thinking"] is False, "keep-thinking switch added"

    before = len(emulator.requests(route))
    sdk_keeps = route == "gemini-openai" and client == "openai" and not stream
    if direct_error and not sdk_keeps and not direct_error.startswith("maybe:"):
        with pytest.raises(openai.BadRequestError) as e:
            _run(client, emulator.url(route), model, stream)
        assert direct_error in e.value.response.text
        return
    try:
        _run(client, emulator.url(route), model, stream)
    except openai.BadRequestError as e:
        # an aggregator that enforces the upstream model's echo rule (DeepSeek behind OpenRouter)
        assert direct_error and direct_error.removeprefix("maybe:") in e.response.text
        return
    # accepted directly, but the reasoning the proxy restored never went back
    direct = emulator.requests(route)[before:]
    assert len(direct) == 4
    lost = [_footprint(p) - _footprint(d) for p, d in zip(turns, _tool_turns(direct[-1]), strict=True)]
    assert all(lost), f"the proxy restored nothing the client dropped: {lost}"
    if sdk_keeps:  # the SDK keeps extra fields on a tool call, so Gemini's signature survives
        assert all(_sig(c) for m in _tool_turns(direct[-1]) for c in m["tool_calls"])


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_reasoning_sent_to_a_strict_route_is_stripped(emulator: Any, proxy: Any, stream: bool) -> None:
    """A client that keeps everything (``model_dump(exclude_none=True)``) switches from DeepSeek
    to Mistral mid-conversation: Mistral answers 422 to the ``reasoning_content`` it carries,
    unless the proxy strips it."""

    def keep_all(base: str, model: str, messages: list[dict[str, Any]], q: str) -> list[dict[str, Any]]:
        c = openai.OpenAI(base_url=base, api_key="sk-keeps-all", max_retries=0)
        messages.append({"role": "user", "content": q})
        for _ in range(4):
            msg = c.chat.completions.create(model=model, messages=messages,
                                            tools=[{"type": "function", "function": {
                                                "name": "list_files", "parameters": {"type": "object"}}}],
                                            stream=False).choices[0].message.model_dump(exclude_none=True)
            messages.append(msg)
            if not msg.get("tool_calls"):
                break
            messages += [{"role": "tool", "tool_call_id": t["id"], "content": "ok"} for t in msg["tool_calls"]]
        return messages

    history = keep_all(proxy.url("deepseek"), "deepseek-v4-pro", [], f"start on deepseek ({stream})")
    assert any(m.get("reasoning_content") for m in history), "this client keeps reasoning_content"
    with pytest.raises(openai.UnprocessableEntityError) as e:
        openai.OpenAI(base_url=emulator.url("mistral"), api_key="sk-keeps-all", max_retries=0) \
            .chat.completions.create(model="mistral-medium-3.5", messages=[*history, {"role": "user", "content": "go"}],
                                     stream=stream)
    assert "Extra inputs are not permitted" in e.value.response.text

    before = len(emulator.requests("mistral"))
    c = openai.OpenAI(base_url=proxy.url("mistral"), api_key="sk-keeps-all", max_retries=0)
    resp = c.chat.completions.create(model="mistral-medium-3.5", messages=[*history, {"role": "user", "content": "go"}],
                                     stream=stream)
    if stream:
        assert "".join(ch.choices[0].delta.content or "" for ch in resp if ch.choices)
    else:
        assert resp.choices[0].message.content
    sent = emulator.requests("mistral")[before:]
    assert len(sent) == 1
    assert not any(set(REASONING_KEYS) & set(m) for m in sent[0]["body"]["messages"])
    # Mistral's id rule (nine letters and digits): calls and the results answering them, mapped alike
    calls = [c["id"] for m in sent[0]["body"]["messages"] for c in m.get("tool_calls") or ()]
    results = [m["tool_call_id"] for m in sent[0]["body"]["messages"] if m.get("role") == "tool"]
    assert calls and all(len(i) == 9 and i.isalnum() for i in calls) and results == calls
