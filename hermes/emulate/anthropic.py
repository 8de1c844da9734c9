"""Anthropic Messages emulators: direct API, Vertex AI ``rawPredict`` and Azure Foundry.

They validate like the real service (the Messages API reference and its observed errors), so a client bug
shows up here as the error text users would see:

* unknown fields at any depth → ``<json.path>: Extra inputs are not permitted``;
* with thinking on, the assistant turn before the latest tool results must start with a
  thinking block (the real "Expected `thinking` or `redacted_thinking`" error);
* every replayed ``thinking`` signature and ``redacted_thinking`` payload is an HMAC bound to
  (model, block content): a block from another model, or changed by one byte, is refused
  with "Invalid `signature` in `thinking` block";
* thinking in a final-position assistant message while thinking is off is refused;
* tool-use ids (and ``tool_use_id``) outside ``^[a-zA-Z0-9_-]+$`` are refused with the real
  pattern error.

The model is ``script.next_step``; a user text containing ``#steps=N`` asks for N tool calls
(the offered tools in turn) before the answer, and ``#call=NAME{json args}`` directives
name the calls exactly (``script.directed_step``). Ids containing ``redact`` also return a
``redacted_thinking`` block; ids containing ``opus-5`` omit thinking text (display
``omitted``: empty ``thinking`` with a valid signature). Faults: ``500``, ``529``, ``429``,
``truncate``, ``malformed``, ``slow``, ``error_event``, ``orphan_signature``,
``repeat_signature`` (each ``signature_delta`` sent twice), ``html502``,
``empty200``, ``text4xx``; drift: ``reject_fields``.
"""

from __future__ import annotations

import asyncio
import base64
import re
import secrets
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .core import EmulatorState, Personality, register, transport_fault
from .script import directed_step, next_step

__all__ = ["FAMILY", "mint_redacted", "mint_signature", "verify_redacted", "verify_signature"]

FAMILY = "anthropic"
"""Signatures are shared by the direct API, Vertex and Foundry; they are bound to the model."""

_TEXT = {"type", "text", "cache_control", "citations"}
_BLOCKS: Mapping[str, set[str]] = {
    "text": _TEXT,
    "thinking": {"type", "thinking", "signature"},
    "redacted_thinking": {"type", "data"},
    "tool_use": {"type", "id", "name", "input", "cache_control", "caller", "toolset_name"},
    "tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control", "toolset_name"},
    "image": {"type", "source", "cache_control"},
    "document": {"type", "source", "title", "context", "citations", "cache_control"},
}
_TOP = {"model", "messages", "max_tokens", "system", "tools", "tool_choice", "thinking", "stream",
        "temperature", "top_p", "top_k", "stop_sequences", "metadata", "output_config",
        "context_management", "service_tier", "container", "inference_geo"}
_TOOL = {"name", "description", "input_schema", "cache_control", "type", "defer_loading", "input_examples",
         "strict", "eager_input_streaming", "allowed_callers"}
_THINKING = {"enabled": {"type", "budget_tokens", "display"}, "adaptive": {"type", "display"},
             "disabled": {"type"}}
_NESTED = {"output_config": {"effort", "format"}, "tool_choice": {"type", "name", "disable_parallel_tool_use"},
           "metadata": {"user_id"}}
_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
"""Tool-use ids (and the ``tool_use_id`` answering one). The real 400 text is quoted in
docs/emulators.md: ``messages.N.content.M.tool_use.id: String should match pattern
'^[a-zA-Z0-9_-]+$'`` — what Kimi's ``functions.NAME:N`` ids get on the direct API, Vertex and
Foundry (user reports in ClawRouter and forgecode issue threads; nanobot sanitises for it)."""
_ID_FIELDS: Mapping[str, tuple[str, ...]] = {"tool_use": ("id",), "tool_result": ("tool_use_id",)}


# ----------------------------------------------------------------------------- signatures


def _mac(state: EmulatorState, kind: str, model: str, nonce: bytes, content: str) -> bytes:
    minted = state.mint(kind, model, f"{nonce.hex()}\0{content}")
    return base64.b64decode(minted[2:])


def mint_signature(state: EmulatorState, model: str, thinking: str) -> str:
    """A thinking-block signature: standard base64 starting ``Es``, bound to model and text."""
    nonce = secrets.token_bytes(9)
    return "Es" + base64.b64encode(nonce + _mac(state, FAMILY, model, nonce, thinking)).decode()


def verify_signature(state: EmulatorState, model: str, thinking: str, signature: str) -> bool:
    try:
        raw = base64.b64decode(signature[2:], validate=True) if signature.startswith("Es") else b""
    except ValueError:
        return False
    nonce, mac = raw[:9], raw[9:]
    return len(raw) == 57 and secrets.compare_digest(mac, _mac(state, FAMILY, model, nonce, thinking))


def mint_redacted(state: EmulatorState, model: str) -> str:
    """An opaque ``redacted_thinking`` payload, bound to the model."""
    nonce = secrets.token_bytes(12)
    return "Eq" + base64.b64encode(nonce + _mac(state, FAMILY + ".redacted", model, nonce, "")).decode()


