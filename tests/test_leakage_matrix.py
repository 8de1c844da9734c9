"""The leakage matrix: start on route A, continue on route B, for every ordered pair of routes
that has an emulator personality (route key == personality).

A's history is a real captured session (two user turns through the real call path against A's
emulator: a tool loop closed with an answer, then an open tool loop), so it holds A's real
reasoning text, minted blobs, item ids, native records and tool-call ids. B then answers A's
open loop, is asked a new question, calls a tool of its own and continues — three requests, the
last with tool turns (and ids) of both routes. From every body B's emulator logged we assert:

* no blob, signature, encrypted item, ``reasoning_details`` signature/data, item id or native
  record value (``reasoning_opaque``, ``thought_signature``, tool signatures) minted by A
  appears anywhere in it, unless A == B (then some must: the search is not blind);
* no carrier or native field outside B's row appears in its conversation;
* B's emulator — which validates like the real provider, tool-call id rules included — accepts
  it (HTTP 200, an answer or a tool call).

Every pair is checked in one pass and reported together, so one failure shows them all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from hermes.agent import provider
from hermes.core.errors import HermesError
from hermes.core.messages import Message, Reasoning, ToolResult
from hermes.emulate import Emulator
from hermes.routing.resolve import Resolved, resolve
from hermes.routing.routes import ROUTES, Route
from hermes.transport.http import HttpTransport
from hermes.wire import ToolSpec

FACTS = pytest.importorskip("hermes.emulate.chat_rules").FACTS

MODEL = {"copilot": "gemini-3-pro-preview", "gemini-openai": "gemini-3-pro-preview", "openai": "gpt-oss-120b",
         "anthropic": "claude-opus-5", "anthropic-vertex": "claude-opus-4-6", "anthropic-foundry": "claude-opus-5",
         "bedrock": "anthropic.claude-sonnet-4-5-v1:0", "gemini": "gemini-3-pro-preview",
         "gemini-vertex": "gemini-3-pro-preview", "openai-responses": "gpt-5", "xai-responses": "grok-4",
         "deepseek-anthropic": "deepseek-v4-pro", "kimi-anthropic": "kimi-k2.6", "mimo-anthropic": "mimo-v2.5-pro",
         "minimax-anthropic": "MiniMax-M3"}
TOOLS = (ToolSpec("ls", "List files", {"type": "object", "properties": {"path": {"type": "string"}},
                                       "required": ["path"]}),)
KEY = "leak-matrix-key"
AWS = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
       "AWS_REGION": "us-east-1"}
CHAT_FIELDS = {"reasoning_content", "reasoning", "reasoning_details", "reasoning_text", "reasoning_opaque",
               "extra_content", "thought_signature"}
"""Assistant-message / tool-call keys that carry reasoning or native records on chat wires."""
FOREIGN_FIELDS = CHAT_FIELDS | {"thoughtSignature", "encrypted_content", "reasoningContent", "redactedContent"}


def model_for(key: str) -> str:
    return MODEL.get(key) or FACTS[key].models[0]


def _keys() -> list[str]:
    from hermes.emulate import load_all
    from hermes.emulate.core import PERSONALITIES

    load_all()
    return [r.key for r in ROUTES if r.key in PERSONALITIES]


KEYS = _keys()


def _resolved(emu: Emulator, key: str) -> Resolved:
    return resolve(key, emu.url(key), model_for(key))


def _results(m: Message) -> Message:
    return Message("tool", tuple(ToolResult(c.id, "a.txt b.txt", c.name) for c in m.tool_calls))


def capture(emu: Emulator, key: str, transport: HttpTransport) -> list[Message]:
    """A real two-turn session on ``key``: tool → answer, then a new question left mid tool loop."""
    r = _resolved(emu, key)
    h = [Message.system("You are terse."), Message.user(f"what is in the workspace? ({key})")]
    for step in range(3):
        if step == 2:
            h.append(Message.user("and in the parent directory?"))
        msg = provider.complete(r, h, tools=TOOLS, stream=True, api_key=KEY,
                                transport=transport).response.message
        h.append(msg)
        if step != 1:
            assert msg.tool_calls, f"{key}: step {step} called no tool"
            h.append(_results(msg))
    return h


def minted(history: list[Message]) -> set[str]:
    """Every opaque value the origin route minted: blobs, detail signatures/data, item ids,
    native signatures and opaque tokens (reasoning *text* may cross routes; these may not)."""
    out: set[str] = set()
    for m in history:
        for p in m.parts:
            if not isinstance(p, Reasoning):
                continue
            if p.blob and p.blob_kind == "openrouter.details":
                for entry in orjson.loads(p.blob):
                    out.update(str(entry[k]) for k in ("signature", "data", "id") if entry.get(k))
            elif p.blob:
                out.add(p.blob)
            if p.item_id:
                out.add(p.item_id)
            if p.native is not None:
                out.update(s for s in (p.native.thought_signature, p.native.reasoning_opaque) if s)
                out.update(sig for _, sig in p.native.tool_signatures)
    return {s for s in out if len(s) >= 12}


def _conversation(body: dict[str, Any]) -> Any:
    return body.get("messages") or body.get("contents") or body.get("input") or []


def _walk_keys(node: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield path, k
            yield from _walk_keys(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk_keys(v, f"{path}[{i}]")


def carrier_violations(route: Route, body: dict[str, Any]) -> list[str]:
    """Reasoning/native fields in the conversation that B's row does not name."""
    conv = _conversation(body)
    if route.wire != "openai_chat":
        own = {"anthropic": {"signature"}, "bedrock": {"reasoningContent", "redactedContent"},
               "gemini": {"thoughtSignature"}, "openai_responses": {"encrypted_content"}}[route.wire]
        return [f"{p}.{k}" for p, k in _walk_keys(conv) if k in FOREIGN_FIELDS - own]
    allowed = set(route.carriers)
    allowed |= {"reasoning_opaque", "reasoning_text"} & route.native
    gemini_sigs = bool({"thought_signature", "tool_signatures"} & route.native) and "reasoning_opaque" not in route.native
    if gemini_sigs:
        allowed.add("extra_content")
    bad: list[str] = []
    for i, m in enumerate(conv):
        if m.get("role") != "assistant":
            bad += [f"[{i}].{k}" for k in m if k in CHAT_FIELDS]
            continue
        bad += [f"[{i}].{k}" for k in m if k in CHAT_FIELDS and k not in allowed]
        for j, call in enumerate(m.get("tool_calls") or []):
            if "extra_content" in call and not gemini_sigs:
                bad.append(f"[{i}].tool_calls[{j}].extra_content")
            if "thought_signature" in (call.get("function") or {}) and "reasoning_opaque" not in route.native:
                bad.append(f"[{i}].tool_calls[{j}].function.thought_signature")
    return bad


