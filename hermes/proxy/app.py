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

import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from types import SimpleNamespace
from typing import Any

import anyio.to_thread
import httpx
import orjson
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from ..errors import HermesError, redact
from ..logs import log_event
from ..rejections import RetryState, learned_for, recover
from ..resolve import Resolved, resolve
from ..routes import ROUTES
from ..routes import Route as Row
from ..wire.openai_chat import endpoint
from .memory import ReasoningMemory, message_key, tenant_of
from .recorder import Recorder
from .rewrite import Rewrite, rewrite

__all__ = ["ProxyOptions", "create_app"]

_HOP = frozenset({"host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "trailer",
                  "upgrade", "proxy-authorization", "proxy-connection", "accept-encoding"})
_HOP_BACK = frozenset({"content-length", "connection", "keep-alive", "transfer-encoding", "te", "trailer",
                       "upgrade", "proxy-connection"})
_AUTH = ("authorization", "x-api-key", "x-goog-api-key", "api-key")


@dataclass
class ProxyOptions:
    upstreams: Mapping[str, str] = field(default_factory=dict)
    """route key → base URL to forward to instead of the row's ``base_url``."""
    max_body: int = 64 << 20
    timeout_s: float = 600.0
    env_keys: bool = False
    """Add the route's key from this process's environment when a client sends none."""
    table: tuple[Row, ...] = ROUTES


class ProxyError(Exception):
    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


def _error(status: int, kind: str, message: str) -> Response:
    """OpenAI's error shape (what every OpenAI-compatible client reads)."""
    body = {"error": {"message": redact(message), "type": kind, "param": None, "code": kind}}
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


class Proxy:
    """Shared state: one HTTP client (connection pool), the memory, the capability ledger."""

    def __init__(self, memory: ReasoningMemory, ledger: Any, options: ProxyOptions) -> None:
        self.memory = memory
        self.ledger = ledger
        self.options = options
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(options.timeout_s, connect=30.0),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=256),
            follow_redirects=False)
        self._rows: dict[str, tuple[Row, str]] = {}

    # --- routing ------------------------------------------------------------------------
    def row(self, name: str) -> tuple[Row, str]:
        """(table row, upstream base URL) for the first path segment; ProxyError if none."""
        hit = self._rows.get(name)
        if hit is not None:
            return hit
        try:
            row = resolve(name, None, "-", table=self.options.table).route
        except HermesError as e:
            raise ProxyError(404, "unknown_route", f"{e} — the proxy serves /<route>/..., "
                                                   "one per row of `hermes routes`") from None
        upstream = self.options.upstreams.get(row.key) or row.base_url
        if row.wire != "openai_chat":
            raise ProxyError(400, "unsupported_route", f"route {row.key!r} speaks the {row.wire} wire; "
                             "the proxy serves OpenAI chat-completions routes")
        if not upstream:
            raise ProxyError(400, "no_upstream", f"route {row.key!r} has no default base URL; "
                             f"start the proxy with --upstream {row.key}=URL")
        self._rows[name] = (row, upstream.rstrip("/"))
        return self._rows[name]

    def headers(self, request: Request, row: Row) -> dict[str, str]:
        out = {k: v for k, v in request.headers.items() if k not in _HOP}
        out["accept-encoding"] = "identity"  # the side decoder reads the bytes it relays
        if self.options.env_keys and not any(k in out for k in _AUTH):
            from ..keys import auth_headers, find_key

            with contextlib.suppress(HermesError):
                out.update(auth_headers(row, find_key(row)))
        return out

    # --- chat completions -----------------------------------------------------------------
    async def chat(self, request: Request, row: Row, upstream: str, url: str) -> Response:
        t0 = time.perf_counter()
        raw = await _read(request, self.options.max_body)
        headers = self.headers(request, row)
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        model = body.get("model") if isinstance(body, dict) else None
        if not isinstance(model, str) or not model or not isinstance(body, dict):
            return await self.relay(request.method, url, headers, raw)  # the upstream says what is wrong
        target = resolve(row.key, upstream, model, table=self.options.table)
        for k, v in endpoint(target)[1].items():
            headers.setdefault(k, v)
        tenant = tenant_of(headers, row.key)
        learned = learned_for(self.ledger, None, target)
        rw = rewrite(body, target, partial(self.memory.recall, tenant), learned)
        resp = await self.send(url, headers, rw, raw)
        retry = RetryState()
        if _may_learn(resp.status_code) and rw.plan is not None:
            err = await resp.aread()
            await resp.aclose()
            sent = rw.body if rw.body is not None else body
            problem = SimpleNamespace(status=resp.status_code, body=err.decode("utf-8", "replace"), sent_body=sent,
                                      plan=rw.plan)
            if recover(self.ledger, None, target, problem, retry, history=rw.history):
                learned = learned_for(self.ledger, None, target)
                rw = rewrite(body, target, partial(self.memory.recall, tenant), learned)
                resp = await self.send(url, headers, rw, raw)
            else:
                self.log(target, tenant, rw, resp.status_code, t0, bool(body.get("stream")), retry)
                return Response(err, resp.status_code, headers=_back(resp.headers, decoded=True))
        rec = Recorder(target)
        done = BackgroundTask(self.finish, rec, target, tenant, rw, resp, t0, bool(body.get("stream")), retry)
        if "text/event-stream" not in resp.headers.get("content-type", ""):
            content = await resp.aread()
            await resp.aclose()
            if resp.status_code == 200:
                rec.whole(content)
            return Response(content, resp.status_code, headers=_back(resp.headers, decoded=True), background=done)
        ok = resp.status_code == 200 and resp.headers.get("content-encoding", "identity") == "identity"

        async def relay() -> AsyncIterator[bytes]:
            try:
                async for chunk in resp.aiter_raw():
                    yield chunk  # the client first; the recorder reads it after
                    if ok:
                        rec.feed(chunk)
            finally:
                await resp.aclose()

        return StreamingResponse(relay(), resp.status_code, headers=_back(resp.headers, decoded=False),
                                 background=done)

    async def send(self, url: str, headers: dict[str, str], rw: Rewrite, raw: bytes) -> httpx.Response:
        content = raw if rw.body is None else orjson.dumps(rw.body)
        req = self.client.build_request("POST", url, content=content, headers=headers)
        try:
            return await self.client.send(req, stream=True)
        except httpx.HTTPError as e:
            raise ProxyError(502, "upstream_unreachable", f"cannot reach {url}: {type(e).__name__}: {e}") from None

    async def finish(self, rec: Recorder, target: Resolved, tenant: str, rw: Rewrite, resp: httpx.Response,
                     t0: float, stream: bool, retry: RetryState) -> None:
        """After the client has the whole response: remember its turn, write the log record."""
        msg = rec.message() if resp.status_code == 200 else None
        key = message_key(msg) if msg is not None else None
        if msg is not None and key is not None:
            await anyio.to_thread.run_sync(self.memory.remember, tenant, key, msg)
        self.log(target, tenant, rw, resp.status_code, t0, stream, retry, recorded=key is not None)

    def log(self, target: Resolved, tenant: str, rw: Rewrite, status: int, t0: float, stream: bool,
            retry: RetryState, *, recorded: bool = False) -> None:
        log_event("proxy", route=target.route.key, host=target.host, model=target.model, tenant=tenant[:10],
                  stream=stream, status=status, ms=round((time.perf_counter() - t0) * 1000, 1),
                  recorded=recorded, retried=retry.retried, **rw.summary())

    # --- everything else ----------------------------------------------------------------
    async def relay(self, method: str, url: str, headers: dict[str, str], raw: bytes) -> Response:
        req = self.client.build_request(method, url, content=raw or None, headers=headers)
        try:
            resp = await self.client.send(req, stream=True)
        except httpx.HTTPError as e:
            raise ProxyError(502, "upstream_unreachable", f"cannot reach {url}: {type(e).__name__}: {e}") from None

        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in resp.aiter_raw():
                    yield chunk
            finally:
                await resp.aclose()

        return StreamingResponse(body(), resp.status_code, headers=_back(resp.headers, decoded=False))


