"""Loopback emulators of every OpenAI-compatible (chat completions) route personality.

Each personality (``FACTS`` in ``chat_rules``) serves ``POST /{name}/v1/chat/completions`` and
``GET /{name}/v1/models``. A request is logged, checked for a pending fault, validated the way
the provider validates it (unknown keys, must-echo, signed blobs, drift), then answered by the
scripted model (``script.next_step``, or ``script.directed_step`` when the user text has
``#call=`` directives) in the personality's reasoning carriers — as one JSON
``chat.completion`` or as ``chat.completion.chunk`` SSE. Signed blobs are HMAC-minted by the
harness bound to (personality, model, text) so a replay is checked byte-exact.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..routing.toolids import base62
from .access import refusal
from .chat_errors import error_body
from .chat_rules import (
    CHUNKS,
    EC,
    FACTS,
    RC,
    RD,
    RO,
    RT,
    THINK,
    Facts,
    R,
    details_format,
    keep_on,
    returns_for,
    thinking_on,
)
from .chat_validate import validate
from .core import EmulatorState, Personality, register, transport_fault
from .script import directed_step, next_step

__all__ = ["Turn", "build", "chunks", "message_of", "scripted_turn"]

_FAULT_BODIES: dict[str, tuple[int, str]] = {
    "500": (500, "The server had an error while processing your request. Sorry about that!"),
    "429": (429, "Rate limit reached for requests. Please try again in 0s."),
}


@dataclass
class Turn:
    """One scripted assistant turn in a personality's carriers (shared by JSON and SSE output)."""

    model: str
    reasoning: str
    carriers: tuple[str, ...]
    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish: str = "stop"
    details: list[dict[str, Any]] = field(default_factory=list)
    opaque: str = ""
    text_signature: str = ""
    usage: dict[str, Any] = field(default_factory=dict)

    @property
    def thinking_chunk(self) -> dict[str, Any] | None:
        """Magistral's reasoning, as the content chunk it comes in."""
        if CHUNKS not in self.carriers or not self.reasoning:
            return None
        return {"type": "thinking", "thinking": [{"type": "text", "text": self.reasoning}]}


# --- scripted model ---------------------------------------------------------------------------
def _user_text(messages: list[Any]) -> tuple[str, int]:
    """Text of the last user message and how many tool results followed it."""
    last = max((i for i, m in enumerate(messages) if isinstance(m, Mapping) and m.get("role") == "user"),
               default=-1)
    content = messages[last].get("content") if last >= 0 else ""
    if isinstance(content, list):
        content = "".join(str(p.get("text") or "") for p in content if isinstance(p, Mapping))
    results = sum(1 for m in messages[last + 1:] if isinstance(m, Mapping) and m.get("role") == "tool")
    return str(content or ""), results


def _tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4) if text else 0


