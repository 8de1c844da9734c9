"""The Responses front door, driven by the official ``openai`` SDK's Responses API the way a
``store: false`` client (Codex, the Agents SDK) uses it: each response's output items are put
back into the next request's input as they came, ``include: ["reasoning.encrypted_content"]``.

Through ``POST /<route>/v1/responses`` every request of a tool loop reaches the route as its own
chat request, and every assistant tool-call turn carries back exactly the reasoning the route
returned — restored from the envelope the client carried, not from the proxy's memory (each
request goes to a freshly started proxy with an empty memory; only the seal key is shared).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from _proxy import running_proxy

from hermes.replay import GEMINI_SKIP_SIGNATURE, PAD
from hermes.store import Store

TOOLS = [{"type": "function", "name": "list_files", "description": "List the files under a path.",
          "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]
ENC = ["reasoning.encrypted_content"]


def _sig(call: dict[str, Any]) -> Any:
    return ((call.get("extra_content") or {}).get("google") or {}).get("thought_signature")


def _rc(m: dict[str, Any], seen: str) -> bool:
    return m.get("reasoning_content") == seen and seen != PAD


def _gemini(m: dict[str, Any], seen: str) -> bool:
    return all(_sig(c) and _sig(c) != GEMINI_SKIP_SIGNATURE for c in m["tool_calls"]) and _rc(m, seen)


def _details(m: dict[str, Any], seen: str) -> bool:
    return bool(m.get("reasoning_details")) and m.get("reasoning") == seen


CASES: list[tuple[str, str, Callable[[dict[str, Any], str], bool]]] = [
    ("deepseek", "deepseek-v4-pro", _rc),
    ("kimi", "kimi-k2.6", _rc),
    ("glm", "glm-5.1", _rc),
    ("gemini-openai", "gemini-3-pro-preview", _gemini),
    ("openrouter", "anthropic/claude-sonnet-4.5", _details),
    ("openrouter", "deepseek/deepseek-v4", _details),
]


def _step(client: openai.OpenAI, model: str, items: list[dict[str, Any]], stream: bool,
          extra: dict[str, Any] | None) -> Any:
    if not stream:
        return client.responses.create(model=model, input=items, tools=TOOLS, store=False,  # type: ignore[arg-type]
                                       include=ENC, extra_body=extra)  # type: ignore[arg-type]
    with client.responses.stream(model=model, input=items, tools=TOOLS, store=False,  # type: ignore[arg-type]
                                 include=ENC, extra_body=extra) as s:  # type: ignore[arg-type]
        for _ in s:
            pass
        return s.get_final_response()


@contextmanager
def fresh_proxy(emulator: Any, tmp: Path) -> Iterator[Any]:
    """A newly started proxy with an empty memory of its own; the seal key is the deployment's
    (``$HERMES_HOME``), shared by every proxy of the test, as workers share it."""
    store = Store(tmp / f"state-{secrets.token_hex(4)}.db")
    try:
        with running_proxy(emulator, store=store) as px:
            yield px
    finally:
        store.close()


def _loop(emulator: Any, tmp: Path, route: str, model: str, stream: bool) -> list[tuple[Any, str]]:
    """A tool loop, each request through a fresh proxy. (response, the reasoning summary the
    client saw) per step."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "what is in this repository?"}]
    extra = {"reasoning": {"effort": "medium"}} if route == "openrouter" else None  # how a Responses client asks
    out = []
    for _ in range(3):
        with fresh_proxy(emulator, tmp) as px:
            client = openai.OpenAI(base_url=px.url(route) + "/v1", api_key="sk-codex-client", max_retries=0)
            resp = _step(client, model, items, stream, extra)
        seen = "\n\n".join(s.text for o in resp.output if o.type == "reasoning" for s in o.summary)
        out.append((resp, seen))
        items += [o.model_dump(exclude_none=True) for o in resp.output]
        calls = [o for o in resp.output if o.type == "function_call"]
        if not calls:
            break
        items += [{"type": "function_call_output", "call_id": c.call_id, "output": "README.md tests/"} for c in calls]
    return out


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("route", "model", "carried"), CASES, ids=[f"{c[0]}:{c[1].split('/')[0]}" for c in CASES])
def test_tool_loop_restores_from_envelopes(emulator: Any, tmp_path: Path, route: str, model: str, stream: bool,
                                           carried: Callable[[dict[str, Any], str], bool]) -> None:
    before = len(emulator.requests(route))
    steps = _loop(emulator, tmp_path, route, model, stream)
    sent = emulator.requests(route)[before:]
    assert len(steps) == 2 and len(sent) == 2, "a tool call, then the answer"
    first, seen = steps[0]
    # reasoning first; a route whose signatures arrive after the text (Gemini's, streamed) gets
    # one more reasoning item last, with the complete envelope
    assert first.output[0].type == "reasoning" and first.output[0].encrypted_content.startswith("hseal1.")
    assert [o.type for o in first.output if o.type != "reasoning"] == ["function_call"]
    assert [o.type for o in steps[1][0].output if o.type != "reasoning"] == ["message"]
    assert steps[1][0].status == "completed"
    turn = [m for m in sent[1]["body"]["messages"] if m["role"] == "assistant"]
    assert len(turn) == 1 and turn[0]["tool_calls"]
    assert carried(turn[0], seen), turn[0]
    assert sent[1]["body"]["messages"][-1]["role"] == "tool"