def verify_redacted(state: EmulatorState, model: str, data: str) -> bool:
    try:
        raw = base64.b64decode(data[2:], validate=True) if data.startswith("Eq") else b""
    except ValueError:
        return False
    nonce, mac = raw[:12], raw[12:]
    return len(raw) == 60 and secrets.compare_digest(mac, _mac(state, FAMILY + ".redacted", model, nonce, ""))


# ----------------------------------------------------------------------------- validation


class _Invalid(Exception):
    def __init__(self, message: str, status: int = 400, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


def _extra(obj: Any, allowed: set[str], path: str) -> None:
    if not isinstance(obj, Mapping):
        raise _Invalid(f"{path}: Input should be a valid dictionary or object to extract fields from")
    for k in obj:
        if k not in allowed:
            raise _Invalid(f"{path}.{k}: Extra inputs are not permitted" if path else f"{k}: Extra inputs are not permitted")


def _block_schema(block: Any, path: str) -> str:
    if not isinstance(block, Mapping):
        raise _Invalid(f"{path}: Input should be a valid dictionary or object to extract fields from")
    kind = str(block.get("type"))
    if kind not in _BLOCKS:
        tags = ", ".join(f"'{t}'" for t in _BLOCKS)
        raise _Invalid(f"{path}: Input tag '{kind}' found using 'type' does not match any of the expected tags: {tags}")
    _extra(block, _BLOCKS[kind], f"{path}.{kind}")
    for name in _ID_FIELDS.get(kind, ()):
        value = block.get(name)
        if isinstance(value, str) and not _ID.fullmatch(value):
            raise _Invalid(f"{path}.{kind}.{name}: String should match pattern '{_ID.pattern}'")
    if kind == "tool_result" and isinstance(block.get("content"), list):
        for k, inner in enumerate(block["content"]):
            _block_schema(inner, f"{path}.{kind}.content.{k}")
    return kind


def _schema(body: Mapping[str, Any], *, vertex: bool) -> None:
    allowed = (_TOP - {"model"}) | {"anthropic_version"} if vertex else _TOP
    _extra(body, allowed, "")
    required = ("anthropic_version", "max_tokens", "messages") if vertex else ("model", "max_tokens", "messages")
    for name in required:
        if name not in body:
            raise _Invalid(f"{name}: Field required")
    if vertex and not re.fullmatch(r"(vertex-)?\d{4}-\d{2}-\d{2}", str(body["anthropic_version"])):
        # the documented value is vertex-2023-10-16; the 2026 SDK sends its dated API version
        raise _Invalid("anthropic_version: Input should be 'vertex-2023-10-16'")
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
        raise _Invalid("max_tokens: Input should be a valid integer greater than or equal to 1")
    if not isinstance(body["messages"], list):
        raise _Invalid("messages: Input should be a valid list")
    for i, m in enumerate(body["messages"]):
        _extra(m, {"role", "content"}, f"messages.{i}")
        if m.get("role") not in ("user", "assistant"):
            raise _Invalid(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        content = m.get("content")
        if isinstance(content, list):
            if not content:
                raise _Invalid(f"messages.{i}: all messages must have non-empty content except for the "
                               "optional final assistant message")
            for j, block in enumerate(content):
                _block_schema(block, f"messages.{i}.content.{j}")
        elif not isinstance(content, str):
            raise _Invalid(f"messages.{i}.content: Input should be a valid string or list")
    system = body.get("system")
    if isinstance(system, list):
        for j, block in enumerate(system):
            _extra(block, _TEXT, f"system.{j}")
    for j, tool in enumerate(body.get("tools") or []):
        _extra(tool, _TOOL, f"tools.{j}.custom")
    thinking = body.get("thinking")
    if thinking is not None:
        kind = thinking.get("type") if isinstance(thinking, Mapping) else None
        if kind not in _THINKING:
            raise _Invalid("thinking: Input tag found using 'type' does not match any of the expected tags: "
                           "'enabled', 'disabled', 'adaptive'")
        _extra(thinking, _THINKING[kind], f"thinking.{kind}")
        if kind == "enabled":
            budget = thinking.get("budget_tokens")
            if not isinstance(budget, int) or budget < 1024:
                raise _Invalid("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
            if body["max_tokens"] <= budget:
                raise _Invalid("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                               f"documentation at {_DOCS}#max-tokens-and-context-window-size")
    for name, keys in _NESTED.items():
        if name in body:
            _extra(body[name], keys, name)


def _drift(obj: Any, reject: set[str], path: str = "") -> None:
    """Drift control: a field the provider stopped accepting, found at any depth."""
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            here = f"{path}.{k}" if path else str(k)
            if k in reject:
                raise _Invalid(f"{here}: Extra inputs are not permitted")
            _drift(v, reject, here)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _drift(v, reject, f"{path}.{i}")


def _blocks(m: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    c = m.get("content")
    return list(c) if isinstance(c, list) else [{"type": "text", "text": c}]


def _semantics(state: EmulatorState, body: Mapping[str, Any], model: str) -> None:
    msgs: list[Mapping[str, Any]] = body["messages"]
    for i, m in enumerate(msgs):
        blocks = _blocks(m)
        prev_ids = {b.get("id") for b in _blocks(msgs[i - 1]) if b.get("type") == "tool_use"} if i else set()
        if m["role"] == "user":
            for j, b in enumerate(blocks):
                if b.get("type") == "tool_result" and b.get("tool_use_id") not in prev_ids:
                    raise _Invalid(f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` "
                                   f"blocks: {b.get('tool_use_id')}. Each `tool_result` block must have a "
                                   "corresponding `tool_use` block in the previous message.")
        ids = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
        if m["role"] == "assistant" and ids:
            answered = {b.get("tool_use_id") for b in _blocks(msgs[i + 1])} if i + 1 < len(msgs) else set()
            missing = [x for x in ids if x not in answered]
            if missing:
                raise _Invalid(f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
                               f"after: {', '.join(map(str, missing))}. Each `tool_use` block must have a "
                               "corresponding `tool_result` block in the next message.")
    thinking = _thinking_on(body)
    last = max((i for i, m in enumerate(msgs) if m["role"] == "assistant"), default=None)
    if last is not None:
        blocks = _blocks(msgs[last])
        loop = last + 1 < len(msgs) and any(b.get("type") == "tool_result" for b in _blocks(msgs[last + 1]))
        has_tool = any(b.get("type") == "tool_use" for b in blocks)
        first = blocks[0].get("type") if blocks else None
        if thinking and loop and has_tool and first not in ("thinking", "redacted_thinking"):
            raise _Invalid(
                f"messages.{last}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. "
                "When `thinking` is enabled, a final `assistant` message must start with a thinking block "
                "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include "
                "thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please "
                f"consult our documentation at {_DOCS}")
        if not thinking and last == len(msgs) - 1:
            for j, b in enumerate(blocks):
                if b.get("type") in ("thinking", "redacted_thinking"):
                    raise _Invalid(f"messages.{last}.content.{j}: When thinking is disabled, an `assistant` message "
                                   "in the final position cannot contain `thinking`. To use thinking blocks, enable "
                                   "`thinking` in your request.")
    for i, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        for j, b in enumerate(_blocks(m)):
            if b.get("type") == "thinking":
                if not (isinstance(b.get("thinking"), str) and isinstance(b.get("signature"), str)
                        and verify_signature(state, model, b["thinking"], b["signature"])):
                    raise _Invalid(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block")
            elif b.get("type") == "redacted_thinking" and not (
                    isinstance(b.get("data"), str) and verify_redacted(state, model, b["data"])):
                if i == last:
                    raise _Invalid(f"messages.{i}.content.{j}: `thinking` or `redacted_thinking` blocks in the "
                                   "latest assistant message cannot be modified. These blocks must remain as "
                                   "they were in the original response.")
                raise _Invalid(f"messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block")


def _thinking_on(body: Mapping[str, Any]) -> bool:
    t = body.get("thinking")
    return isinstance(t, Mapping) and t.get("type") in ("enabled", "adaptive")


# ----------------------------------------------------------------------------- the model


def _script(state: EmulatorState, body: Mapping[str, Any], model: str) -> tuple[list[dict[str, Any]], str]:
    """(content blocks, stop_reason) the scripted model answers with."""
    msgs: list[Mapping[str, Any]] = body["messages"]
    user_at = max((i for i, m in enumerate(msgs) if m["role"] == "user"
                   and any(b.get("type") == "text" for b in _blocks(m))), default=-1)
    user_text = " ".join(b.get("text", "") for b in _blocks(msgs[user_at]) if b.get("type") == "text") \
        if user_at >= 0 else ""
    results = sum(1 for m in msgs[user_at + 1:] for b in _blocks(m) if b.get("type") == "tool_result")
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
    if _thinking_on(body):
        display = (body.get("thinking") or {}).get("display") or ("omitted" if "opus-5" in model else "summarized")
        shown = "" if display == "omitted" else reasoning
        content.append({"type": "thinking", "thinking": shown, "signature": mint_signature(state, model, shown)})
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


def _build(kind: str) -> Any:
    def build(state: EmulatorState, name: str) -> Starlette:
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
                    raise _Invalid("Input should be a valid dictionary")
                _schema(body, vertex=kind == "vertex")
                _drift(body, control.reject_fields)
                if not isinstance(model, str) or not model:
                    raise _Invalid("model: Input should be a valid string")
                _semantics(state, body, model)
            except _Invalid as e:
                return _error(e.status, e.kind, str(e), rid)
            content, stop = _script(state, body, model)
            msg = _message(body, model, content, stop)
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

        path = {"direct": "/v1/messages", "foundry": "/anthropic/v1/messages",
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
