"""The proxy's ASGI app: ``/{route}/...`` forwarded to the route's upstream, reasoning put right.

* ``POST /{route}/chat/completions`` (any prefix before ``chat/completions``): the body is
  rewritten by ``rewrite`` (restore / pad / strip / switches) and forwarded; the response goes
  back unchanged — a stream chunk by chunk as it arrives, each chunk handed to the client
  before the side ``Recorder`` reads it — and the turn it carried is remembered for the
  tenant after the client has it. An unknown-field 4xx naming a field the request carried is
  learned (``rejections``, per provider/host/model, shared with ``hermes chat``) and the
  request retried once without it.
* Any other path and method (``GET /{route}/models`` ...) is relayed as it is.
* ``GET /healthz``.

The client's own credential is passed through; the proxy adds one from its environment only
when started with ``--env-keys`` and the client sent none. Every proxied chat request writes
one ``proxy`` record to the request log: what was restored, padded or stripped on which
message — names only, never values or keys.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import orjson
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Mount, Route

from ..core.errors import HermesError, ProviderHTTPError, redact
from ..core.messages import Message, Reasoning
from ..rejections import RetryState, ValueRule, apply_values, learned_for, recover, values_for
from ..replay import Learned
from ..routing.resolve import Resolved, resolve
from ..routing.routes import ROUTES
from ..routing.routes import Route as Row
from ..serving.http import ApiError, json_response, openai_error_response, read_body
from ..store.requestlog import log_event
from ..wire.openai_chat import attempt as chat_attempt
from ..wire.openai_chat import endpoint
from . import anthropic_app, native_app, responses_relay, vendor_door
from .anthropic_door import looks_like_messages
from .door import open_turns, seal_turn
from .memory import ReasoningMemory, credentials, message_key, tenant_of
from .recorder import Recorder
from .responses_door import chat_request, new_id, output_items, response_object
from .responses_sse import ResponsesEvents
from .rewrite import Rewrite, rewrite
from .seal import Sealer
from .upstream import (
    Answer,
    TooLarge,
    Unreachable,
    Upstream,
    bounded,
    check_declared,
    read_bounded,
    whole_events,
)

if TYPE_CHECKING:
    from ..store import SessionStore

__all__ = ["ProxyOptions", "create_app", "prepare", "route_row"]

_HOP = frozenset({"host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "trailer",
                  "upgrade", "proxy-authorization", "proxy-connection", "accept-encoding", "expect"})
"""Not forwarded: ``expect`` too (the proxy's server answered the client's ``100-continue``;
the upstream gets the whole body at once)."""
_HOP_BACK = frozenset({b"content-length", b"connection", b"keep-alive", b"transfer-encoding", b"te", b"trailer",
                       b"upgrade", b"proxy-connection", b"date", b"server", b"content-encoding"})
"""The upstream's headers not relayed to the client, as ``_back`` meets them (raw bytes):
``date`` and ``server`` are the proxy's own server's, and bodies arrive decoded."""
_DOTS = re.compile(r"(?:^|/|\\|%2f|%5c)(?:\.|%2e){1,2}(?:/|\\|%2f|%5c|$)", re.IGNORECASE)
"""A ``.`` or ``..`` path segment, raw or percent-encoded in any case."""
_TARGETS_MAX = 1024
"""Resolved (route, upstream, model) targets a proxy remembers; a client names the model."""


@dataclass
class ProxyOptions:
    upstreams: Mapping[str, str] = field(default_factory=dict)
    """route key → base URL to forward to instead of the row's ``base_url``."""
    max_body: int = 64 << 20
    max_upstream_body: int = 64 << 20
    """The most the proxy reads or relays of one upstream answer (a 502, or a cut stream, past it)."""
    body_timeout_s: float = 30.0
    """A request body must arrive within this (a trickling client would hold a connection)."""
    timeout_s: float = 600.0
    env_keys: bool = False
    """Add the route's key from this process's environment when a client sends none."""
    table: tuple[Row, ...] = ROUTES
    bound_host: str = "127.0.0.1"
    allowed_hosts: tuple[str, ...] = ()
    """``Host`` names accepted besides loopback names and the bound address ([gateway] allowed_hosts)."""
    allowed_origins: tuple[str, ...] = ()
    """Browser origins allowed ([gateway] allowed_origins)."""
    durable_first: bool = False
    """Write a recorded turn to the memory *before* the client receives the end of its
    response. Needed when several processes share the memory (``--workers``, PostgreSQL): the
    client's next request may reach another worker, which knows only what is in the store.
    Off, the write follows the reply and only this process sees the turn meanwhile."""
    sealer: Sealer | None = None
    """Seals what the front doors hand their clients to carry; None: the deployment's own,
    from ``$HERMES_HOME`` (``seal.KEY_FILE``), loaded on first use."""


