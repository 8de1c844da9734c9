"""Anthropic Messages emulators: direct API, Vertex AI ``rawPredict`` and Azure Foundry.

They validate like the real service (the Messages API reference and its observed errors), so a
client bug shows up here as the error text users would see; the rules and the signatures live in
``anthropic_rules``, this module is the scripted model and the HTTP app.

The model is ``script.next_step``; a user text containing ``#steps=N`` asks for N tool calls
(the offered tools in turn) before the answer, and ``#call=NAME{json args}`` directives
name the calls exactly (``script.directed_step``). Ids containing ``redact`` also return a
``redacted_thinking`` block; models whose display defaults to ``omitted`` (Opus 4.7+, Mythos, Fable) omit thinking text (display
``omitted``: empty ``thinking`` with a valid signature). Faults: ``500``, ``529``, ``429``,
``truncate``, ``malformed``, ``slow``, ``error_event``, ``orphan_signature``,
``repeat_signature`` (each ``signature_delta`` sent twice), ``html502``,
``empty200``, ``text4xx``; drift: ``reject_fields``. The vendors' Anthropic-compatible
endpoints (DeepSeek, Kimi, MiMo, MiniMax) are personalities of this app too, with their own
rules from ``anthropic_vendors``.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .access import refusal
from .anthropic_rules import (
    FAMILY,
    Invalid,
    blocks_of,
    check_drift,
    check_schema,
    check_semantics,
    interleaves,
    mint_redacted,
    mint_signature,
    prefix_of,
    thinking_on,
    verify_redacted,
    verify_signature,
)
from .anthropic_vendors import VENDORS, Vendor, check_vendor, vendor_signature, vendor_thinks
from .anthropic_vendors import error_body as vendor_error
from .chat_rules import FACTS
from .claude_facts import OMITS, PREFIX_BOUND
from .core import EmulatorState, Personality, register, transport_fault
from .script import directed_step, next_step

__all__ = ["FAMILY", "mint_redacted", "mint_signature", "verify_redacted", "verify_signature"]


# ----------------------------------------------------------------------------- the model


def _script(state: EmulatorState, body: Mapping[str, Any], model: str,
            betas: frozenset[str] = frozenset(), vendor: Vendor | None = None) -> tuple[list[dict[str, Any]], str]:
    """(content blocks, stop_reason) the scripted model answers with."""
    msgs: list[Mapping[str, Any]] = body["messages"]
    user_at = max((i for i, m in enumerate(msgs) if m["role"] == "user"
                   and any(b.get("type") == "text" for b in blocks_of(m))), default=-1)
    user_text = " ".join(b.get("text", "") for b in blocks_of(msgs[user_at]) if b.get("type") == "text") \
        if user_at >= 0 else ""
    results = sum(1 for m in msgs[user_at + 1:] for b in blocks_of(m) if b.get("type") == "tool_result")
    tools = [(t["name"], t.get("input_schema")) for t in body.get("tools") or []]
    steps = int(m.group(1)) if (m := re.search(r"#steps=(\d+)", user_text)) else 1
    directed = directed_step(user_text=user_text, tool_results_since_user=results, model=model)
    if directed is not None:
        step, reasoning = directed, directed.reasoning
    elif tools and results < steps:
        step = next_step(user_text=user_text, tools=[tools[results % len(tools)]], tool_results_since_user=0,
                         model=model, seq=results)
        reasoning = step.reasoning + (f" (step {results + 1} of {steps})" if steps > 1 else "")
    else:
        step = next_step(user_text=user_text, tools=tools, tool_results_since_user=max(results, 1) if tools else 0,
                         model=model)
        reasoning = step.reasoning
    content: list[dict[str, Any]] = []
    if vendor is not None:  # a vendor's model thinks at every step; its signature comes with the id
        if vendor_thinks(body):
            content.append({"type": "thinking", "thinking": reasoning, "signature": ""})
    elif thinking_on(body, model) and (results == 0 or interleaves(body, betas)):
        display = (body.get("thinking") or {}).get("display") or ("omitted" if OMITS.search(model) else "summarized")
        shown = "" if display == "omitted" else reasoning
        prefix = prefix_of(body, msgs) if PREFIX_BOUND.search(model) else None
        content.append({"type": "thinking", "thinking": shown,
                        "signature": mint_signature(state, model, shown, prefix)})
        if "redact" in model:
            content.append({"type": "redacted_thinking", "data": mint_redacted(state, model)})
    if step.kind == "tool":
        content.append({"type": "text", "text": f"Let me check with {step.tool}."})
        content.append({"type": "tool_use", "id": "toolu_" + secrets.token_hex(12), "name": step.tool,
                        "input": dict(step.args)})
        return content, "tool_use"
    content.append({"type": "text", "text": step.answer})
    return content, "end_turn"


def _message(body: Mapping[str, Any], model: str, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    thought = sum(len(b.get("thinking", "")) // 4 + 20 for b in content if b["type"] == "thinking")
    out_tokens = thought + sum(len(orjson.dumps(b)) // 4 for b in content if b["type"] != "thinking")
    usage: dict[str, Any] = {"input_tokens": len(orjson.dumps(body)) // 4, "output_tokens": out_tokens,
                             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    if thought:
        usage["output_tokens_details"] = {"thinking_tokens": thought}
    return {"id": "msg_" + secrets.token_hex(12), "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage}


def _chunks(text: str, n: int) -> list[str]:
    return [text[i:i + n] for i in range(0, len(text), n)] or [""]


def _events(msg: Mapping[str, Any], fault: str | None) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events of ``msg`` in the real order, with a stream fault applied."""
    start = {**msg, "content": [], "stop_reason": None,
             "usage": {**msg["usage"], "output_tokens": 1}}
    start["usage"].pop("output_tokens_details", None)
    ev: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    if fault == "error_event":
        return [*ev, ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})]
    for i, b in enumerate(msg["content"]):
        def delta(d: dict[str, Any], i: int = i) -> tuple[str, dict[str, Any]]:
            return "content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}
        kind = b["type"]
        opening = {"thinking": {"type": "thinking", "thinking": "", "signature": ""},
                   "text": {"type": "text", "text": ""},
                   "tool_use": {**b, "input": {}}}.get(kind, b)
        ev.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": opening}))
        if i == 0:
            ev.append(("ping", {"type": "ping"}))
        if kind == "thinking":
            ev.append(delta({"type": "thinking_delta", "thinking": ""}))
            ev += [delta({"type": "thinking_delta", "thinking": c}) for c in _chunks(b["thinking"], 24) if c]
            ev.append(delta({"type": "signature_delta", "signature": b["signature"]}))
            if fault == "repeat_signature":  # the delta carries the whole signature: a repeat is harmless
                ev.append(delta({"type": "signature_delta", "signature": b["signature"]}))
        elif kind == "text":
            ev += [delta({"type": "text_delta", "text": c}) for c in _chunks(b["text"], 16) if c]
            if fault == "orphan_signature":
                ev.append(delta({"type": "signature_delta", "signature": "EsAAAA"}))
        elif kind == "tool_use":
            raw = orjson.dumps(b["input"]).decode() if b["input"] else ""
            ev.append(delta({"type": "input_json_delta", "partial_json": ""}))
            ev += [delta({"type": "input_json_delta", "partial_json": c}) for c in _chunks(raw, 5) if c]
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    usage = {"output_tokens": msg["usage"]["output_tokens"]}
    if "output_tokens_details" in msg["usage"]:
        usage["output_tokens_details"] = msg["usage"]["output_tokens_details"]
    ev.append(("message_delta", {"type": "message_delta",
                                 "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                                 "usage": usage}))
    ev.append(("message_stop", {"type": "message_stop"}))
    if fault == "truncate":
        ev = ev[: max(3, len(ev) // 2)]
    return ev


# ----------------------------------------------------------------------------- HTTP


def _error(status: int, kind: str, message: str, request_id: str,
           headers: Mapping[str, str] | None = None) -> Response:
    return JSONResponse({"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id},
                        status_code=status, headers={"request-id": request_id, **(headers or {})})


_FAULTS: Mapping[str, tuple[int, str, str]] = {
    "500": (500, "api_error", "Internal server error"),
    "529": (529, "overloaded_error", "Overloaded"),
    "429": (429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
}


def _authorised(request: Request, kind: str) -> bool:
    h = request.headers
    if kind == "vertex":
        return h.get("authorization", "").startswith("Bearer ") and len(h["authorization"]) > 7
    bearer = h.get("authorization", "").startswith("Bearer ")  # the 2026 SDK sends the key as a bearer token
    return bool(h.get("x-api-key") or bearer or (kind == "foundry" and h.get("api-key")))


def _access_style(name: str, vendor: Vendor | None) -> tuple[str, tuple[str, ...]]:
    """Whose words an unknown model or bad key gets, and the personality's own models: a
    vendor's Anthropic endpoint answers in the shape of its other errors (``anthropic_vendors``)
    and serves the models of its chat personality."""
    if vendor is None:
        return "anthropic", ()
    own = FACTS[name.removesuffix("-anthropic")].models if name.removesuffix("-anthropic") in FACTS else ()
    style = {"deepseek-anthropic": "deepseek", "minimax-anthropic": "anthropic"}.get(name, "openai")
    return style, own


def _build(kind: str) -> Any:
    def build(state: EmulatorState, name: str) -> Starlette:
        vendor = VENDORS.get(name) if kind == "vendor" else None
        async def handler(request: Request) -> Response:
            rid = ("req_vrtx_" if kind == "vertex" else "req_") + secrets.token_hex(12)
            raw = await request.body()
            try:
                body = orjson.loads(raw)
            except orjson.JSONDecodeError:
                state.record(name, request, None)
                return _error(400, "invalid_request_error", "The request body is not valid JSON.", rid)
            state.record(name, request, body)
            if not _authorised(request, kind):
                if kind == "vertex":
                    return JSONResponse({"error": {"code": 401, "message": "Request is missing required "
                                         "authentication credential. Expected OAuth 2 access token.",
                                         "status": "UNAUTHENTICATED"}}, status_code=401)
                return _error(401, "authentication_error", "x-api-key header is required", rid)
            control = state.control(name)
            fault = state.take_fault(name)
            if fault is not None and fault in _FAULTS:
                status, etype, text = _FAULTS[fault]
                return _error(status, etype, text, rid, {"retry-after": "0"} if status == 429 else None)
            if (plain := transport_fault(fault)) is not None:
                return plain
            spec = request.path_params.get("spec", "")
            model = spec.partition(":")[0] if kind == "vertex" else (body.get("model") if isinstance(body, dict) else "")
            if kind == "vertex" and spec.partition(":")[2] not in ("rawPredict", "streamRawPredict"):
                return JSONResponse({"error": {"code": 404, "message": f"Unknown method {spec!r}",
                                               "status": "NOT_FOUND"}}, status_code=404)
            if kind == "direct" and not request.headers.get("anthropic-version"):
                return _error(400, "invalid_request_error", "anthropic-version: header is required", rid)
            try:
                if not isinstance(body, dict):
                    raise Invalid("Input should be a valid dictionary")
                check_schema(body, vertex=kind == "vertex",
                             roles=("user", "assistant", "system") if vendor is not None else ("user", "assistant"))
                check_drift(body, control.reject_fields)
                if not isinstance(model, str) or not model:
                    raise Invalid("model: Input should be a valid string")
                betas = frozenset(b.strip() for b in request.headers.get("anthropic-beta", "").split(",") if b.strip())
                if vendor is not None:
                    check_vendor(vendor, body, model)
                    dropped: list[str] = []
                else:
                    dropped = check_semantics(state, body, model, betas)
            except Invalid as e:
                if vendor is not None:
                    return JSONResponse(vendor_error(vendor, e), status_code=e.status)
                return _error(e.status, e.kind, str(e), rid)
            style, own = _access_style(name, vendor)
            if (refused := refusal(state.access, name, style, model, request.headers, own=own,
                                   check_key=kind != "vertex")) is not None:
                return refused
            content, stop = _script(state, body, model, betas, vendor)
            msg = _message(body, model, content, stop)
            if vendor is not None:
                if vendor.signature == "message_id":
                    msg["id"] = str(uuid.uuid4())  # DeepSeek's ids are UUIDs, and sign its blocks
                for b in msg["content"]:
                    if b["type"] == "thinking":
                        b["signature"] = vendor_signature(vendor, msg["id"])
            if dropped:  # what drop_block dropped, as the API lists it
                msg["input_transformations"] = [{"type": "thinking_dropped", "path": p, "reason": "prefix_mismatch"}
                                                for p in dropped]
            delay = control.delay if fault == "slow" else 0.0
            stream = body.get("stream") is True or spec.endswith(":streamRawPredict")
            if not stream:
                if delay:
                    await asyncio.sleep(delay)
                data = orjson.dumps(msg)
                if fault == "truncate":
                    data = data[: len(data) // 2]
                elif fault == "malformed":
                    data = b'{"type": "message", "content": [' + data[:40]
                return Response(data, 200, media_type="application/json", headers={"request-id": rid})
            return StreamingResponse(_sse(_events(msg, fault), fault, delay), media_type="text/event-stream",
                                     headers={"request-id": rid, "cache-control": "no-cache"})

        path = {"direct": "/v1/messages", "foundry": "/anthropic/v1/messages", "vendor": "/anthropic/v1/messages",
                "vertex": "/v1/projects/{project}/locations/{location}/publishers/anthropic/models/{spec}"}[kind]
        return Starlette(routes=[Route(path, handler, methods=["POST"])])

    return build


async def _sse(events: Sequence[tuple[str, dict[str, Any]]], fault: str | None, delay: float) -> AsyncIterator[bytes]:
    for n, (event, data) in enumerate(events):
        if delay:
            await asyncio.sleep(delay)
        if fault == "malformed" and n == 2:
            yield b"event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\n\n"
        yield b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


register(Personality("anthropic", _build("direct"), base_path=""))
register(Personality("anthropic-vertex", _build("vertex"), base_path="/v1/projects/test/locations/global"))
register(Personality("anthropic-foundry", _build("foundry"), base_path="/anthropic"))
for _vendor in VENDORS:  # the vendors' Anthropic-compatible endpoints (anthropic_vendors)
    register(Personality(_vendor, _build("vendor"), base_path="/anthropic"))
