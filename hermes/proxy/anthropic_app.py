"""``POST /<route>/v1/messages`` (and ``/v1/messages/count_tokens``) on a chat-completions route.

The Anthropic door: the Messages request becomes the route's chat request (``anthropic_door``),
goes through ``Proxy.exchange`` — the same rewrite, planner, wire, learned rejections and
recorder as a chat client's request — and the route's answer comes back as a Messages answer
(``anthropic_out``), reasoning as ``thinking`` blocks whose signatures are sealed envelopes
(``door``). Errors are Anthropic-shaped (``{"type": "error", "error": {...}}``), which the
Anthropic SDKs and Claude Code read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from ..builder.estimate import basis_for, count_text
from ..core.errors import HermesError, redact
from ..core.messages import Reasoning
from ..routing.routes import Route as Row
from ..store.requestlog import log_event
from . import app  # the proxy's request reading and tenant (app imports this module first)
from .anthropic_door import DoorError, to_chat
from .anthropic_out import StreamWriter, error_body, sse, whole_message
from .door import open_turns, seal_turn
from .upstream import TooLarge, Unreachable, bounded

if TYPE_CHECKING:
    from .app import Proxy

__all__ = ["anthropic_error", "count_tokens", "messages"]

_DROP_HEADERS = ("x-api-key", "anthropic-version", "anthropic-beta", "anthropic-dangerous-direct-browser-access")


def anthropic_error(status: int, message: str, type_: str | None = None) -> Response:
    return Response(orjson.dumps(error_body(status, message, type_)), status, media_type="application/json")


def _headers(proxy: Proxy, request: Request, row: Row) -> dict[str, str]:
    """The client's headers for a chat route: an Anthropic client's ``x-api-key`` becomes the
    bearer credential a chat-completions route reads; Anthropic's own headers stay behind."""
    out = proxy.headers(request, row)
    key = out.get("x-api-key")
    for name in _DROP_HEADERS:
        out.pop(name, None)
    if key and "authorization" not in out:
        out["authorization"] = f"Bearer {key}"
    return out


async def _body(proxy: Proxy, request: Request) -> dict[str, Any]:
    raw = await app._read(request, proxy.options)
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise DoorError("the request body is not JSON") from None
    if not isinstance(body, dict):
        raise DoorError("the request body must be a JSON object")
    _not_another_family(body, request)
    return body


def _not_another_family(body: Mapping[str, Any], request: Request) -> None:
    """A body of another API family on this door: a 400 naming the door that takes it."""
    route = request.path_params.get("route", "<route>")
    msgs = body.get("messages")
    if "input" in body and msgs is None:
        raise DoorError(f"this is a Responses API body; POST it to /{route}/v1/responses")
    if isinstance(msgs, list) and any(isinstance(m, Mapping) and (m.get("role") in ("tool", "developer")
                                                                  or "tool_calls" in m) for m in msgs):
        raise DoorError(f"this is a chat-completions body (a 'developer' or 'tool' role, or 'tool_calls'); "
                        f"POST it to /{route}/chat/completions, or send Anthropic Messages here")


def _upstream_message(status: int, content: bytes) -> str:
    """The upstream's own error text (its ``error.message`` when it has one), bounded."""
    try:
        data = orjson.loads(content)
    except orjson.JSONDecodeError:
        data = None
    err = data.get("error") if isinstance(data, dict) else None
    msg = err.get("message") if isinstance(err, dict) else err if isinstance(err, str) else None
    text = msg if isinstance(msg, str) and msg else content.decode("utf-8", "replace").strip()
    return f"upstream {status}: {text[:4000] or 'no body'}"