@dataclass(slots=True)
class UpstreamExchange:
    """One chat request sent upstream by ``Proxy.exchange``: what was sent, and the answer's head."""

    target: Resolved
    tenant: str | None
    rw: Rewrite
    resp: Answer
    retry: RetryState
    t0: float
    stream: bool
    """The client asked for a stream."""
    rec: Recorder
    refused: bytes | None = None
    """The upstream's refusal, read whole (nothing was learned from it): relay it as it is."""

    @property
    def streamed(self) -> bool:
        """The answer is a stream of server-sent events."""
        return "text/event-stream" in self.resp.headers.get("content-type", "")


class Proxy:
    """Shared state: the upstream client, the memory, the capability ledger."""

    def __init__(self, memory: ReasoningMemory, ledger: SessionStore, options: ProxyOptions) -> None:
        self.memory = memory
        self.ledger = ledger
        self.options = options
        self.client = Upstream(options.timeout_s)
        self._rows: dict[tuple[str, bool, bool], tuple[Row, str]] = {}
        self.pending: dict[tuple[str, str], Message] = {}
        """(tenant, key) → turns recorded but not yet written to ``memory``."""
        self.writes: set[asyncio.Task[None]] = set()
        self._lessons: dict[tuple[str, str, str], tuple[float, Learned, tuple[ValueRule, ...]]] = {}
        self._targets: dict[tuple[str, str, str], Resolved] = {}
        self.writer = anyio.CapacityLimiter(8)
        """Threads writing recorded turns to the memory store at once."""

    @property
    def sealer(self) -> Sealer:
        """The options' sealer, or the deployment's (its key file made on first use)."""
        if self.options.sealer is None:
            from ..config.paths import user_dir

            self.options.sealer = Sealer.load(user_dir())
        return self.options.sealer

    # --- routing ------------------------------------------------------------------------
    def row(self, name: str, *, anthropic: bool = False, responses: bool = False) -> tuple[Row, str]:
        """(table row, upstream base URL) for the first path segment; ApiError if none.
        ``anthropic``: the Messages door, which also relays to Anthropic-wire routes;
        ``responses``: the Responses door, which also serves Anthropic and Responses routes."""
        hit = self._rows.get((name, anthropic, responses))
        if hit is None:
            hit = self._rows[(name, anthropic, responses)] = route_row(name, self.options, anthropic=anthropic,
                                                                       responses=responses)
        return hit

    def headers(self, request: Request, row: Row) -> dict[str, str]:
        out = {k: v for k, v in request.headers.items() if k not in _HOP}
        out["accept-encoding"] = "identity"  # the side decoder reads the bytes it relays
        if self.options.env_keys and not credentials(request.headers, _query(request)):
            from ..config.keys import auth_headers, find_key

            with contextlib.suppress(HermesError):
                out.update(auth_headers(row, find_key(row)))
        return out

    # --- chat completions -----------------------------------------------------------------
    async def chat(self, request: Request, row: Row, upstream: str, url: str) -> Response:
        t0 = time.perf_counter()
        raw = await _read(request, self.options)
        headers = self.headers(request, row)
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        model = body.get("model") if isinstance(body, dict) else None
        if not isinstance(model, str) or not model or not isinstance(body, dict):
            return await self.relay(request.method, url, headers, raw)  # the upstream says what is wrong
        if looks_like_messages(body):
            raise ApiError(400, "wrong_door", f"this is an Anthropic Messages body; POST it to /{row.key}/v1/messages "
                           f"(an Anthropic client's base URL is /{row.key})")
        ex = await self.exchange(url, headers, row, upstream, body, raw, t0, _tenant(request, row))
        if ex.refused is not None:
            return _back(Response(ex.refused, ex.resp.status_code), ex.resp)
        resp, rec, tenant = ex.resp, ex.rec, ex.tenant
        done = BackgroundTask(self.log_after, ex)
        if not ex.streamed:
            content = await self.read(resp, url)
            if resp.status_code == 200:
                rec.whole(content)
                await self.stage(tenant, rec)
            return _back(Response(content, resp.status_code, background=done), resp)
        ok = resp.status_code == 200
        await self.check(resp, url)
        limit = self.options.max_upstream_body

        async def relay() -> AsyncIterator[bytes]:
            staged = not ok
            try:
                async for chunk in whole_events(bounded(resp, limit)):
                    if not staged:
                        rec.feed(chunk)  # remembered before the client can ask again
                        if rec.finished:
                            staged = True
                            await self.stage(tenant, rec)
                    yield chunk
            except TooLarge as e:
                log_event("proxy_error", route=row.key, error=f"{_shown(url)}: {e}; the stream was cut")
                yield _stream_error(f"{e}; the stream was cut here")

        return _back(StreamingResponse(relay(), resp.status_code, background=done), resp)

    async def exchange(self, url: str, headers: dict[str, str], row: Row, upstream: str, body: dict[str, Any],
                       raw: bytes, t0: float, tenant: str | None,
                       extra: Mapping[int, Message] | None = None) -> UpstreamExchange:
        """One chat request through the one pipeline every door shares: ``rewrite`` (restore,
        pad, strip, switches, tool-id rule, learned rejections), upstream, and — on an
        unknown-field 4xx — learn and retry once. ``extra``: turns a front door opened from its
        client's envelopes, by index in ``body["messages"]`` (they win over the memory). The answer's head is in; its body is
        not read unless it was refused (``UpstreamExchange.refused``, already logged)."""
        target, rw = self.prepare(body, row, upstream, tenant, extra)
        for k, v in endpoint(target)[1].items():
            headers.setdefault(k, v)
        resp = await self.send(url, headers, rw, raw)
        retry = RetryState()
        stream = bool(body.get("stream"))
        if _may_learn(resp.status_code) and rw.plan is not None:
            err = await self.read(resp, url)
            sent = rw.body if rw.body is not None else body
            problem = ProviderHTTPError("upstream refused the request", status=resp.status_code,
                                        body=err.decode("utf-8", "replace"), route=target.route.key,
                                        attempt=chat_attempt(rw.plan, sent))
            if recover(self.ledger, None, target, problem, retry):
                self.forget_lessons()
                target, rw = self.prepare(body, row, upstream, tenant, extra)
                resp = await self.send(url, headers, rw, raw)
            else:
                self.log(target, tenant, rw, resp.status_code, t0, stream, retry)
                return UpstreamExchange(target, tenant, rw, resp, retry, t0, stream, Recorder(target, rw.prefix), refused=err)
        return UpstreamExchange(target, tenant, rw, resp, retry, t0, stream, Recorder(target, rw.prefix))

    # --- the Responses door -----------------------------------------------------------------
    async def responses(self, request: Request, row: Row, upstream: str) -> Response:
        """``POST /{route}/v1/responses``: a Responses request served by the route's chat
        pipeline (``responses_door``), its reasoning handed out and taken back in envelopes."""
        t0 = time.perf_counter()
        raw = await _read(request, self.options)
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise ApiError(400, "invalid_request", "the request body is not JSON") from None
        if not isinstance(body, dict) or not isinstance(body.get("model"), str) or not body["model"]:
            raise ApiError(400, "invalid_request", "model: a Responses request needs a model")
        if row.wire == "openai_responses":  # the upstream's own API: relayed, under the route's rules
            return await responses_relay.relay(self, request, row, upstream, body, t0)
        door = chat_request(body, self.target(row, upstream, body["model"]))
        tenant = _tenant(request, row)
        sealed_for = tenant or ""  # a keyless client's envelopes: it carries only what it was given
        extra, refused = open_turns(door.body["messages"], door.envelopes, self.sealer, tenant=sealed_for,
                                    route=row.key)
        if refused:
            log_event("proxy_envelope", route=row.key, tenant=sealed_for[:10] or "none", refused=refused)
        seal = partial(self.seal_parts, sealed_for, row.key) if door.include_encrypted else None
        if row.wire != "openai_chat":  # Anthropic: the runtime's own build for the route's wire
            return await native_app.responses(self, request, row, upstream, body, door, extra, seal, t0)
        headers = self.headers(request, row)
        url = f"{upstream}/chat/completions"
        ex = await self.exchange(url, headers, row, upstream, door.body, orjson.dumps(door.body), t0, tenant, extra)
        if ex.refused is not None or ex.resp.status_code != 200:
            err = ex.refused if ex.refused is not None else await self.read(ex.resp, url)
            if ex.refused is None:
                self.log(ex.target, tenant, ex.rw, ex.resp.status_code, t0, door.stream, ex.retry)
            return _door_error(ex.resp, err)
        return await self.responses_answer(body, ex.resp, ex.rec, url, tenant, seal,
                                           BackgroundTask(self.log_after, ex))

    async def responses_answer(self, body: Mapping[str, Any], resp: Answer, rec: Recorder, url: str,
                               tenant: str | None, seal: Callable[[Sequence[Reasoning]], str | None] | None,
                               done: BackgroundTask) -> Response:
        """The route's 200 answer, as ``rec`` decodes it, as a Responses answer: whole, or its
        events as the route's deltas arrive; the turn staged for ``tenant`` once it is finished."""
        if "text/event-stream" not in resp.headers.get("content-type", ""):
            rec.whole(await self.read(resp, url))
            await self.stage(tenant, rec)
            result = rec.result()
            if result is None:
                raise ApiError(502, "upstream_unreadable", "the route's answer could not be read as a finished answer")
            output = output_items(result.message, seal(result.message.reasoning) if seal else None)
            obj = response_object(body, new_id("resp"), output, finish=result.finish_reason, usage=result.usage)
            return Response(orjson.dumps(obj), 200, media_type="application/json", background=done)
        await self.check(resp, url)
        events = ResponsesEvents(body, seal, partial(_thought, rec))
        limit = self.options.max_upstream_body

        async def relay() -> AsyncIterator[bytes]:
            yield events.start()
            error = ""
            try:
                async for chunk in bounded(resp, limit):
                    deltas = rec.feed(chunk)
                    if rec.finished and not rec.recorded:
                        await self.stage(tenant, rec)
                    if deltas:
                        yield events.feed(deltas)
            except (Unreachable, TooLarge) as e:
                error = f"the route's stream broke: {type(e).__name__}"
            yield events.finish(rec.result() if not error else None, error)

        return StreamingResponse(relay(), 200, media_type="text/event-stream", background=done,
                                 headers={"cache-control": "no-cache"})

    def seal_parts(self, tenant: str, route: str, parts: Sequence[Reasoning]) -> str | None:
        return seal_turn(parts, self.sealer, tenant=tenant, route=route)

    async def send(self, url: str, headers: dict[str, str], rw: Rewrite, raw: bytes) -> Answer:
        """The chat request upstream, as rewritten."""
        return await self.forward("POST", url, headers, raw if rw.body is None else orjson.dumps(rw.body))

    async def forward(self, method: str, url: str, headers: dict[str, str], content: bytes) -> Answer:
        """The one place a request goes upstream: the answer's head is in, its body not read yet."""
        try:
            return await self.client.send(method, url, headers, content)
        except Unreachable as e:
            raise ApiError(502, "upstream_unreachable", f"cannot reach {_shown(url)}: {e}") from None

    async def check(self, resp: Answer, url: str) -> None:
        """A 502 (and the answer dropped) when its declared length is past the bound."""
        try:
            check_declared(resp, self.options.max_upstream_body)
        except TooLarge as e:
            await resp.aclose()
            raise _too_large(url, e) from None

    async def read(self, resp: Answer, url: str) -> bytes:
        """The whole answer, bounded (a 502 past ``max_upstream_body``)."""
        try:
            return await read_bounded(resp, self.options.max_upstream_body)
        except TooLarge as e:
            raise _too_large(url, e) from None
        except Unreachable as e:
            raise ApiError(502, "upstream_unreachable", f"{_shown(url)}: {e}") from None

    async def stage(self, tenant: str | None, rec: Recorder) -> None:
        """Remember the turn ``rec`` folded: visible to this process's next request at once
        (``pending``), durable in the memory store a moment later (a worker thread writes it) —
        or, with ``durable_first``, durable before this returns (the client is still waiting)."""
        msg = rec.message()
        key = message_key(msg, rec.prefix) if msg is not None else None
        if msg is None or key is None or tenant is None:
            return
        rec.recorded = True
        self.pending[(tenant, key)] = msg

        async def write() -> None:
            try:
                await anyio.to_thread.run_sync(partial(self.memory.remember, tenant, key, msg), limiter=self.writer)
            except Exception as e:  # the client gets its answer anyway; say why nothing was kept
                rec.recorded = False
                log_event("proxy_error", route=rec.route, error=redact(f"cannot record: {type(e).__name__}: {e}"))
            finally:
                if self.pending.get((tenant, key)) is msg:
                    del self.pending[(tenant, key)]

        if self.options.durable_first:
            await write()
            return
        task = asyncio.get_running_loop().create_task(write())
        self.writes.add(task)
        task.add_done_callback(self.writes.discard)

    def target(self, row: Row, upstream: str, model: str) -> Resolved:
        """``resolve`` of (route, upstream, model), remembered: resolving parses the URL and
        matches the model against the profile rows, a tenth of a request's CPU, for an answer
        that never changes in this process. The same object each time, so what is derived
        from it once per object (``builder.memo``) is derived once."""
        k = (row.key, upstream, model)
        hit = self._targets.get(k)
        if hit is None:
            if len(self._targets) >= _TARGETS_MAX:
                self._targets.clear()
            hit = self._targets[k] = resolve(row.key, upstream, model, table=self.options.table)
        return hit

    def forget_lessons(self) -> None:
        """Drop the lesson memo: a refusal just taught the ledger something."""
        self._lessons.clear()

    def lessons(self, target: Resolved) -> tuple[Learned, tuple[ValueRule, ...]]:
        """``rejections.learned_for`` and ``values_for`` with a short memo: one ledger read per
        route and second."""
        k = (target.route.key, target.host, target.model)
        hit = self._lessons.get(k)
        now = time.monotonic()
        if hit is None or now - hit[0] > 1.0:
            if len(self._lessons) >= _TARGETS_MAX:  # a client names the model: bounded like ``_targets``
                self._lessons.clear()
            hit = self._lessons[k] = (now, learned_for(self.ledger, None, target), values_for(self.ledger, target))
        return hit[1], hit[2]

    def recall(self, tenant: str, keys: Sequence[str]) -> dict[str, Message]:
        """Recordings not yet written first, then the memory store for the rest."""
        out = {k: m for k in keys if (m := self.pending.get((tenant, k))) is not None}
        rest = [k for k in keys if k not in out]
        if rest:
            try:
                out.update(self.memory.recall(tenant, rest))
            except HermesError as e:  # an unreadable store costs the restore, never the request
                log_event("proxy_error", error=redact(f"cannot read the reasoning memory: {e}"))
        return out

    async def log_after(self, ex: UpstreamExchange) -> None:
        self.log(ex.target, ex.tenant, ex.rw, ex.resp.status_code, ex.t0, ex.stream, ex.retry,
                 recorded=ex.rec.recorded)

    def log(self, target: Resolved, tenant: str | None, rw: Rewrite, status: int, t0: float, stream: bool,
            retry: RetryState, *, recorded: bool = False) -> None:
        off = {} if tenant else {"memory": "off: the request carries no credential, so nothing is restored or recorded"}
        log_event("proxy", route=target.route.key, host=target.host, model=target.model,
                  tenant=tenant[:10] if tenant else "none", stream=stream, status=status,
                  ms=round((time.perf_counter() - t0) * 1000, 1), recorded=recorded, retried=retry.retried,
                  **off, **rw.summary())

    # --- everything else ----------------------------------------------------------------
    async def relay(self, method: str, url: str, headers: dict[str, str], raw: bytes) -> Response:
        resp = await self.forward(method, url, headers, raw)
        await self.check(resp, url)
        body = bounded(resp, self.options.max_upstream_body)
        return _back(StreamingResponse(body, resp.status_code), resp)

    def prepare(self, body: dict[str, Any], row: Row, upstream: str, tenant: str | None,
                extra: Mapping[int, Message] | None = None) -> tuple[Resolved, Rewrite]:
        """The rewrite, with the route's value lessons applied to the body it sends."""
        target = self.target(row, upstream, str(body["model"]))
        learned, rules = self.lessons(target)
        rw = prepare(body, target, tenant, self.recall, learned, extra or {})
        if rules:
            sent = rw.body if rw.body is not None else body
            if (fixed := apply_values(sent, rules)) is not sent:
                rw = replace(rw, body=fixed)
        return target, rw


