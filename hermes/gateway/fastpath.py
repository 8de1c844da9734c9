"""The one request a server serves many times a second, handed to its handler without Starlette's router.

What surrounds a handler is paid by every request: the exception middleware, the router trying
each route's pattern in turn, the per-route request/response wrappers. ``FastPath`` sits right
after the Host/Origin guard and hands a request with the given method whose path matches the
given pattern straight to the handler the route would have called, with the same path
parameters; every other request (the same path with another method included, which still gets
its 405) goes on through the router. The handlers answer errors themselves (the gateway's
``endpoint`` wrapper, the proxy's ``forward``), so nothing they raise needed the layers
skipped: what remains around them is the server-error middleware and the guard.

Used for the gateway's ``POST /v1/sessions/{sid}/messages`` (a turn) and the proxy's
``POST /{route}/{rest}`` (a chat request).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

__all__ = ["TURN", "FastPath"]

TURN = re.compile(r"/v1/sessions/(?P<sid>[^/]+)/messages")
"""The turn route's own pattern: Starlette's ``{sid}`` matches one path segment."""


class FastPath:
    """ASGI middleware: a ``method`` request whose path fully matches ``pattern`` goes to
    ``handler`` directly (the pattern's named groups become its path parameters); anything
    else to ``app``."""

    def __init__(self, app: Any, *, handler: Callable[[Request], Awaitable[Response]], pattern: re.Pattern[str],
                 method: str = "POST") -> None:
        self.app = app
        self.handler = handler
        self.pattern = pattern
        self.method = method

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == self.method and not scope.get("root_path"):
            m = self.pattern.fullmatch(scope["path"])
            if m is not None:
                scope["path_params"] = m.groupdict()
                response = await self.handler(Request(scope, receive, send))
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
