"""``POST /<route>/v1/responses`` on an Anthropic route: Codex on Claude, thinking kept signed.

The Responses request has become chat messages and opened envelopes (``Proxy.responses``);
``native_door`` builds the route's Messages request from them with the planner and wire
``hermes chat`` uses. The answer is decoded by the Anthropic wire's decoder and handed back as
Responses output (``Proxy.responses_answer``): each turn's thinking blocks, signatures
included, sealed into the reasoning item's ``encrypted_content`` — bound to the tenant and the
route — so the next request restores them byte for byte and the route verifies its own
signatures. A refusal that teaches something (a value the model does not take) is learned
and the request retried once, as on every other door.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response

from ..agent.provider import plain
from ..core.errors import ProviderHTTPError
from ..core.messages import Message, Reasoning
from ..rejections import RetryState, recover
from ..routing.routes import Route as Row
from ..serving.http import ApiError
from ..store.requestlog import log_event
from ..wire import get_wire
from . import app
from .memory import credentials
from .native_door import NativeRequest, build, history_of
from .recorder import Recorder
from .responses_door import DoorRequest

if TYPE_CHECKING:
    from .app import Proxy

__all__ = ["responses"]

_CLIENT_AUTH = ("authorization", "x-api-key", "api-key", "x-goog-api-key")


def _key(request: Request) -> str | None:
    """The client's own key, however its client sent it (Codex: a bearer token)."""
    for name, value in credentials(request.headers, ""):
        if name == "authorization":
            scheme, _, token = value.partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
        if name in _CLIENT_AUTH:
            return value
    return None


def _headers(proxy: Proxy, request: Request, row: Row, wire_headers: Mapping[str, str]) -> dict[str, str]:
    """What the route gets: JSON, the wire's headers, and the client's key the way the route
    reads it (``x-api-key`` for Anthropic) — the Responses client's other headers stay behind."""
    from ..config.keys import auth_headers, find_key

    key = _key(request)
    if key is None and proxy.options.env_keys:
        try:
            key = find_key(row)
        except Exception:  # no key in the environment: the route says what is missing
            key = None
    return {"content-type": "application/json", "accept-encoding": "identity", **wire_headers,
            **auth_headers(row, key)}


def _effort(body: Mapping[str, Any]) -> str | None:
    asked = body.get("reasoning")
    effort = asked.get("effort") if isinstance(asked, Mapping) else None
    return effort if isinstance(effort, str) and effort else None


async def responses(proxy: Proxy, request: Request, row: Row, upstream: str, body: Mapping[str, Any],
                    door: DoorRequest, opened: Mapping[int, Message],
                    seal: Callable[[Sequence[Reasoning]], str | None] | None, t0: float) -> Response:
    """One Responses request served by an Anthropic route (module docstring)."""
    target = proxy.target(row, upstream, str(body["model"]))
    history = history_of(door.body["messages"], opened, target)

    def made() -> NativeRequest:
        return build(door.body, history, target, *proxy.lessons(target),
                     effort=_effort(body), stream=door.stream)

    req = made()
    headers = _headers(proxy, request, row, req.headers)
    resp = await proxy.forward("POST", req.url, headers, orjson.dumps(req.body))
    retry = RetryState()
    if app._may_learn(resp.status_code):
        err = await proxy.read(resp, req.url)
        problem = ProviderHTTPError("upstream refused the request", status=resp.status_code,
                                    body=err.decode("utf-8", "replace"), route=row.key,
                                    attempt=get_wire(row.wire).attempt(req.plan, plain(req.body)))
        if not recover(proxy.ledger, None, req.target, problem, retry):
            _log(req, resp.status_code, t0, door.stream, retry, len(opened))
            return app._door_error(resp, err)
        proxy.forget_lessons()
        req = made()
        resp = await proxy.forward("POST", req.url, headers, orjson.dumps(req.body))
    if resp.status_code != 200:
        err = await proxy.read(resp, req.url)
        _log(req, resp.status_code, t0, door.stream, retry, len(opened))
        return app._door_error(resp, err)
    done = BackgroundTask(_log, req, 200, t0, door.stream, retry, len(opened))
    try:
        return await proxy.responses_answer(body, resp, Recorder(req.target), req.url, None, seal, done)
    except ApiError:
        _log(req, 502, t0, door.stream, retry, len(opened))
        raise


def _log(req: NativeRequest, status: int, t0: float, stream: bool, retry: RetryState, opened: int) -> None:
    """The request log's ``proxy`` record for a native-route door request: names and counts only."""
    log_event("proxy", route=req.target.route.key, host=req.target.host, model=req.target.model, door="responses",
              stream=stream, status=status, ms=round((time.perf_counter() - t0) * 1000, 1), retried=retry.retried,
              opened=opened, assistant_messages=sum(1 for m in req.plan.messages if m.role == "assistant"))