def route_row(name: str, options: ProxyOptions, *, anthropic: bool = False,
              responses: bool = False) -> tuple[Row, str]:
    """(table row, upstream base URL) a path's first segment names; ApiError if none.
    ``anthropic``: Anthropic-wire rows with Anthropic's own URL shape (not Vertex's) are served
    too: the Messages door relays to them as they are. ``responses``: Anthropic-wire rows (any
    variant: the wire builds each one's URL) and Responses rows are served too."""
    try:
        # the row by name or alias (a placeholder URL: a row without a default one is fine here)
        row = resolve(name, "http://upstream.invalid", "-", table=options.table).route
    except HermesError as e:
        raise ApiError(404, "unknown_route", f"{e} — the proxy serves /<route>/..., "
                                               "one per row of `hermes routes`") from None
    upstream = options.upstreams.get(row.key) or row.base_url
    if row.wire != "openai_chat" and not (anthropic and row.wire == "anthropic" and not row.variant) and not (
            responses and row.wire in ("anthropic", "openai_responses")):
        raise ApiError(400, "unsupported_route", f"route {row.key!r} speaks the {row.wire} wire; "
                       + _served_on(row))
    if not upstream:
        raise ApiError(400, "no_upstream", f"route {row.key!r} has no default base URL; "
                         f"start the proxy with --upstream {row.key}=URL")
    return row, upstream.rstrip("/")


