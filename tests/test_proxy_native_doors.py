"""The front doors on the native routes, and the refusals of a request at the wrong door.

* ``POST /anthropic/v1/responses`` (and the Vertex and Foundry Anthropic routes): a Responses client (the official ``openai`` SDK, as Codex
  uses it: ``store: false``, ``include: ["reasoning.encrypted_content"]``) on Anthropic. Each
  request goes through a freshly started proxy with an empty memory, so Anthropic's signed
  thinking blocks come back only from the envelopes the client carried — and the emulator,
  which verifies every signature, accepts each request. An altered envelope restores nothing.
* ``POST /openai-responses/v1/responses``: OpenAI's own API, relayed under the route's rules.
* A request of one API family at another family's door is a 400 naming the door that takes
  it, and nothing reaches the upstream.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import httpx
import openai
import orjson
import pytest
from _proxy import running_proxy

from hermes.proxy.responses_relay import refused_param, ruled
from hermes.store import Store

TOOLS = [{"type": "function", "name": "list_files", "description": "List the files under a path.",
          "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]
MODEL = "claude-sonnet-4-5"


def _step(emulator: Any, tmp: Path, items: list[dict[str, Any]], stream: bool, route: str = "anthropic") -> Any:
    """One request through a freshly started proxy with an empty memory of its own (the seal key
    is the deployment's, shared as workers share it)."""
    store = Store(tmp / f"state-{secrets.token_hex(4)}.db")
    try:
        with running_proxy(emulator, store=store, **{route: emulator.url(route)}) as px:
            client = openai.OpenAI(base_url=px.url(route) + "/v1", api_key="sk-codex", max_retries=0)
            kw: dict[str, Any] = {"model": MODEL, "input": items, "tools": TOOLS, "store": False,
                                  "include": ["reasoning.encrypted_content"], "reasoning": {"effort": "medium"}}
            if not stream:
                return client.responses.create(**kw)
            with client.responses.stream(**kw) as s:
                for _ in s:
                    pass
                return s.get_final_response()
    finally:
        store.close()


def _thinking(request: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [[b for b in m["content"] if b.get("type") == "thinking"] for m in request["body"]["messages"]
            if m["role"] == "assistant"]


NATIVE = [("anthropic", False), ("anthropic", True), ("anthropic-vertex", True), ("anthropic-foundry", True)]


@pytest.mark.parametrize(("route", "stream"), NATIVE, ids=[f"{r}-{'streamed' if s else 'whole'}" for r, s in NATIVE])
def test_a_responses_client_on_anthropic_carries_its_signed_thinking(emulator: Any, tmp_path: Path, route: str,
                                                                     stream: bool) -> None:
    items: list[dict[str, Any]] = [{"role": "user", "content": "what is here? #steps=2"}]
    before = len(emulator.requests(route))
    shown = []
    for _ in range(3):
        resp = _step(emulator, tmp_path, items, stream, route)
        reasoning = [o for o in resp.output if o.type == "reasoning"]
        assert reasoning and all(o.encrypted_content.startswith("hseal1.") for o in reasoning)
        shown.append(reasoning[0].summary[0].text)
        items += [o.model_dump(exclude_none=True) for o in resp.output]
        calls = [o for o in resp.output if o.type == "function_call"]
        if not calls:
            break
        items += [{"type": "function_call_output", "call_id": c.call_id, "output": "README.md"} for c in calls]
    sent = emulator.requests(route)[before:]
    assert len(sent) == 3
    if route == "anthropic-vertex":  # Vertex's URL names the model and the verb
        assert all(q["path"].endswith(":streamRawPredict") for q in sent)
    else:
        assert all(q["path"].endswith("/v1/messages") and q["body"].get("stream", False) is stream for q in sent)
    last = _thinking(sent[-1])
    assert len(last) == 2 and all(len(t) == 1 and t[0]["signature"].startswith("Es") for t in last)
    assert [t[0]["thinking"] for t in last] == shown[:2], "the very blocks the route returned for each turn"
    assert _thinking(sent[1]) == last[:1], "the same bytes on every later request"


def test_an_altered_envelope_restores_nothing(emulator: Any, tmp_path: Path) -> None:
    items: list[dict[str, Any]] = [{"role": "user", "content": "what is here? #steps=2"}]
    resp = _step(emulator, tmp_path, items, False)
    out = [o.model_dump(exclude_none=True) for o in resp.output]
    for o in out:
        if o["type"] == "reasoning":
            env = o["encrypted_content"]
            o["encrypted_content"] = env[:-2] + ("A" if env[-2] != "A" else "B") + env[-1]
    call = next(o for o in out if o["type"] == "function_call")
    before = len(emulator.requests("anthropic"))
    _step(emulator, tmp_path, [*items, *out, {"type": "function_call_output", "call_id": call["call_id"],
                                              "output": "README.md"}], False)
    (q,) = emulator.requests("anthropic")[before:]
    assert _thinking(q) == [[]], "no thinking block from an envelope that did not open"


WRONG = [
    # (route, path, body, status, the URL the refusal must name)
    ("deepseek", "/v1/v1/messages", {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]},
     "/deepseek/v1/messages"),
    ("deepseek", "/v1/v1/responses", {"model": "m", "input": "hi"}, "/deepseek/v1/responses"),
    ("deepseek", "/v1/chat/completions", {"model": "m", "system": "be brief", "messages": [
        {"role": "user", "content": "hi"}]}, "/deepseek/v1/messages"),
    ("deepseek", "/v1/messages", {"model": "m", "input": "hi"}, "/deepseek/v1/responses"),
    ("anthropic", "/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
     "/anthropic/v1/responses"),
    ("openai-responses", "/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
     "/openai-responses/v1/responses"),
    ("openai-responses", "/v1/messages", {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]},
     "/openai-responses/v1/responses"),
    ("bedrock", "/v1/responses", {"model": "m", "input": "hi"}, "chat-completions routes"),
]