def _may_learn(status: int) -> bool:
    return 400 <= status < 500 and status not in (401, 402, 403, 404, 407, 408, 413, 429)


def _back(headers: httpx.Headers, *, decoded: bool) -> dict[str, str]:
    skip = _HOP_BACK | {"content-encoding"} if decoded else _HOP_BACK
    return {k: v for k, v in headers.items() if k.lower() not in skip}


async def _read(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise ProxyError(413, "too_large", f"request body is {declared} bytes; the limit is {limit}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ProxyError(413, "too_large", f"request body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(memory: ReasoningMemory, ledger: Any, options: ProxyOptions | None = None) -> Starlette:
    """The ASGI app. ``memory`` holds what responses thought; ``ledger`` is the session store
    whose capability ledger keeps learned rejections (``learn`` / ``capabilities``)."""
    proxy = Proxy(memory, ledger, options or ProxyOptions())

    async def forward(request: Request) -> Response:
        try:
            row, upstream = proxy.row(request.path_params["route"])
            rest = request.path_params["rest"]
            url = f"{upstream}/{rest}" + (f"?{request.url.query}" if request.url.query else "")
            if request.method == "POST" and rest.rstrip("/").endswith("chat/completions"):
                return await proxy.chat(request, row, upstream, url)
            return await proxy.relay(request.method, url, proxy.headers(request, row), await request.body())
        except ProxyError as e:
            return _error(e.status, e.kind, e.message)
        except HermesError as e:
            return _error(400, "invalid_request", f"{e}")

    async def healthz(request: Request) -> Response:
        return Response(b'{"ok":true}', media_type="application/json")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await proxy.client.aclose()

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    app = Starlette(routes=[Route("/healthz", healthz, methods=["GET"]),
                            Route("/{route}/{rest:path}", forward, methods=methods)], lifespan=lifespan)
    app.state.proxy = proxy
    return app