def _prompt_tokens(facts: Facts, body: Mapping[str, Any]) -> int:
    """~len(body)/4, counting replayed reasoning unless the server drops it (cleared / ignored)."""
    messages = list(body.get("messages") or [])
    last_user = max((i for i, m in enumerate(messages) if isinstance(m, Mapping) and m.get("role") == "user"),
                    default=-1)
    kept = keep_on(facts, body)
    counted = []
    for i, m in enumerate(messages):
        if isinstance(m, Mapping) and m.get("role") == "assistant" and (
                facts.replay_ignored or (not kept and i < last_user)):
            m = {k: v for k, v in m.items() if k not in (RC, R, RD, RT, RO)}
        counted.append(m)
    return max(1, len(orjson.dumps({**body, "messages": counted})) // 4)


def scripted_turn(state: EmulatorState, name: str, facts: Facts, body: Mapping[str, Any]) -> Turn:
    """What the scripted model answers to ``body``, rendered into this personality's carriers."""
    model = str(body["model"])
    messages = list(body["messages"])
    user_text, results = _user_text(messages)
    tools = [(t["function"]["name"], t["function"].get("parameters")) for t in body.get("tools") or []
             if isinstance(t, Mapping) and isinstance(t.get("function"), Mapping)]
    step = directed_step(user_text=user_text, tool_results_since_user=results, model=model) or next_step(
        user_text=user_text, tools=tools, tool_results_since_user=results, model=model, seq=len(messages))
    carriers = returns_for(facts, model, body)
    reasoning = step.reasoning if carriers else ""
    turn = Turn(model, reasoning, carriers, None)
    if step.kind == "tool" and step.tool:
        n = sum(1 for m in messages if isinstance(m, Mapping) and m.get("role") == "assistant")
        h = hashlib.sha256(f"{model}\0{user_text}\0{len(messages)}".encode()).hexdigest()[:24]
        call_id = {"kimi": f"functions.{step.tool}:{n}", "mistral": base62(bytes.fromhex(h))[:9]}.get(facts.tool_id, f"call_{h}")
        call: dict[str, Any] = {"id": call_id, "type": "function",
                                "function": {"name": step.tool, "arguments": orjson.dumps(dict(step.args)).decode()}}
        if facts.signs == "gemini":
            call[EC] = {"google": {"thought_signature": state.mint(name, model, f"tool:{call_id}")}}
        if facts.tool_signatures and fnmatchcase(model.lower(), facts.tool_signatures):
            call["function"]["thought_signature"] = state.mint(name, model, f"tool:{call_id}")
        turn.tool_calls, turn.finish = [call], "tool_calls"
        turn.content = f"<think>\n{reasoning}\n</think>\n\n" if THINK in carriers else None
    else:
        answer = step.answer
        turn.content = f"<think>\n{reasoning}\n</think>\n\n{answer}" if THINK in carriers else answer
        if EC in carriers:
            turn.text_signature = state.mint(name, model, turn.content)
    if RD in carriers:
        turn.details = _details(state, name, facts, model, reasoning)
    if RO in carriers:
        turn.opaque = state.mint(name, model, reasoning)
    reasoning_tokens = _tokens(step.reasoning) if thinking_on(body) else 0
    visible = _tokens(step.answer if step.kind == "answer" else "") + sum(_tokens(c["function"]["arguments"]) for c in turn.tool_calls)
    prompt = _prompt_tokens(facts, body)
    completion = visible if facts.usage_excludes_reasoning else visible + reasoning_tokens
    turn.usage = {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + visible + reasoning_tokens,
                  "completion_tokens_details": {"reasoning_tokens": reasoning_tokens}}
    return turn


def _details(state: EmulatorState, name: str, facts: Facts, model: str, text: str) -> list[dict[str, Any]]:
    fmt = details_format(model) if facts.signs == "details" else "openai-responses-v1"
    if facts.signs != "details":
        return [{"type": "reasoning.text", "text": text, "format": fmt, "index": 0}]
    # OpenAI and Gemini 3 models: a readable entry and an encrypted one that share ``index: 0``
    # (as the real gateways return them; see FACTS notes) — a client must keep both as returned
    if fmt == "openai-responses-v1":
        item = "rs_" + hashlib.sha256(text.encode()).hexdigest()[:24]
        return [{"type": "reasoning.summary", "summary": text, "id": item, "format": fmt, "index": 0},
                {"type": "reasoning.encrypted", "data": state.mint(name, model, text, prefix="gAAAAAB"),
                 "id": item, "format": fmt, "index": 0}]
    if fmt == "google-gemini-v1":
        return [{"type": "reasoning.text", "text": text, "format": fmt, "index": 0},
                {"type": "reasoning.encrypted", "data": state.mint(name, model, text), "format": fmt, "index": 0}]
    return [{"type": "reasoning.text", "text": text, "signature": state.mint(name, model, text),
             "format": fmt, "index": 0}]


# --- rendering ----------------------------------------------------------------------------------
def message_of(turn: Turn) -> dict[str, Any]:
    """The non-streaming assistant message."""
    msg: dict[str, Any] = {"role": "assistant", "content": turn.content}
    if (chunk := turn.thinking_chunk) is not None:
        msg["content"] = [chunk, *([{"type": "text", "text": turn.content}] if turn.content else [])]
    if turn.reasoning:
        for key in (RC, R, RT):
            if key in turn.carriers:
                msg[key] = turn.reasoning
    if turn.details:
        msg[RD] = turn.details
    if turn.opaque:
        msg[RO] = turn.opaque
    if turn.text_signature:
        msg[EC] = {"google": {"thought_signature": turn.text_signature}}
    if turn.tool_calls:
        msg["tool_calls"] = turn.tool_calls
    return msg


def _pieces(text: str, n: int = 3) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // n))
    return [text[i:i + size] for i in range(0, len(text), size)]


def chunks(turn: Turn, include_usage: bool) -> list[dict[str, Any] | None]:
    """The ``delta`` payloads of a streamed turn, in order; ``None`` marks the usage chunk."""
    out: list[dict[str, Any] | None] = [{"role": "assistant", "content": ""}]
    text_keys = [k for k in (RC, R, RT) if k in turn.carriers]
    streamed_details = [d for d in turn.details if d["type"] in ("reasoning.text", "reasoning.summary")]
    for piece in _pieces(turn.reasoning) if (text_keys or streamed_details) else []:
        delta: dict[str, Any] = {k: piece for k in text_keys}
        if streamed_details:
            d = streamed_details[0]
            frag = {**d, "summary" if d["type"] == "reasoning.summary" else "text": piece}
            if "signature" in frag:
                frag["signature"] = ""
            delta[RD] = [frag]
        out.append(delta)
    for d in turn.details:
        if d.get("signature"):
            out.append({RD: [{**d, "text": ""}]})
    if (chunk := turn.thinking_chunk) is not None:
        out.append({"content": [chunk]})
    for piece in _pieces(turn.content or "", 4):
        out.append({"content": piece})
    for j, call in enumerate(turn.tool_calls):
        first = {k: v for k, v in call.items() if k != "function"}
        first["function"] = {**call["function"], "arguments": ""}
        out.append({"tool_calls": [{"index": j, **first}]})
        for piece in _pieces(call["function"]["arguments"], 3):
            out.append({"tool_calls": [{"index": j, "function": {"arguments": piece}}]})
    for d in turn.details:
        if d["type"] == "reasoning.encrypted":
            out.append({RD: [d]})
    if turn.opaque:
        out.append({RO: turn.opaque})
    if turn.text_signature:
        out.append({EC: {"google": {"thought_signature": turn.text_signature}}})
    out.append({"__finish__": turn.finish})
    if include_usage:
        out.append(None)
    return out


def _completion(turn: Turn, cid: str, created: int) -> dict[str, Any]:
    return {"id": cid, "object": "chat.completion", "created": created, "model": turn.model,
            "choices": [{"index": 0, "message": message_of(turn), "finish_reason": turn.finish, "logprobs": None}],
            "usage": turn.usage}


def _sse(turn: Turn, cid: str, created: int, include_usage: bool) -> list[bytes]:
    events = []
    for delta in chunks(turn, include_usage):
        base = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": turn.model}
        if delta is None:
            payload = {**base, "choices": [], "usage": turn.usage}
        elif "__finish__" in delta:
            payload = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": delta["__finish__"]}]}
        else:
            payload = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        events.append(b"data: " + orjson.dumps(payload) + b"\n\n")
    return events


# --- faults --------------------------------------------------------------------------------------
def _fault_response(fault: str, facts: Facts) -> Response | None:
    if fault in _FAULT_BODIES:
        status, text = _FAULT_BODIES[fault]
        body = error_body(facts.errors, text, status=status)
        headers = {"retry-after": "0"} if fault == "429" else {}
        return JSONResponse(body, status_code=status, headers=headers)
    return transport_fault(fault)


# --- app ------------------------------------------------------------------------------------------
def build(state: EmulatorState, name: str) -> Starlette:
    """The Starlette app of personality ``name`` (mounted at ``/{name}``)."""
    facts = FACTS[name]

    async def models(request: Request) -> Response:
        state.record(name, request, None)
        return JSONResponse({"object": "list", "data": [
            {"id": m, "object": "model", "created": 1700000000, "owned_by": name} for m in facts.models]})

    async def completions(request: Request) -> Response:
        raw = await request.body()
        try:
            body = orjson.loads(raw or b"null")
        except orjson.JSONDecodeError:
            body = None
        state.record(name, request, body)
        if not isinstance(body, dict):
            return JSONResponse(error_body(facts.errors, "We could not parse the JSON body of your request."),
                                status_code=400)
        control = state.control(name)
        fault = state.take_fault(name)
        early = _fault_response(fault, facts) if fault else None
        if early is not None:
            return early
        model = str(body.get("model") or "")
        style = facts.errors if facts.errors == "deepseek" else "openai"
        if (refused := refusal(state.access, name, style, model, request.headers, own=facts.models)) is not None:
            return refused
        verdict = validate(facts, name, model, body, body_len=len(raw), reject=frozenset(control.reject_fields),
                           verify=lambda text, sig: state.verify(name, model, text, sig)
                           or state.verify(name, model, text, sig, prefix="gAAAAAB"))
        if verdict is not None:
            status, err = verdict
            return JSONResponse(err, status_code=status)
        if control.first_token:
            await asyncio.sleep(control.first_token)
        turn = scripted_turn(state, name, facts, body)
        cid = "chatcmpl-" + hashlib.sha256(raw).hexdigest()[:24]
        created = int(time.time())
        delay = control.delay if control.delay > 0 else (0.05 if fault == "slow" else 0.0)
        if not body.get("stream"):
            if delay:
                await asyncio.sleep(delay)
            data = orjson.dumps(_completion(turn, cid, created))
            if fault == "truncate":
                data = data[: len(data) // 2]
            elif fault == "malformed":
                data = b'{"id": "' + cid.encode() + b'", "choices": [' + data[:40]
            return Response(data, media_type="application/json")
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        events = _sse(turn, cid, created, include_usage)
        return StreamingResponse(_stream(events, facts, fault, delay), media_type="text/event-stream",
                                 headers={"cache-control": "no-cache"})

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"]),
                             Route("/v1/models", models, methods=["GET"])])


async def _stream(events: list[bytes], facts: Facts, fault: str | None, delay: float) -> AsyncIterator[bytes]:
    """Yield SSE events, honouring ``delay`` and the stream faults (truncate, malformed)."""
    if facts.keepalive:
        yield b": OPENROUTER PROCESSING\n\n"
    cut = len(events) // 2
    for i, event in enumerate(events):
        if fault == "truncate" and i == cut:
            return
        if fault == "malformed" and i == cut:
            yield b'data: {"id": "chatcmpl-broken", "choices": [{"delta": {"content": "x"\n\n'
        if delay:
            await asyncio.sleep(delay)
        yield event
        if facts.keepalive and i == cut:
            yield b": OPENROUTER PROCESSING\n\n"
    yield b"data: [DONE]\n\n"


for _name in FACTS:
    register(Personality(_name, build, base_path="/v1"))
