"""``POST /v1/sessions/{sid}/messages`` served without Starlette's router.

A turn is the request a gateway serves many times a second, and what surrounds the handler is
paid by every one of them: the exception middleware, the router trying each route's pattern in
turn, the per-route request/response wrappers. This middleware sits right after the Host/Origin
guard and hands a turn's request straight to the same handler the route would have called; every
other request (a GET on the same path included, which still gets its 405) goes on through the
router. The handler answers errors itself (``endpoint`` in ``app``), so nothing a turn could raise
needed the layers skipped: what remains around it is the server-error middleware and the guard.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

__all__ = ["TurnFastPath"]

_MESSAGES = re.compile(r"/v1/sessions/([^/]+)/messages")
"""The route's own pattern: Starlette's ``{sid}`` matches one path segment."""


class TurnFastPath:
    """ASGI middleware: a turn's POST goes to ``handler`` directly; anything else to ``app``."""

    def __init__(self, app: Any, *, handler: Callable[[Request], Awaitable[Response]]) -> None:
        self.app = app
        self.handler = handler

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and not scope.get("root_path"):
            m = _MESSAGES.fullmatch(scope["path"])
            if m is not None:
                scope["path_params"] = {"sid": m[1]}
                response = await self.handler(Request(scope, receive, send))
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
