"""The gateway's Starlette app: Hermes sessions over HTTP, each turn loaded from ``state.db``.

Endpoints (all JSON; errors ``{"error": {"type", "message"}}``; Bearer auth when a token is set):

* ``POST /v1/sessions`` — ``{provider, model, base_url?, title?}`` → the new session;
* ``POST /v1/sessions/{id}/messages`` — ``{content, system?, stream?, provider?, model?, base_url?, wait_s?}`` →
  one user turn (tool loop included): JSON, or an SSE stream of the turn's events;
* ``GET /v1/sessions/{id}`` — ``session_view``: messages, reasoning visible, blobs summarised;
* ``POST /v1/sessions/{id}/branch`` — ``{upto_seq?, title?}`` → the new session;
* ``POST /v1/sessions/{id}/compress`` — ``{keep_last?}`` → ``hermes.agent.compaction.compress_session``;
* ``POST /v1/chat/completions`` — OpenAI facade, session named by ``X-Hermes-Session`` or
  created on first use (``compat``); ``GET /v1/models``;
* ``GET /healthz``;
* ``/ui/`` — the web view (``hermes.ui``): login form + cookie with the same token.

Before any endpoint runs: the ``Host`` / ``Origin`` guard (``serving.guard``), then bearer auth with
throttled failures; JSON bodies are bounded in size and time (``serving.http.read_json``). A client's
``base_url`` must be a route default or allowlisted (``check_client_url``).

Sessions are opened, switched, compressed and run through the process's one
``hermes.agent.runtime.Runtime`` — the same object ``hermes chat`` uses — so a gateway turn and a CLI
turn choose routes, budgets and leases alike. Nothing here holds session state between requests
that the store does not also hold (``hermes.builder.hot`` only skips reloading it), so any number of
gateway processes can serve one ``state.db``. Provider keys come from
the server's environment (``keys.find_key``), never from a request. See docs/security.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Mount, Route

from ..agent.runtime import Runtime, explicit_url
from ..builder.hot import HotSessions
from ..config.paths import routes_path
from ..config.settings import Config
from ..core.events import EventSink
from ..routing.resolve import Resolved, load_table
from ..serving.guard import HostOriginGuard, allowed_hosts
from ..serving.http import ApiError, AuthThrottle, error_response, json_response, read_json
from ..serving.http import field as body_field
from ..store import SessionInfo, SessionStore
from ..store.lease import Lease
from ..store.views import session_view
from ..tools.builtins import Toolbox, ToolContext, load_toolbox
from ..transport import Transport
from ..transport.http import HttpTransport
from .failures import answer_error, from_exception
from .idempotency import IdempotencyCache
from .locks import SessionLocks, Take
from .turns import (
    SseEvents,
    TurnDone,
    TurnEvent,
    TurnFailed,
    TurnJob,
    TurnRequest,
    describe,
    openai_usage,
    turn_request,
)

__all__ = ["GatewayOptions", "GatewayState", "create_app", "sse"]

Handler = Callable[[Request], Awaitable[Response]]


@dataclass
class GatewayOptions:
    token: str | None = None
    max_body: int = 1 << 20
    lock_ttl_s: float = 30.0
    lock_wait_s: float = 30.0
    workers: int = 64
    """Turns running at once in this process (worker threads); more wait for a thread."""
    max_steps: int | None = None
    provider_stream: bool | None = None
    """Stream from the provider (default: config ``stream``)."""
    toolbox: Callable[[], Toolbox] | None = None
    allowed_base_urls: tuple[str, ...] = ()
    """Base URLs clients may name, besides each route's default (added to config's list)."""
    allowed_hosts: tuple[str, ...] = ()
    """Host headers accepted besides loopback names and ``bound_host`` (``*``: any)."""
    allowed_origins: tuple[str, ...] = ()
    """Browser origins allowed besides the gateway's own."""
    bound_host: str = "127.0.0.1"
    read_roots: tuple[str, ...] = ()
    """Directories the tools may read besides the working directory (added to config's)."""
    header_timeout_s: float = 10.0
    """A connection must deliver a request's headers within this long (also between requests)."""
    body_timeout_s: float = 30.0
    """A request body must arrive within this long once its headers did (408 after)."""
    max_connections: int = 1024
    """Open connections at once; more are closed on arrival."""