@pytest.fixture(scope="module")
def matrix_emulator() -> Iterator[Emulator]:
    """Our own emulator: faults another test left on the shared one cannot leak in here."""
    with Emulator() as emu:
        yield emu


def test_every_route_pair_carries_nothing_of_the_origin_and_is_accepted(
        matrix_emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    emu = matrix_emulator
    for k, v in AWS.items():
        monkeypatch.setenv(k, v)
    transport = HttpTransport()  # one connection pool for all ~1,600 requests
    captured = {a: capture(emu, a, transport) for a in KEYS}
    secrets = {a: minted(h) for a, h in captured.items()}
    assert sum(1 for s in secrets.values() if s) >= 10, "too few routes minted anything: the check is blind"
    pairs = 0
    failures: list[str] = []
    for b in KEYS:
        rb = _resolved(emu, b)
        for a in KEYS:
            pairs += 1
            history = list(captured[a])
            # 1. B answers A's open tool loop; 2. B calls a tool of its own after a new question;
            # 3. B continues with A's and its own tool turns (and ids) in one request
            for n in range(3):
                before = len(emu.requests(b))
                try:
                    ex = provider.complete(rb, history, tools=TOOLS, stream=n == 1, api_key=KEY,
                                           transport=transport)
                except HermesError as e:
                    failures.append(f"{a} → {b} (request {n + 1}): rejected: {str(e)[:200]}")
                    break
                logged = emu.requests(b)[before:]
                if len(logged) != 1:
                    failures.append(f"{a} → {b}: {len(logged)} requests logged, expected 1")
                    break
                text = orjson.dumps(logged[0]["body"]).decode()
                found = sorted(s[:24] for s in secrets[a] if s in text)
                if a != b and found:
                    failures.append(f"{a} → {b} (request {n + 1}): leaked {found}")
                if n == 0 and a == b and secrets[a] and not found:
                    failures.append(f"{a} → {a}: none of its own blobs went back (search blind?)")
                bad = carrier_violations(rb.route, logged[0]["body"])
                if bad:
                    failures.append(f"{a} → {b} (request {n + 1}): fields outside {b}'s row: {bad[:4]}")
                msg = ex.response.message
                if not msg.text and not msg.tool_calls:
                    failures.append(f"{a} → {b}: empty response")
                history.append(msg)
                if n == 0:
                    history.append(Message.user(f"and what is in the parent directory? ({a} → {b})"))
                elif n == 1 and msg.tool_calls:
                    history.append(_results(msg))
                elif n == 1:
                    failures.append(f"{a} → {b}: {b} called no tool of its own")
                    break
    transport.close()
    minting = sum(1 for s in secrets.values() if s)
    print(f"leakage matrix: {len(KEYS)} routes ({minting} mint blobs), {pairs} pairs checked, "
          f"{len(failures)} leaks/rejections")
    assert pairs == len(KEYS) ** 2 and len(KEYS) == len(ROUTES)
    assert not failures, f"{len(failures)} of {pairs} pairs failed:\n" + "\n".join(failures[:40])
