"""The web view's Starlette app: server-rendered pages over a store and the request log.

Mounted at ``/ui`` by the gateway (``create_app``) and served alone by ``hermes ui``. Pages
are Jinja2 templates shipped in this package with autoescaping on, and every printed value
also passes ``errors.redact``; scripts and styles are files served from ``/ui/static`` and
the Content-Security-Policy allows nothing else (no inline script, no other origin), so model
text that contains markup can only ever show as text. Read-only: nothing here writes.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote

import anyio.to_thread
import jinja2
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from ..core.errors import StoreError, redact, register_secret
from ..serving.http import ApiError, AuthThrottle
from ..store.requestlog import LOG_NAME, read_log
from .auth import COOKIE, UiAccess, safe_next
from .cells import row_cells
from .data import live_record, request_matrix, session_records, session_rows, timeline
from .live import tail_events

if TYPE_CHECKING:
    from ..store import SessionStore

__all__ = ["create_ui"]

Handler = Callable[[Request], Awaitable[Response]]

HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                               "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",  # "no-referrer" would make browsers send "Origin: null" on our own forms
    "cache-control": "no-store",
}
DEFAULT_COLUMNS = 60
"""Requests drawn in the matrix unless ``?last=N`` (0 = all) says otherwise."""
STATIC = {"ui.css": "text/css; charset=utf-8", "ui.js": "text/javascript; charset=utf-8"}


def _finalize(value: Any) -> Any:
    """Every value a template prints is scrubbed of known secrets (autoescape then escapes it).
    Shorter strings than any secret or key shape (6 characters) cannot hold one."""
    if isinstance(value, Markup):  # built by ``cells`` from values it escaped and scrubbed itself
        return value
    return redact(value) if isinstance(value, str) and len(value) >= 6 else value


class _Environment(jinja2.Environment):
    """``x.name`` on a dict reads the key first: the view models are dicts, and Jinja's default
    (attribute first, failing with an exception, then the key) triples the cost of a long page."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)


def _environment() -> jinja2.Environment:
    env = _Environment(loader=jinja2.PackageLoader("hermes.ui", "templates"), autoescape=True,
                       finalize=_finalize, trim_blocks=True, lstrip_blocks=True)
    env.globals["row_cells"] = row_cells
    return env


def _register_env_secrets() -> None:
    """Keys this process can see are scrubbed from pages even if some stored text quoted one."""
    for name, value in os.environ.items():
        if name.endswith(("_API_KEY", "_TOKEN", "_SECRET_ACCESS_KEY")) or name == "HERMES_GATEWAY_TOKEN":
            register_secret(value)


def _log_files(log: Path) -> list[Path]:
    """The rotated files oldest first, then the current one: a long session's early requests
    may already have rotated out of ``hermes.log``."""
    rotated = [log.with_name(f"{log.name}.{n}") for n in (3, 2, 1)]
    return [p for p in rotated if p.exists()] + [log]