def _served_on(row: Row) -> str:
    """What the proxy serves on a native-wire route, for a refusal naming what works."""
    if row.wire == "anthropic":
        where = f"POST /{row.key}/v1/responses (Responses API clients)"
        if not row.variant:
            where = f"POST /{row.key}/v1/messages (Anthropic Messages clients) and " + where
        return f"the proxy serves it at {where}; chat-completions clients use a chat route"
    if row.wire == "openai_responses":
        return (f"the proxy serves it at POST /{row.key}/v1/responses (Responses API clients); chat-completions "
                "and Anthropic clients use a chat route")
    return "the proxy serves OpenAI chat-completions routes (and Anthropic and Responses routes at their own doors)"


Recall = Callable[[str, Sequence[str]], dict[str, Message]]
"""(tenant, keys) → the recorded turns among keys: ``ReasoningMemory.recall`` or the proxy's."""


def prepare(body: dict[str, Any], target: Resolved, tenant: str | None, recall: Recall, learned: Learned,
            opened: Mapping[int, Message] | None = None) -> Rewrite:
    """The rewrite of one chat request for ``tenant`` (``tenant_of``; None: no credential, so
    nothing is recalled): what the proxy and ``--dry-run`` share. ``opened``: turns a front
    door restored from its client's envelopes, by message index (they win over the memory)."""
    return rewrite(body, target, partial(recall, tenant) if tenant else _nothing, learned, opened or {})


