"""Emulators of the OpenAI Responses API and xAI's: ``POST {base}/responses``.

They validate like the real services (texts as the services return them):

* unknown top-level parameters and unknown keys on input items (``status`` on a replayed
  reasoning item, ...) → 400 ``Unknown parameter: 'input[N].key'.`` / ``unknown_parameter``;
* a reasoning item without its following item → 400 ``Item 'rs_…' of type 'reasoning' was
  provided without its required following item.``;
* ``encrypted_content`` is minted here, bound to (personality, model, item id) — a
  Fernet-like ``gAAAAA…`` token for OpenAI, plain base64 for xAI — and verified byte-exact
  on replay: a tampered, truncated or other-model blob → 400 ``invalid_encrypted_content``;
* missing reasoning items are accepted silently (the real services do the same);
* o-series models take ``reasoning.effort`` low|medium|high only → 400 ``unsupported_value``
  (the real text, recorded through OpenRouter in pydantic-ai's cassette
  ``tests/models/cassettes/test_openrouter/test_openrouter_thinking_false_on_always_on_route.yaml``);
* earlier turns' reasoning items are read (counted in ``input_tokens``) only by models that
  read them: never by o-series models, by gpt-5.4 / 5.5 only with ``reasoning.context:
  all_turns`` (the openai-python ``Reasoning.context`` docstring; 5.6 reads them by default).

The model is ``script.next_step``, or ``script.directed_step`` when the user text scripts its
calls (``#call=NAME{json args}``), as on the other emulators.

Streams follow the recorded event order, including the *partial* ``encrypted_content`` in
``response.output_item.added`` (only ``response.output_item.done`` has the full token).
``stream_events(response)`` is the pure serialiser, reusable by tests.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .access import refusal
from .core import EmulatorState, Personality, register, transport_fault
from .script import directed_step, next_step

__all__ = ["PREFIXES", "build", "partial_blob", "stream_events"]

PREFIXES = {"openai-responses": "gAAAAAB", "xai-responses": ""}
"""Blob shape per personality: OpenAI's Fernet-like tokens, xAI's plain base64."""

TOP_LEVEL = frozenset({
    "access_programs", "background", "background_options", "context_management", "conversation", "image",
    "include", "input", "instructions", "max_output_tokens", "max_tool_calls", "metadata", "model",
    "moderation", "parallel_tool_calls", "previous_response_id", "prompt", "prompt_cache_key",
    "prompt_cache_options", "prompt_cache_retention", "reasoning", "safety_identifier", "service_tier",
    "store", "stream", "stream_options", "temperature", "text", "tool_choice", "tools", "top_logprobs",
    "top_p", "truncation", "user",
})
ITEM_KEYS: dict[str, frozenset[str]] = {
    "message": frozenset({"type", "role", "content", "id", "status"}),
    "reasoning": frozenset({"type", "id", "summary", "content", "encrypted_content"}),
    "function_call": frozenset({"type", "id", "call_id", "name", "arguments", "status"}),
    "function_call_output": frozenset({"type", "id", "call_id", "output", "status"}),
}
CONTENT_KEYS: dict[str, frozenset[str]] = {
    "input_text": frozenset({"type", "text"}),
    "output_text": frozenset({"type", "text", "annotations", "logprobs"}),
    "refusal": frozenset({"type", "refusal"}),
}
TOOL_KEYS = frozenset({"type", "name", "description", "parameters", "strict", "defer_loading"})
NAMESPACE_KEYS = frozenset({"type", "name", "description", "tools"})
"""A ``namespace`` tool: named group of function tools (OpenAI's function-calling and tool-search guides)."""
HOSTED = frozenset({"web_search", "web_search_preview", "tool_search", "file_search", "code_interpreter",
                    "image_generation", "mcp", "local_shell", "computer_use_preview"})
"""Tools the service runs itself (the Responses API reference's tool types): not validated here."""
FOLLOWERS = ("message", "function_call")


class _Bad(Exception):
    def __init__(self, message: str, *, param: str | None, code: str | None, status: int = 400) -> None:
        super().__init__(message)
        self.body = {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}
        self.status = status


def _unknown(path: str) -> _Bad:
    return _Bad(f"Unknown parameter: '{path}'.", param=path, code="unknown_parameter")


def _missing(path: str) -> _Bad:
    return _Bad(f"Missing required parameter: '{path}'.", param=path, code="missing_required_parameter")


def _blob_text(blob: str) -> str:
    return f"{blob[:4]}...{blob[-4:]}" if len(blob) > 8 else blob


def partial_blob(blob: str) -> str:
    """What ``output_item.added`` carries: a truncated prefix of the final token."""
    return blob[: max(1, len(blob) * 3 // 5)]


# ----------------------------------------------------------------------------- validation


def _item_type(item: Mapping[str, Any]) -> str:
    t = item.get("type")
    if t is None and "role" in item:
        return "message"
    return str(t)


UNVERIFIED = "unverified"
"""An API key containing this stands for an organisation that is not verified: reasoning
summaries are refused with OpenAI's real body (OpenHands software-agent-sdk issue 987)."""


def _validate(state: EmulatorState, name: str, body: Mapping[str, Any], *, verified: bool = True) -> None:
    if not verified and (body.get("reasoning") or {}).get("summary"):
        raise _Bad("Your organization must be verified to generate reasoning summaries. Please go to: "
                   "https://platform.openai.com/settings/organization/general and click on Verify Organization. "
                   "If you just verified, it can take up to 15 minutes for access to propagate.",
                   param="reasoning.summary", code="unsupported_value")
    rejected = state.control(name).reject_fields
    for key in body:
        if key not in TOP_LEVEL or key in rejected:
            raise _unknown(key)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _missing("model")
    effort = (body.get("reasoning") or {}).get("effort")
    takes = efforts_of(model)
    if effort is not None and takes and effort not in takes:
        listed = ", ".join(f"'{a}'" for a in takes[:-1]) + f", and '{takes[-1]}'"
        raise _Bad(f"Unsupported value: '{effort}' is not supported with the '{model}' model. Supported values "
                   f"are: {listed}.", param="reasoning.effort", code="unsupported_value")
    for n, tool in enumerate(body.get("tools") or []):
        if tool.get("type") in HOSTED:
            continue
        if tool.get("type") == "namespace":
            for key in tool:
                if key not in NAMESPACE_KEYS:
                    raise _unknown(f"tools[{n}].{key}")
            for m, inner in enumerate(tool.get("tools") or []):
                _validate_function(inner, f"tools[{n}].tools[{m}]")
            continue
        _validate_function(tool, f"tools[{n}]")
    items = body.get("input")
    if isinstance(items, str) or items is None:
        return
    if not isinstance(items, list):
        raise _Bad("Invalid type for 'input': expected a string or an array.", param="input", code="invalid_type")
    calls: set[str] = set()
    for n, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise _Bad(f"Invalid type for 'input[{n}]': expected an object.", param=f"input[{n}]",
                       code="invalid_type")
        kind = _item_type(item)
        allowed = ITEM_KEYS.get(kind)
        if allowed is None:
            raise _Bad(f"Invalid value: '{kind}'. Supported values are: 'message', 'reasoning', "
                       "'function_call', and 'function_call_output'.", param=f"input[{n}].type",
                       code="invalid_value")
        for key in item:
            if key not in allowed or key in rejected:
                raise _unknown(f"input[{n}].{key}")
        if kind == "message":
            _validate_content(item, n)
        elif kind == "reasoning":
            _validate_reasoning(state, name, model, items, n, store=body.get("store", True))
        elif kind == "function_call":
            for key in ("call_id", "name", "arguments"):
                if not isinstance(item.get(key), str):
                    raise _missing(f"input[{n}].{key}")
            calls.add(item["call_id"])
        else:
            if not isinstance(item.get("call_id"), str):
                raise _missing(f"input[{n}].call_id")
            if item["call_id"] not in calls:
                raise _Bad(f"No tool call found for function call output with call_id {item['call_id']}.",
                           param="input", code=None)


def _validate_function(tool: Mapping[str, Any], at: str) -> None:
    for key in tool:
        if key not in TOOL_KEYS:
            raise _unknown(f"{at}.{key}")
    if tool.get("type") != "function" or not tool.get("name"):
        raise _missing(f"{at}.name")


def _validate_content(item: Mapping[str, Any], n: int) -> None:
    content = item.get("content")
    if item.get("role") not in ("user", "system", "developer", "assistant"):
        raise _missing(f"input[{n}].role")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise _missing(f"input[{n}].content")
    for m, c in enumerate(content):
        allowed = CONTENT_KEYS.get(str(c.get("type")) if isinstance(c, Mapping) else "")
        if allowed is None:
            raise _Bad(f"Invalid value: {c.get('type') if isinstance(c, Mapping) else c!r}.",
                       param=f"input[{n}].content[{m}].type", code="invalid_value")
        for key in c:
            if key not in allowed:
                raise _unknown(f"input[{n}].content[{m}].{key}")


def _validate_reasoning(state: EmulatorState, name: str, model: str, items: Sequence[Any], n: int,
                        *, store: Any) -> None:
    item = items[n]
    if not isinstance(item.get("id"), str):
        raise _missing(f"input[{n}].id")
    if not isinstance(item.get("summary"), list):
        raise _missing(f"input[{n}].summary")
    ident = item["id"]
    nxt = items[n + 1] if n + 1 < len(items) else None
    if not isinstance(nxt, Mapping) or _item_type(nxt) not in FOLLOWERS or (
            _item_type(nxt) == "message" and nxt.get("role") != "assistant"):
        raise _Bad(f"Item '{ident}' of type 'reasoning' was provided without its required following item.",
                   param="input", code=None)
    blob = item.get("encrypted_content")
    if blob is None:
        if store is False:
            raise _Bad(f"Item with id '{ident}' not found. Items are not persisted when `store` is set to "
                       "false. Try again with `store` set to true, or remove this item from your input.",
                       param="input", code=None, status=404)
        return
    if not isinstance(blob, str) or not state.verify(name, model, ident, blob, prefix=PREFIXES[name]):
        text = _blob_text(blob if isinstance(blob, str) else repr(blob))
        raise _Bad(f"The encrypted content {text} could not be verified.", param=None,
                   code="invalid_encrypted_content")


# ----------------------------------------------------------------------------- the model


def _user_text(items: Any) -> tuple[str, int]:
    """(last user text, function_call_output items after it)."""
    if isinstance(items, str):
        return items, 0
    text, results = "", 0
    for item in items or []:
        kind = _item_type(item)
        if kind == "message" and item.get("role") == "user":
            content = item.get("content")
            text = content if isinstance(content, str) else "".join(
                c.get("text", "") for c in content or [] if isinstance(c, Mapping))
            results = 0
        elif kind == "function_call_output":
            results += 1
    return text, results


def _tokens(obj: Any) -> int:
    return max(1, len(orjson.dumps(obj)) // 4)


O_SERIES = "o[1-9]*"
EFFORTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (O_SERIES, ("low", "medium", "high")),
    # openai-agents-python issue 2089 quotes the gpt-5.1 refusal of `minimal` word for word
    ("gpt-5.1-codex-max*", ("none", "low", "medium", "high", "xhigh")),
    ("gpt-5.[2-9]*", ("none", "low", "medium", "high", "xhigh")),
    ("gpt-6*", ("none", "low", "medium", "high", "xhigh")),
    ("gpt-5.[1-9]*", ("none", "low", "medium", "high")),
    ("gpt-5", ("minimal", "low", "medium", "high")),
    ("gpt-5-*", ("minimal", "low", "medium", "high")),
)
"""(model glob, the ``reasoning.effort`` values it takes), first match wins (OpenAI's reasoning guide)."""


def efforts_of(model: str) -> tuple[str, ...]:
    """The effort values ``model`` takes (empty: any)."""
    m = model.lower()
    return next((values for glob, values in EFFORTS if fnmatchcase(m, glob)), ())
"""Reasoning models that never read earlier turns' reasoning items."""
ALL_TURNS_ONLY = ("gpt-5.4*", "gpt-5.5*")
"""Models that read earlier turns' reasoning items only with ``reasoning.context: all_turns``."""


def _input_tokens(model: str, body: Mapping[str, Any]) -> int:
    """Input tokens, without the earlier turns' reasoning items the model does not read."""
    items = body.get("input")
    if not isinstance(items, list):
        return _tokens(items)
    m = model.lower()
    context = (body.get("reasoning") or {}).get("context")
    reads = not fnmatchcase(m, O_SERIES) and (context == "all_turns"
                                               or not any(fnmatchcase(m, g) for g in ALL_TURNS_ONLY))
    if reads:
        return _tokens(items)
    last_user = max((i for i, it in enumerate(items) if isinstance(it, Mapping) and _item_type(it) == "message"
                     and it.get("role") == "user"), default=-1)
    return _tokens([it for i, it in enumerate(items)
                    if not (i < last_user and isinstance(it, Mapping) and _item_type(it) == "reasoning")])


def _respond(state: EmulatorState, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """The completed response object for one request, played by the scripted model."""
    model = body["model"]
    text, results = _user_text(body.get("input"))
    tools = [(t["name"], t.get("parameters")) for t in body.get("tools") or [] if t.get("type") == "function"]
    step = directed_step(user_text=text, tool_results_since_user=results, model=model) or next_step(
        user_text=text, tools=tools, tool_results_since_user=results, model=model)
    rid = "rs_" + secrets.token_hex(24)
    reasoning_cfg = body.get("reasoning") or {}
    summary = [{"type": "summary_text", "text": step.reasoning}] if reasoning_cfg.get("summary") else []
    blob = state.mint(name, model, rid, prefix=PREFIXES[name])
    output: list[dict[str, Any]] = [{"id": rid, "type": "reasoning", "summary": summary,
                                     "encrypted_content": blob, "status": "completed"}]
    if step.kind == "tool" and step.tool:
        output.append({"id": "fc_" + secrets.token_hex(24), "type": "function_call", "status": "completed",
                       "arguments": orjson.dumps(dict(step.args)).decode(),
                       "call_id": "call_" + secrets.token_hex(12), "name": step.tool})
    else:
        output.append({"id": "msg_" + secrets.token_hex(24), "type": "message", "status": "completed",
                       "role": "assistant", "content": [{"type": "output_text", "text": step.answer,
                                                         "annotations": [], "logprobs": []}]})
    inp, out, reasoning = _input_tokens(model, body), _tokens(output[1:]), _tokens(step.reasoning)
    return {
        "id": "resp_" + secrets.token_hex(24), "object": "response", "created_at": int(time.time()),
        "status": "completed", "background": False, "error": None, "incomplete_details": None,
        "instructions": body.get("instructions"), "max_output_tokens": body.get("max_output_tokens"),
        "model": model, "output": output, "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": None,
        "reasoning": {"effort": reasoning_cfg.get("effort", "medium"), "summary": reasoning_cfg.get("summary")},
        "service_tier": "default", "store": body.get("store", True), "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"}, "tool_choice": body.get("tool_choice", "auto"),
        "tools": [{"type": "function", "name": t["name"], "description": t.get("description"),
                   "parameters": t.get("parameters"), "strict": t.get("strict", True)}
                  if t.get("type") == "function" else dict(t) for t in body.get("tools") or []],
        "top_p": 1.0, "truncation": "disabled",
        "usage": {"input_tokens": inp, "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": out + reasoning, "output_tokens_details": {"reasoning_tokens": reasoning},
                  "total_tokens": inp + out + reasoning},
        "user": None, "metadata": {},
    }


# ----------------------------------------------------------------------------- streaming


def _chunks(text: str, size: int = 12) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or []


def _item_events(item: Mapping[str, Any], oi: int) -> list[dict[str, Any]]:
    """The events of one output item, in the recorded order."""
    ev: list[dict[str, Any]] = []
    kind, ident = item.get("type"), item.get("id")
    at = {"item_id": ident, "output_index": oi}
    if kind == "reasoning":
        blob = item.get("encrypted_content")
        added = {**item, "summary": [], "status": "in_progress"}
        added.pop("content", None)
        if isinstance(blob, str):
            added["encrypted_content"] = partial_blob(blob)
        ev.append({"type": "response.output_item.added", "output_index": oi, "item": added})
        for si, part in enumerate(item.get("summary") or []):
            ev.append({"type": "response.reasoning_summary_part.added", **at, "summary_index": si,
                       "part": {"type": "summary_text", "text": ""}})
            ev += [{"type": "response.reasoning_summary_text.delta", **at, "summary_index": si, "delta": d}
                   for d in _chunks(part["text"])]
            ev.append({"type": "response.reasoning_summary_text.done", **at, "summary_index": si,
                       "text": part["text"]})
            ev.append({"type": "response.reasoning_summary_part.done", **at, "summary_index": si, "part": part})
        for ci, part in enumerate(item.get("content") or []):
            ev.append({"type": "response.content_part.added", **at, "content_index": ci,
                       "part": {"type": "reasoning_text", "text": ""}})
            ev += [{"type": "response.reasoning_text.delta", **at, "content_index": ci, "delta": d}
                   for d in _chunks(part["text"])]
            ev.append({"type": "response.reasoning_text.done", **at, "content_index": ci, "text": part["text"]})
            ev.append({"type": "response.content_part.done", **at, "content_index": ci, "part": part})
    elif kind == "function_call":
        ev.append({"type": "response.output_item.added", "output_index": oi,
                   "item": {**item, "arguments": "", "status": "in_progress"}})
        ev += [{"type": "response.function_call_arguments.delta", **at, "delta": d}
               for d in _chunks(item.get("arguments") or "")]
        ev.append({"type": "response.function_call_arguments.done", **at, "name": item.get("name"),
                   "arguments": item.get("arguments") or ""})
    elif kind == "message":
        ev.append({"type": "response.output_item.added", "output_index": oi,
                   "item": {**item, "content": [], "status": "in_progress"}})
        for ci, part in enumerate(item.get("content") or []):
            is_text = part.get("type") == "output_text"
            text = part.get("text" if is_text else "refusal") or ""
            empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []} if is_text else \
                {"type": "refusal", "refusal": ""}
            ev.append({"type": "response.content_part.added", **at, "content_index": ci, "part": empty})
            name = "response.output_text" if is_text else "response.refusal"
            ev += [{"type": f"{name}.delta", **at, "content_index": ci, "delta": d,
                    **({"logprobs": []} if is_text else {})} for d in _chunks(text)]
            ev.append({"type": f"{name}.done", **at, "content_index": ci,
                       **({"text": text, "logprobs": []} if is_text else {"refusal": text})})
            ev.append({"type": "response.content_part.done", **at, "content_index": ci, "part": part})
    ev.append({"type": "response.output_item.done", "output_index": oi, "item": item})
    return ev


def stream_events(response: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(event name, payload) pairs for a completed response, with sequence numbers. Pure."""
    pending = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": pending},
                                    {"type": "response.in_progress", "response": pending}]
    for oi, item in enumerate(response.get("output") or []):
        events += _item_events(item, oi)
    final = "response.incomplete" if response.get("status") == "incomplete" else (
        "response.failed" if response.get("status") == "failed" else "response.completed")
    events.append({"type": final, "response": response})
    return [(e["type"], {"type": e["type"], "sequence_number": n, **{k: v for k, v in e.items() if k != "type"}})
            for n, e in enumerate(events)]


def _sse(event: str, data: bytes) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + data + b"\n\n"


async def _stream(events: list[tuple[str, dict[str, Any]]], fault: str | None, delay: float) -> AsyncIterator[bytes]:
    cut = len(events) - 1 if fault == "truncate" else None
    bad_at = len(events) // 2 if fault == "malformed" else None
    for n, (event, data) in enumerate(events):
        if n == cut:
            return
        if n == bad_at:
            yield _sse(event, b'{"type": "' + event.encode() + b'", "delta": ')
            continue
        if delay:
            await asyncio.sleep(delay)
        yield _sse(event, orjson.dumps(data))


# ----------------------------------------------------------------------------- the app


def _fault_response(fault: str) -> Response | None:
    match fault:
        case "500":
            return JSONResponse({"error": {"message": "The server had an error while processing your request. "
                                           "Sorry about that!", "type": "server_error", "param": None,
                                           "code": "server_error"}}, status_code=500)
        case "429":
            return JSONResponse({"error": {"message": "Rate limit reached for requests. Please try again in "
                                           "0s.", "type": "requests", "param": None, "code": "rate_limit_exceeded"}},
                                status_code=429, headers={"retry-after": "0"})
    return transport_fault(fault)


def build(state: EmulatorState, name: str) -> Starlette:
    async def responses(request: Request) -> Response:
        raw = await request.body()
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            state.record(name, request, raw.decode("utf-8", "replace"))
            return JSONResponse({"error": {"message": "We could not parse the JSON body of your request.",
                                           "type": "invalid_request_error", "param": None, "code": None}},
                                status_code=400)
        state.record(name, request, body)
        if not request.headers.get("authorization", "").startswith("Bearer "):
            return JSONResponse({"error": {"message": "You didn't provide an API key.", "type":
                                           "invalid_request_error", "param": None, "code": None}},
                                status_code=401)
        if isinstance(body, dict) and (refused := refusal(state.access, name, "openai", str(body.get("model") or ""),
                                                          request.headers)) is not None:
            return refused
        fault = state.take_fault(name)
        early = _fault_response(fault) if fault else None
        if early is not None:
            return early
        if not isinstance(body, dict):
            return JSONResponse(_Bad("Invalid body: expected an object.", param=None, code=None).body,
                                status_code=400)
        try:
            _validate(state, name, body, verified=UNVERIFIED not in request.headers.get("authorization", ""))
        except _Bad as e:
            return JSONResponse(e.body, status_code=e.status)
        if state.control(name).first_token:
            await asyncio.sleep(state.control(name).first_token)
        response = _respond(state, name, body)
        if fault == "failed":
            response = {**response, "status": "failed", "output": [],
                        "error": {"code": "server_error", "message": "The model failed to generate a response."}}
        if body.get("stream"):
            delay = state.control(name).delay or (0.05 if fault == "slow" else 0.0)
            return StreamingResponse(_stream(stream_events(response), fault, delay),
                                     media_type="text/event-stream")
        if fault == "truncate":
            return Response(orjson.dumps(response)[:200], media_type="application/json")
        if fault == "malformed":
            return Response(b"data: {not json", media_type="application/json")
        if fault == "slow":
            await asyncio.sleep(state.control(name).delay or 0.05)
        return JSONResponse(response)

    return Starlette(routes=[Route("/v1/responses", responses, methods=["POST"])])


for _name in PREFIXES:
    register(Personality(_name, build, base_path="/v1"))