def create_ui(store: SessionStore, *, token: str | None = None, log_path: Path | None = None,
              throttle: AuthThrottle | None = None) -> Starlette:
    """The UI app over ``store``. ``token``: the API token (login form + cookie), or None for
    loopback only. ``throttle``: the gateway's back-off for wrong tokens, applied to a wrong
    login or bearer token here too. The gateway's Host/Origin guard is middleware around the
    whole app, so it covers these pages as well."""
    from ..config.paths import logs_dir

    _register_env_secrets()
    register_secret(token)
    env = _environment()
    auth = UiAccess(token)

    def log() -> Path:  # looked up per request: creating the app must not touch HERMES_HOME
        return log_path or logs_dir() / LOG_NAME

    def base_of(request: Request) -> str:
        return str(request.scope.get("root_path", "")).rstrip("/")

    def render(request: Request, name: str, code: int = 200, **ctx: Any) -> HTMLResponse:
        html = env.get_template(name).render(base=base_of(request), token_mode=auth.token is not None, **ctx)
        return HTMLResponse(html, code, headers=HEADERS)

    def page(fn: Handler, *, login: bool = True) -> Handler:
        async def wrapped(request: Request) -> Response:
            try:
                if login:
                    try:
                        auth.check(request)
                    except ApiError as e:
                        if e.status == 401 and throttle is not None and "authorization" in request.headers:
                            await throttle.failed(request)  # a bearer token was given, and it was wrong
                        raise
                return await fn(request)
            except ApiError as e:
                if e.status == 401 and request.method == "GET" and "text/html" in request.headers.get("accept", ""):
                    target = safe_next(request.url.path, base_of(request))
                    return RedirectResponse(f"{base_of(request)}/login?next={quote(target, safe='/')}", 303,
                                            headers=HEADERS)
                return render(request, "error.html", e.status, status=e.status, message=e.message)
            except StoreError as e:
                return render(request, "error.html", 404, status=404, message=str(e))

        return wrapped

    async def thread(fn: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args)

    def exact(sid: str) -> Any:
        info = store.get_session(sid)
        if info.id != sid:  # no prefix matching in URLs
            raise StoreError(f"unknown session {sid!r}")
        return info

    async def sessions(request: Request) -> Response:
        q = request.query_params.get("q", "")
        rows = await thread(session_rows, store, q)
        return render(request, "sessions.html", rows=rows, q=q)

    async def session(request: Request) -> Response:
        sid = request.path_params["sid"]
        await thread(exact, sid)
        view = await thread(timeline, store, sid)
        return render(request, "session.html", **view)

    async def requests(request: Request) -> Response:
        sid = request.path_params["sid"]
        info = await thread(exact, sid)
        view = await thread(timeline, store, sid)
        rows = [it["seq"] for it in view["items"] if it["role"] == "assistant"]

        def read(session_id: str) -> list[Any]:
            return [rec for path in _log_files(log()) for rec in read_log(session_id, path)]

        raw = request.query_params.get("last", "")
        last = int(raw) if raw.isdigit() else DEFAULT_COLUMNS
        matrix = await thread(lambda: request_matrix(session_records(store, info, read), rows, last=last))
        by_seq = {it["seq"]: it for it in view["items"]}
        return render(request, "requests.html", session=view["session"], matrix=matrix, by_seq=by_seq)

    async def live(request: Request) -> Response:
        return render(request, "live.html", session=request.query_params.get("session", ""))

    async def events(request: Request) -> Response:
        stream = tail_events(log(), last_id=request.headers.get("last-event-id"),
                             session=request.query_params.get("session") or None, shape=live_record)
        return StreamingResponse(stream, media_type="text/event-stream",
                                 headers={**HEADERS, "x-accel-buffering": "no"})

    async def login_form(request: Request) -> Response:
        if auth.token is None or auth.cookie_ok(request):
            return RedirectResponse(base_of(request) + "/", 303, headers=HEADERS)
        return render(request, "login.html", next=safe_next(request.query_params.get("next"), base_of(request)),
                      failed=False)

    async def login(request: Request) -> Response:
        auth.same_origin(request)
        body = (await request.body())[:8192].decode("utf-8", "replace")
        form = {k: v[0] for k, v in parse_qs(body).items()}
        target = safe_next(form.get("next"), base_of(request))
        if auth.token is None:
            return RedirectResponse(target, 303, headers=HEADERS)
        if not auth.matches(form.get("token", "")):
            if throttle is not None:
                await throttle.failed(request)
            return render(request, "login.html", 401, next=target, failed=True)
        resp = RedirectResponse(target, 303, headers=HEADERS)
        resp.set_cookie(COOKIE, auth.cookie_value(), httponly=True, samesite="strict", path=base_of(request) + "/",
                        secure=request.url.scheme == "https")
        return resp

    async def logout(request: Request) -> Response:
        auth.same_origin(request)
        resp = RedirectResponse(base_of(request) + "/login", 303, headers=HEADERS)
        resp.delete_cookie(COOKIE, path=base_of(request) + "/", httponly=True, samesite="strict")
        return resp

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return Response("not found", 404, media_type="text/plain")
        data = resources.files("hermes.ui").joinpath("static", name).read_bytes()
        return Response(data, media_type=STATIC[name], headers={**HEADERS, "cache-control": "max-age=300"})

    routes = [
        Route("/", page(sessions), methods=["GET"]),
        Route("/s/{sid}", page(session), methods=["GET"]),
        Route("/s/{sid}/requests", page(requests), methods=["GET"]),
        Route("/live", page(live), methods=["GET"]),
        Route("/live/events", page(events), methods=["GET"]),
        Route("/login", page(login_form, login=False), methods=["GET"]),
        Route("/login", page(login, login=False), methods=["POST"]),
        Route("/logout", page(logout, login=False), methods=["POST"]),
        Route("/static/{name}", static, methods=["GET"]),
    ]
    return Starlette(routes=routes)