def _nothing(keys: Sequence[str]) -> dict[str, Message]:
    return {}


def _too_large(url: str, e: TooLarge) -> ApiError:
    """The 502 for an answer past ``--max-upstream-body``, logged (the client may not say)."""
    log_event("proxy_error", error=f"{_shown(url)}: {e}")
    return ApiError(502, "upstream_too_large", f"{_shown(url)}: {e}")


def _stream_error(message: str) -> bytes:
    """An OpenAI-style error event ending a stream (the SDKs raise it); the blank lines first
    end whatever event the relayed bytes were in the middle of."""
    return b"\n\ndata: " + orjson.dumps({"error": {"message": message, "type": "api_error", "param": None,
                                                 "code": "upstream_too_large"}}) + b"\n\n"


def _tenant(request: Request, row: Row) -> str | None:
    """The client's own credentials, before --env-keys adds the proxy's: keyless clients share nothing."""
    return tenant_of(request.headers, row.key, _query(request))


def _query(request: Request) -> str:
    return str(request.scope.get("query_string", b"").decode("latin-1"))


def _thought(rec: Recorder) -> tuple[Reasoning, ...]:
    """The reasoning ``rec`` has folded so far."""
    m = rec.snapshot()
    return m.reasoning if m is not None else ()


def _door_error(resp: Answer, err: bytes) -> Response:
    """The route's refusal for a door's client: its OpenAI-shaped error as it is, or its text
    inside one; ``retry-after`` kept (the status is the route's own)."""
    try:
        doc = orjson.loads(err)
    except orjson.JSONDecodeError:
        doc = None
    if not (isinstance(doc, dict) and isinstance(doc.get("error"), dict)):
        text = err.decode("utf-8", "replace")[:2000]
        doc = {"error": {"message": redact(f"the route answered HTTP {resp.status_code}: {text}"),
                         "type": "api_error" if resp.status_code >= 500 else "invalid_request_error",
                         "param": None, "code": "upstream_error"}}
    keep = {k: v for k, v in resp.headers.items() if k.lower() == "retry-after"}
    return json_response(doc, resp.status_code, keep)