def _first_turn(emulator: Any, tmp: Path, key: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the history so far, the first response's output items) of a DeepSeek tool loop."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "list the files"}]
    with fresh_proxy(emulator, tmp) as px:
        client = openai.OpenAI(base_url=px.url("deepseek") + "/v1", api_key=key, max_retries=0)
        first = client.responses.create(model="deepseek-v4-pro", input=items, tools=TOOLS,  # type: ignore[arg-type]
                                        store=False, include=ENC)  # type: ignore[arg-type]
    return items, [o.model_dump(exclude_none=True) for o in first.output]


def _second(emulator: Any, tmp: Path, key: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """The assistant turn as the route received it, the history sent through a fresh proxy."""
    before = len(emulator.requests("deepseek"))
    with fresh_proxy(emulator, tmp) as px:
        client = openai.OpenAI(base_url=px.url("deepseek") + "/v1", api_key=key, max_retries=0)
        client.responses.create(model="deepseek-v4-pro", input=items, tools=TOOLS, store=False,  # type: ignore[arg-type]
                                include=ENC)  # type: ignore[arg-type]
    return next(m for m in emulator.requests("deepseek")[before]["body"]["messages"] if m["role"] == "assistant")


def _result(out: list[dict[str, Any]]) -> dict[str, Any]:
    call = next(o for o in out if o["type"] == "function_call")
    return {"type": "function_call_output", "call_id": call["call_id"], "output": "README.md"}


@pytest.mark.parametrize("change", ["kept", "tampered", "dropped"])
def test_an_envelope_restores_only_as_it_was_sealed(emulator: Any, tmp_path: Path, change: str) -> None:
    """Sent back as it came, the envelope restores the reasoning; altered in one character, or
    dropped by the client, nothing opens, and DeepSeek's must-echo pad goes instead (the
    request is still accepted)."""
    items, out = _first_turn(emulator, tmp_path, "sk-a")
    env = out[0]["encrypted_content"]
    if change == "tampered":
        out[0]["encrypted_content"] = env[:40] + ("A" if env[40] != "A" else "B") + env[41:]
    elif change == "dropped":
        out = [o for o in out if o["type"] != "reasoning"]
    turn = _second(emulator, tmp_path, "sk-a", [*items, *out, _result(out)])
    if change == "kept":
        assert turn["reasoning_content"] == "\n\n".join(s["text"] for s in out[0]["summary"]) != PAD
    else:
        assert turn["reasoning_content"] == PAD


def test_another_tenants_envelope_restores_nothing(emulator: Any, tmp_path: Path) -> None:
    """An envelope minted for one key, sent back under another, does not open: the pad, never
    the first tenant's reasoning."""
    items, out = _first_turn(emulator, tmp_path, "sk-tenant-a")
    turn = _second(emulator, tmp_path, "sk-tenant-b", [*items, *out, _result(out)])
    assert turn["reasoning_content"] == PAD


def test_refusals_are_responses_shaped(emulator: Any) -> None:
    with running_proxy(emulator) as px:
        client = openai.OpenAI(base_url=px.url("deepseek") + "/v1", api_key="sk-a", max_retries=0)
        with pytest.raises(openai.BadRequestError) as e:
            client.responses.create(model="deepseek-v4-pro", input="hi", previous_response_id="resp_123")
        assert "previous_response_id" in e.value.message and "store: false" in e.value.message
        with pytest.raises(openai.BadRequestError) as e:
            client.responses.create(model="deepseek-v4-pro", input=[{"type": "item_reference", "id": "msg_1"}])  # type: ignore[list-item]
        assert "input[0]" in e.value.message
        before = len(emulator.requests("deepseek"))
        wrong = httpx.post(px.url("deepseek") + "/v1/v1/responses", json={"model": "m", "input": "hi"})
        assert wrong.status_code == 400 and "/deepseek/v1/responses" in wrong.json()["error"]["message"]
        assert len(emulator.requests("deepseek")) == before, "nothing forwarded"


def test_route_errors_reach_the_client_in_openai_shape(emulator: Any) -> None:
    """A route's own failure is relayed with its status and its error object, which the SDK
    raises as it would from OpenAI."""
    emulator.state.set_control("deepseek", fault="500", times=1)
    with running_proxy(emulator) as px:
        client = openai.OpenAI(base_url=px.url("deepseek") + "/v1", api_key="sk-a", max_retries=0)
        with pytest.raises(openai.InternalServerError):
            client.responses.create(model="deepseek-v4-pro", input="hi")


def test_a_responses_request_becomes_the_routes_chat_request() -> None:
    """What Codex and the SDKs send, field by field, as the chat body the rewrite then puts right."""
    from hermes.proxy.responses_door import chat_request
    from hermes.routing.resolve import resolve

    kimi = resolve("kimi", "http://upstream.test", "kimi-k2.6")
    door = chat_request({
        "model": "kimi-k2.6", "instructions": "be brief", "stream": True, "max_output_tokens": 99,
        "store": False, "include": ["reasoning.encrypted_content"], "prompt_cache_key": "k", "reasoning": {
            "effort": "xhigh", "summary": "auto"},
        "text": {"format": {"type": "json_schema", "name": "n", "schema": {"type": "object"}}, "verbosity": "low"},
        "tool_choice": {"type": "function", "name": "read"}, "parallel_tool_calls": False,
        "tools": [{"type": "function", "name": "read", "parameters": {"type": "object"}, "strict": False},
                  {"type": "web_search"}, {"type": "namespace", "name": "agents", "tools": []}],
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
            {"role": "user", "content": [{"type": "input_text", "text": "look "},
                                         {"type": "input_image", "image_url": "data:image/png;base64,AA"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "hseal1.x.y"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "reading"}]},
            {"type": "function_call", "call_id": "functions.read:0", "name": "read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "functions.read:0",
             "output": [{"type": "input_text", "text": "file body"}]},
        ]}, kimi)
    assert door.body == {
        "model": "kimi-k2.6",
        "messages": [
            {"role": "system", "content": "be brief"}, {"role": "system", "content": "rules"},
            {"role": "user", "content": [{"type": "text", "text": "look "},
                                         {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]},
            {"role": "assistant", "content": "reading", "tool_calls": [
                {"id": "functions.read:0", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "functions.read:0", "content": "file body"}],
        "tools": [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}],
        "tool_choice": {"type": "function", "function": {"name": "read"}}, "parallel_tool_calls": False,
        "max_tokens": 99, "response_format": {"type": "json_schema", "json_schema": {
            "name": "n", "schema": {"type": "object"}}},
        "thinking": {"effort": "high"},  # Kimi's own effort field and value for xhigh
        "stream": True, "stream_options": {"include_usage": True}}
    assert door.envelopes == {3: ["hseal1.x.y"]} and door.stream and door.include_encrypted