@pytest.mark.parametrize(("route", "path", "body", "names"), WRONG, ids=[f"{r}{p}" for r, p, _, _ in WRONG])
def test_a_request_at_the_wrong_door_is_a_400_naming_the_right_one(emulator: Any, route: str, path: str,
                                                                   body: dict[str, Any], names: str) -> None:
    with running_proxy(emulator, **{"anthropic": emulator.url("anthropic"),
                                    "openai-responses": emulator.url("openai-responses"),
                                    "bedrock": "http://127.0.0.1:9"}) as px:
        before = len(emulator.requests())
        r = httpx.post(px.url(route) + path, json=body, headers={"authorization": "Bearer sk-a"})
        assert len(emulator.requests()) == before, "nothing forwarded"
    assert r.status_code == 400, r.text
    assert names in r.json()["error"]["message"], r.text


def test_the_openai_responses_relay_applies_the_routes_rules() -> None:
    """Pure: ``include`` completed for ``store: false``, a learned unknown parameter left out, the
    client's own reasoning items and values untouched."""
    item = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAABx"}
    body = {"model": "gpt-5.4", "store": False, "input": [item], "client_metadata": {"a": "b"},
            "reasoning": {"effort": "high"}}
    sent, changed = ruled(body, {"reasoning": {"context": "all_turns"}}, (), ("client_metadata",))
    assert sent["include"] == ["reasoning.encrypted_content"] and "client_metadata" not in sent
    assert sent["input"] is body["input"] and sent["reasoning"] == {"context": "all_turns", "effort": "high"}
    assert set(changed) == {"include", "client_metadata", "reasoning"}
    assert ruled({"model": "m", "input": "hi"}, {}, ())[0] == {"model": "m", "input": "hi"}, "store defaults on"
    err = orjson.dumps({"error": {"message": "Unknown parameter: 'client_metadata'.", "type": "invalid_request_error",
                                  "param": "client_metadata", "code": "unknown_parameter"}})
    assert refused_param(400, err, body) == "client_metadata"
    assert refused_param(400, err, {"model": "m"}) is None, "only a parameter the request carried"
    assert refused_param(400, err.replace(b"client_metadata", b"input"), {"input": []}) is None