def _shown(url: str) -> str:
    """``url`` for error text: without its query, which may hold the client's key (``?key=``)."""
    return url.partition("?")[0]


def messages_door(method: str, rest: str) -> str | None:
    """Which Messages door a request path asks for: ``messages``, ``count_tokens``, ``wrong``
    (a Messages path under a doubled or missing ``v1``: refused naming the right one), or None."""
    tail = rest.rstrip("/")
    if method != "POST":
        return None
    if tail == "v1/messages":
        return "messages"
    if tail == "v1/messages/count_tokens":
        return "count_tokens"
    if tail in ("messages", "messages/count_tokens") or tail.endswith(("/v1/messages", "/v1/messages/count_tokens")):
        return "wrong"
    return None


def _may_learn(status: int) -> bool:
    return 400 <= status < 500 and status not in (401, 402, 403, 404, 407, 408, 413, 429)


def _back(response: Response, answer: Answer) -> Response:
    """``response`` with the upstream's headers for the client, as the upstream sent them
    (raw bytes; a repeated header such as ``Set-Cookie`` stays repeated, not joined with
    commas), minus hop-by-hop ones and the encoding of the body, decoded on its way in."""
    response.raw_headers.extend((k.lower(), v) for k, v in answer.raw_headers if k.lower() not in _HOP_BACK)
    return response