@dataclass
class GatewayState:
    store: SessionStore
    config: Config
    options: GatewayOptions
    locks: SessionLocks = field(init=False)
    idempotency: IdempotencyCache = field(init=False)
    auth_failures: AuthThrottle = field(init=False)
    limiter: anyio.CapacityLimiter = field(init=False)
    """Turns (``/compress`` too) running at once on anyio's worker threads: ``options.workers``."""
    jobs: set[asyncio.Task[Any]] = field(default_factory=set)
    transport: Transport = field(init=False)
    """One HTTP client (connection pool) for every turn: a client per request would pay TLS
    context setup (~100 ms of CA loading) and a new connection on every model call."""

    toolbox: Toolbox = field(init=False)
    """Built once: finding plugin tools reads every installed package's entry points (~40 ms when
    one declares ``hermes.tools``), too much per turn."""
    hot: HotSessions = field(default_factory=HotSessions)
    """Recent sessions' history and build cache: a turn loads and builds only what is new."""
    runtime: Runtime = field(init=False)
    """Routes, session switches, compaction and agents: built once (routes.toml read once)."""

    def __post_init__(self) -> None:
        self.transport = HttpTransport()
        self.runtime = Runtime(self.config, load_table(routes_path()), self.store, self.transport)
        roots = tuple(Path(p) for p in (*self.config.allow_read, *self.options.read_roots))
        self.toolbox = self.options.toolbox() if self.options.toolbox else load_toolbox(
            ToolContext(allow_commands=False, read_roots=roots))
        self.locks = SessionLocks(self.store, ttl_s=self.options.lock_ttl_s, wait_s=self.options.lock_wait_s)
        self.limiter = anyio.CapacityLimiter(self.options.workers)
        self.idempotency = IdempotencyCache()
        self.auth_failures = AuthThrottle()

    # ----------------------------------------------------------------- blocking work (threads)

    def check_client_url(self, resolved: Resolved, base_url: str | None) -> None:
        """A base URL named by a client must be the route's default or allowlisted: the server's
        provider key for that route is sent there (see ``hermes.config.urlpolicy``)."""
        from ..config.urlpolicy import base_url_allowed

        if not base_url:
            return
        allowed = (*self.config.allowed_base_urls, *self.options.allowed_base_urls)
        if not base_url_allowed(base_url, default=resolved.route.base_url, allowlist=allowed):
            raise ApiError(400, "invalid_request",
                           f"base_url {base_url!r} is not allowed: a session may use route {resolved.route.key!r}'s "
                           "default base URL or one listed in [gateway] allowed_base_urls of the server's "
                           "config.toml (or hermes gateway --allow-base-url)")

    def admit(self, resolved: Resolved, base_url: str | None) -> None:
        """A route this server may call for a client: an allowed base URL and a key it holds."""
        self.key_for(resolved, base_url)

    def key_for(self, resolved: Resolved, base_url: str | None) -> str | None:
        """The key a client's turn on ``resolved`` is sent with, once its base URL is allowed
        (looked up once a turn: a lookup checks the key's characters)."""
        self.check_client_url(resolved, base_url)
        return self.runtime.key(resolved)

    def switch(self, info: SessionInfo, req: TurnRequest) -> Resolved:
        """The route of ``req``'s turn (stored when the request switches it), or refused."""
        return self.runtime.switch(info, provider=req.provider, model=req.model, base_url=req.base_url,
                                   check=lambda r: self.admit(r, req.base_url))

    def prepare(self, req: TurnRequest) -> tuple[SessionInfo, Resolved, str | None]:
        """Refuse what can be refused before anything is written, the lease included: an
        unknown session, an unroutable switch, a missing key, a base URL the client may not
        name. The session's row comes from the hot entry when this process ran its last turn
        (it is checked again under the lease), else from the store."""
        info = self.hot.peek(req.session_id) or self.require_session(req.session_id)
        resolved = self.runtime.route(provider=req.provider, model=req.model, base_url=req.base_url, session=info)
        return info, resolved, self.key_for(resolved, req.base_url)

    def run_turn(self, req: TurnRequest, on_event: EventSink | None, take: Take) -> dict[str, Any]:
        """The whole turn, in one worker-thread call: checks, the lease (``take``) and the
        session's row read in its transaction — the version the hot entry is validated
        against — then the agent loop
        (its steps commit through ``Fenced``: refused if another worker took the lease over).
        The route is chosen again only when the row or the request says it may have changed."""
        info, resolved, key = self.prepare(req)
        lease, fresh = take()
        if (fresh.provider, fresh.model, fresh.base_url) != (info.provider, info.model, info.base_url) or (
                req.provider or req.model or req.base_url):
            resolved = self.switch(fresh, req)
            key = self.runtime.key(resolved)
        history, builder = self.hot.checkout(self.store, fresh)
        agent = self.runtime.agent(self.toolbox, api_key=key, on_event=on_event,
                                   stream=self.options.provider_stream, max_steps=self.options.max_steps, builder=builder)
        result = self.runtime.turn(agent, fresh.id, req.content, resolved, lease=lease, history=history,
                                   system=req.system)
        if req.provider or req.model or req.base_url:  # the row may have a new route: peek must see it
            fresh = self.store.get_session(fresh.id)
        self.hot.checkin(fresh, result.history, builder)
        return {"session_id": fresh.id, "answer": result.answer, "steps": result.steps, "stopped": result.stopped,
                "learned": result.learned, "usage": openai_usage(result.usage), **describe(resolved)}

    def require_session(self, session_id: str) -> SessionInfo:
        """The session with exactly this id (no prefix matching over HTTP), else 404."""
        from ..core.errors import StoreError

        try:
            info = self.store.get_session(session_id)
        except StoreError:
            info = None
        if info is None or info.id != session_id:
            raise ApiError(404, "not_found", f"unknown session {session_id!r}")
        return info

    # ----------------------------------------------------------------- turns

    def start_turn(self, req: TurnRequest) -> tuple[TurnJob, asyncio.Task[dict[str, Any]]]:
        job = TurnJob(self.locks, req, lambda on_event, take: self.run_turn(req, on_event, take), self.limiter,
                      wait_s=req.wait_s)
        task = asyncio.create_task(job.run())
        self.jobs.add(task)
        task.add_done_callback(_finished(self.jobs))
        return job, task

    async def turn_json(self, req: TurnRequest) -> dict[str, Any]:
        """A turn answered with one JSON body, run in the request's own task. A client that
        hangs up does not stop it: nothing cancels a request's task when its client leaves,
        and were it cancelled (a shutdown past its grace period), the wait for the worker
        thread is not cut short (``locks.run_to_end``): the turn commits and its lease is
        released. ``drain`` waits for it like any other turn."""
        task = asyncio.current_task()
        assert task is not None
        self.jobs.add(task)
        try:
            return await self.locks.run(req.session_id, lambda take: self.run_turn(req, None, take),
                                        limiter=self.limiter, wait_s=req.wait_s)
        finally:
            self.jobs.discard(task)

    async def turn_once(self, req: TurnRequest, key: str, digest: str) -> dict[str, Any]:
        """``turn_json`` under an ``Idempotency-Key``: a repeat gets the first outcome. A failure
        that stored nothing (the session's message count did not move) is forgotten, so the
        request can be retried; one after a stored step is kept (see ``idempotency``)."""
        future, first = self.idempotency.begin(key, digest)
        if not first:
            outcome = await asyncio.shield(future)
        else:
            count = lambda: self.require_session(req.session_id).message_count
            before = await anyio.to_thread.run_sync(count)
            try:
                outcome = await self.turn_json(req)
                self.idempotency.finish(key, outcome)
            except Exception as e:
                outcome = from_exception(e)
                stored = await anyio.to_thread.run_sync(count) != before
                (self.idempotency.finish if stored else self.idempotency.forget)(key, outcome)
        if isinstance(outcome, ApiError):
            raise outcome
        return dict(outcome)

    async def turn_events(self, req: TurnRequest) -> AsyncIterator[TurnEvent]:
        """Wait for the lock (errors raise before any byte is sent), then yield the events."""
        job, task = self.start_turn(req)
        waiters: set[asyncio.Future[Any]] = {job.locked, task}
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        if task.done() and not job.locked.done():
            task.result()
        if job.locked.done() and job.locked.exception() is not None:
            raise job.locked.exception()  # type: ignore[misc]
        return _drain(job)

    async def drain(self) -> None:
        """Graceful shutdown: let every running turn finish and commit."""
        while self.jobs:
            await asyncio.gather(*list(self.jobs), return_exceptions=True)