async def messages(proxy: Proxy, request: Request, row: Row, upstream: str) -> Response:
    """One Messages request served by the route (see the module docstring)."""
    import time

    t0 = time.perf_counter()
    try:
        body = await _body(proxy, request)
        tr = to_chat(body, proxy.target(row, upstream, str(body.get("model") or "-")))
    except DoorError as e:
        return anthropic_error(e.status, e.message, e.type)
    headers = _headers(proxy, request, row)
    tenant = app._tenant(request, row)
    sealed_for = tenant or ""  # a keyless client's envelopes: it carries only what it was given
    sealer = proxy.sealer
    chat = tr.body
    extra, refused = open_turns(chat["messages"], tr.envelopes, sealer, tenant=sealed_for, route=row.key)
    if refused or tr.dropped or tr.redacted:
        log_event("proxy_door", door="messages", route=row.key, tenant=sealed_for[:10] or "none",
                  opened=len(extra), refused=refused, redacted=tr.redacted, dropped=list(tr.dropped))
    url = f"{upstream}/chat/completions"
    ex = await proxy.exchange(url, headers, row, upstream, chat, orjson.dumps(chat), t0, tenant, extra)
    if ex.refused is not None:
        return anthropic_error(ex.resp.status_code, _upstream_message(ex.resp.status_code, ex.refused))
    model = str(body["model"])

    def seal(parts: Sequence[Reasoning]) -> str:
        return seal_turn(parts, sealer, tenant=sealed_for, route=row.key) or ""

    done = BackgroundTask(proxy.log_after, ex)
    if ex.resp.status_code != 200 or not ex.streamed:
        content = await proxy.read(ex.resp, url)
        if ex.resp.status_code != 200:
            proxy.log(ex.target, ex.tenant, ex.rw, ex.resp.status_code, t0, ex.stream, ex.retry)
            return anthropic_error(ex.resp.status_code, _upstream_message(ex.resp.status_code, content))
        ex.rec.whole(content)
        result = ex.rec.result()
        if result is None:
            return anthropic_error(502, "the route's answer could not be read as a finished chat completion")
        await proxy.stage(ex.tenant, ex.rec)
        msg = whole_message(result.message, result.finish_reason, result.usage, model, seal)
        if body.get("stream"):  # a route that answered a stream request whole: the client still gets events
            return StreamingResponse(iter([_events_of(msg)]), 200, media_type="text/event-stream", background=done)
        return Response(orjson.dumps(msg), 200, media_type="application/json", background=done)
    await proxy.check(ex.resp, url)
    writer = StreamWriter(ex.rec.snapshot, model, seal)
    limit = proxy.options.max_upstream_body

    async def events() -> AsyncIterator[bytes]:
        yield writer.start()
        staged = False
        try:
            async for chunk in bounded(ex.resp, limit):
                for d in ex.rec.feed(chunk):
                    out = writer.feed(d)
                    if out:
                        yield out
                if not staged and ex.rec.finished:
                    staged = True
                    await proxy.stage(ex.tenant, ex.rec)
        except (TooLarge, Unreachable, HermesError, OSError) as e:
            yield writer.error(502, redact(f"the route's stream broke off: {e}"))
            return
        except Exception as e:  # any other read error: the client is told, never left hanging
            yield writer.error(502, redact(f"the route's stream broke off: {type(e).__name__}"))
            return
        if not ex.rec.finished:
            yield writer.error(502, "the route's stream ended before its answer finished")
            return
        yield writer.end()

    return StreamingResponse(events(), 200, media_type="text/event-stream", background=done)


def _events_of(msg: Mapping[str, Any]) -> bytes:
    """A whole ``message`` as the event stream that builds it."""
    head = {**msg, "content": [], "stop_reason": None}
    out = [sse("message_start", {"type": "message_start", "message": head})]
    for i, block in enumerate(msg["content"]):
        kind = block["type"]
        start = {"thinking": {"type": "thinking", "thinking": "", "signature": ""},
                 "text": {"type": "text", "text": ""}}.get(kind, {**block, "input": {}})
        out.append(sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": start}))
        deltas = {"thinking": [{"type": "thinking_delta", "thinking": block.get("thinking", "")},
                               {"type": "signature_delta", "signature": block.get("signature", "")}],
                  "text": [{"type": "text_delta", "text": block.get("text", "")}]}.get(
            kind, [{"type": "input_json_delta", "partial_json": orjson.dumps(block.get("input", {})).decode()}])
        for d in deltas:
            out.append(sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": msg["stop_reason"],
                                                                        "stop_sequence": None},
                                     "usage": msg["usage"]}))
    out.append(sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


async def count_tokens(proxy: Proxy, request: Request, row: Row, upstream: str) -> Response:
    """``{"input_tokens": N}``: the chat request the route would get (reasoning restored), priced
    by Hermes's own estimator — the routes have no counting endpoint, and Claude Code uses the
    figure to budget its context."""
    try:
        body = await _body(proxy, request)
        tr = to_chat(body, proxy.target(row, upstream, str(body.get("model") or "-")))
    except DoorError as e:
        return anthropic_error(e.status, e.message, e.type)
    tenant = app._tenant(request, row)
    extra, _ = open_turns(tr.body["messages"], tr.envelopes, proxy.sealer, tenant=tenant or "", route=row.key)
    target, rw = proxy.prepare(tr.body, row, upstream, tenant, extra)
    sent = rw.body if rw.body is not None else tr.body
    text = orjson.dumps([sent["messages"], sent.get("tools") or []]).decode()
    return Response(orjson.dumps({"input_tokens": count_text(text, basis_for(target))}), 200,
                    media_type="application/json")