async def _read(request: Request, options: ProxyOptions) -> bytes:
    try:
        async with asyncio.timeout(options.body_timeout_s):  # asyncio's own: anyio's cancel scope costs more
            return await read_body(request, options.max_body)
    except TimeoutError:
        raise ApiError(408, "timeout", f"the request body did not arrive within {options.body_timeout_s:g} s",
                       {"connection": "close"}) from None


def create_app(memory: ReasoningMemory, ledger: SessionStore, options: ProxyOptions | None = None) -> Starlette:
    """The ASGI app. ``memory`` holds what responses thought; ``ledger`` is the session store
    whose capability ledger keeps learned rejections (``learn`` / ``capabilities``).

    Wrapped in the gateway's browser guard (``Host`` allowlist against DNS rebinding, foreign
    ``Origin`` refused): a web page must not reach a provider, or this machine's keys with
    ``--env-keys``, through the proxy."""
    from ..serving.guard import HostOriginGuard, allowed_hosts

    proxy = Proxy(memory, ledger, options or ProxyOptions())

    async def forward(request: Request) -> Response:
        door = messages_door(request.method, request.path_params["rest"])
        responses = request.method == "POST" and request.path_params["rest"].rstrip("/").endswith("responses")
        try:
            row, upstream = proxy.row(request.path_params["route"], anthropic=door is not None, responses=responses)
            rest = request.path_params["rest"]
            if _DOTS.search(request.scope.get("raw_path", b"").decode("latin-1")) or _DOTS.search(rest):
                raise ApiError(400, "invalid_request", "a path with '.' or '..' segments would leave the "
                               "route's upstream prefix")
            # the raw query from the scope: ``request.url`` builds a whole URL object (host header
            # parsed, parts joined) for this one part, ~35 µs of every proxied request
            query = request.scope.get("query_string", b"")
            url = f"{upstream}/{rest}" + (f"?{query.decode('latin-1')}" if query else "")
            if door is not None:
                if door == "wrong":
                    raise ApiError(400, "wrong_door", f"the Messages door of route {row.key!r} is POST "
                                   f"/{row.key}/v1/messages (an Anthropic client's base URL is /{row.key}, "
                                   "without /v1)")
                if row.wire == "anthropic":  # Anthropic itself: its signatures pass through untouched
                    raw = await _read(request, proxy.options)
                    if row.policy == "keep" and door == "messages":  # a vendor's own: its rules applied
                        raw = vendor_door.relayed(raw, row)
                    return await proxy.relay("POST", url, proxy.headers(request, row), raw)
                serve = anthropic_app.count_tokens if door == "count_tokens" else anthropic_app.messages
                return await serve(proxy, request, row, upstream)
            if request.method == "POST" and rest.rstrip("/").endswith("chat/completions"):
                return await proxy.chat(request, row, upstream, url)
            if responses:
                if rest.rstrip("/") not in ("responses", "v1/responses"):
                    raise ApiError(400, "wrong_door", f"the Responses door of route {row.key!r} is "
                                   f"POST /{row.key}/v1/responses (a client's base URL is /{row.key}/v1)")
                return await proxy.responses(request, row, upstream)
            return await proxy.relay(request.method, url, proxy.headers(request, row), await request.body())
        except ApiError as e:
            if door is not None:
                return anthropic_app.anthropic_error(e.status, redact(e.message))
            return openai_error_response(e)
        except HermesError as e:
            if door is not None:
                return anthropic_app.anthropic_error(400, redact(str(e)))
            return openai_error_response(ApiError(400, "invalid_request", f"{e}"))

    async def healthz(request: Request) -> Response:
        return Response(b'{"ok":true}', media_type="application/json")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        while proxy.writes:  # every recording reaches the store before the process ends
            await asyncio.gather(*list(proxy.writes), return_exceptions=True)
        await proxy.client.aclose()

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    opts = proxy.options
    guard = Middleware(HostOriginGuard, hosts=allowed_hosts(opts.bound_host, opts.allowed_hosts), origins=opts.allowed_origins)
    from ..ui import create_ui

    # The web view (docs/ui.md) before the catch-all route: the proxy has no token, so its pages
    # answer loopback only; its live tail shows what each request had restored or stripped.
    app = Starlette(routes=[Route("/healthz", healthz, methods=["GET"]),
                            Mount("/ui", app=create_ui(ledger)),
                            Route("/{route}/{rest:path}", forward, methods=methods)], lifespan=lifespan,
                    middleware=[guard])
    app.state.proxy = proxy
    return app