async def _drain(job: TurnJob) -> AsyncIterator[TurnEvent]:
    while True:
        event = await job.queue.get()
        yield event
        if isinstance(event, TurnDone | TurnFailed):
            return


def _finished(jobs: set[asyncio.Task[Any]]) -> Callable[[asyncio.Task[Any]], None]:
    def done(task: asyncio.Task[Any]) -> None:
        jobs.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: it was reported to the client (or logged below)

    return done


def sse(event: str | None, data: Any) -> bytes:
    payload = data if isinstance(data, bytes) else orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS)
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + payload + b"\n\n"


# ----------------------------------------------------------------------------- endpoints


def create_app(store: SessionStore, config: Config, options: GatewayOptions | None = None) -> Starlette:
    """The ASGI app over ``store`` (shared by the worker threads; one connection, locked)."""
    from .compat import chat_completions, list_models

    state = GatewayState(store, config, options or GatewayOptions())
    opts = state.options
    runtime = state.runtime

    def endpoint(fn: Handler, *, auth: bool = True, openai: bool = False) -> Handler:
        async def wrapped(request: Request) -> Response:
            try:
                if auth:
                    await state.auth_failures.check(request, opts.token)
                return await fn(request)
            except Exception as e:
                return answer_error(e, request.url.path, openai=openai)

        return wrapped

    async def thread(fn: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args)

    async def healthz(request: Request) -> Response:
        return json_response({"ok": True, "turns_running": len(state.jobs)})

    async def create(request: Request) -> Response:
        body = await read_json(request, opts.max_body, timeout_s=opts.body_timeout_s)
        provider = body_field(body, "provider")
        model = body_field(body, "model")
        base_url = body_field(body, "base_url")
        title = body_field(body, "title") or ""
        resolved = await thread(lambda: runtime.route(provider=provider, model=model, base_url=base_url))
        state.check_client_url(resolved, base_url)
        sid = await thread(lambda: runtime.create(resolved, base_url=base_url, title=title))
        return json_response({"id": sid, "title": title, "provider": resolved.route.key, "model": resolved.model,
                              "base_url": explicit_url(resolved, base_url), **describe(resolved)}, 201)

    async def show(request: Request) -> Response:
        sid = request.path_params["sid"]
        await thread(state.require_session, sid)
        return json_response(await thread(session_view, store, sid))

    async def messages(request: Request) -> Response:
        sid = request.path_params["sid"]
        body = await read_json(request, opts.max_body, timeout_s=opts.body_timeout_s)
        req, stream = turn_request(sid, body, opts.lock_wait_s)
        key = request.headers.get("idempotency-key")
        if not stream and key is not None:
            digest = hashlib.sha256(f"messages\0{sid}\0".encode() + orjson.dumps(body, option=orjson.OPT_SORT_KEYS))
            return json_response(await state.turn_once(req, f"messages\0{key}", digest.hexdigest()))
        if not stream:
            return json_response(await state.turn_json(req))
        events = await state.turn_events(req)

        async def body_iter() -> AsyncIterator[bytes]:
            fold = SseEvents()
            async for event in events:
                for name, data in fold.take(event):
                    yield sse(name, data)

        return StreamingResponse(body_iter(), media_type="text/event-stream",
                                 headers={"cache-control": "no-cache", "x-accel-buffering": "no"})

    async def branch(request: Request) -> Response:
        sid = request.path_params["sid"]
        body = await read_json(request, opts.max_body, optional=True, timeout_s=opts.body_timeout_s)
        upto = body_field(body, "upto_seq", kind=int)
        title = body_field(body, "title") or ""
        info = await thread(state.require_session, sid)
        if upto is not None and not 0 <= upto < info.message_count:
            raise ApiError(400, "invalid_request", f"'upto_seq' must be a message number from 0 to "
                                                   f"{info.message_count - 1} (the session has {info.message_count})")
        new = await thread(lambda: store.branch(sid, upto_seq=upto, title=title))
        return json_response({"id": new, "parent_id": sid, "branch_of_seq": upto}, 201)

    async def compress(request: Request) -> Response:
        sid = request.path_params["sid"]
        body = await read_json(request, opts.max_body, optional=True, timeout_s=opts.body_timeout_s)
        await thread(state.require_session, sid)
        keep_last = body_field(body, "keep_last", kind=int)
        if keep_last is not None and keep_last < 0:
            raise ApiError(400, "invalid_request", "'keep_last' must be a number of turns >= 0")

        def work(lease: Lease) -> str:
            return runtime.compress(sid, lease=lease, keep_last=keep_last, toolbox=state.toolbox)

        async with state.locks.hold(sid) as lease:  # a checkpoint is a turn: it must not interleave with one
            out = await anyio.to_thread.run_sync(work, lease, limiter=state.limiter)
        line = out if isinstance(out, str) else repr(out)
        return json_response({"session_id": sid, "result": line})

    async def completions(request: Request) -> Response:
        return await chat_completions(state, request)

    async def models(request: Request) -> Response:
        return await list_models(state, request)

    async def not_found(request: Request, exc: Exception) -> Response:
        status, detail = (exc.status_code, exc.detail) if isinstance(exc, HTTPException) else (404, "")
        kind = {404: "not_found", 405: "method_not_allowed"}.get(status, "invalid_request")
        return error_response(status, kind, str(detail or "") or kind)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await state.drain()
        state.locks.close()
        state.transport.close()

    routes = [
        Route("/healthz", endpoint(healthz, auth=False), methods=["GET"]),
        Route("/v1/sessions", endpoint(create), methods=["POST"]),
        Route("/v1/sessions/{sid}", endpoint(show), methods=["GET"]),
        Route("/v1/sessions/{sid}/messages", endpoint(messages), methods=["POST"]),
        Route("/v1/sessions/{sid}/branch", endpoint(branch), methods=["POST"]),
        Route("/v1/sessions/{sid}/compress", endpoint(compress), methods=["POST"]),
        Route("/v1/chat/completions", endpoint(completions, openai=True), methods=["POST"]),
        Route("/v1/models", endpoint(models, openai=True), methods=["GET"]),
        Mount("/ui", app=_ui(store, opts, state.auth_failures)),
    ]
    hosts = allowed_hosts(opts.bound_host, (*config.allowed_hosts, *opts.allowed_hosts))
    origins = (*config.allowed_origins, *opts.allowed_origins)
    app = Starlette(routes=routes, exception_handlers={HTTPException: not_found}, lifespan=lifespan,
                    middleware=[Middleware(HostOriginGuard, hosts=hosts, origins=origins)])
    app.state.gateway = state
    return app


def _ui(store: SessionStore, opts: GatewayOptions, throttle: AuthThrottle) -> Any:
    """The web view (docs/ui.md) under the API's token, wrong tokens slowed down alike; loopback
    only without one. The Host/Origin guard wraps it with the rest of the app."""
    from ..ui import create_ui

    return create_ui(store, token=opts.token, throttle=throttle)

