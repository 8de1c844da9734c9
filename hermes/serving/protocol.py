"""uvicorn as every server here runs it, with the two limits against slow clients it lacks.

uvicorn has no deadline for a request's headers: its keep-alive timer is cancelled by the
first byte of the next request, so a client that sends one byte every few seconds keeps a
connection (and a file descriptor) forever, and it has no cap on open connections (its
``limit_concurrency`` answers 503 but keeps every socket). ``guarded_protocol`` adds both to
uvicorn's ``httptools`` protocol, overriding only the four callbacks uvicorn's own protocol
defines (``connection_made``, ``on_headers_complete``, ``on_response_complete``,
``connection_lost``; the uvicorn range in pyproject.toml is the one this was checked against).
The event loop alone waits on a client's bytes; no thread ever does.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["guarded_protocol", "server_config"]


def guarded_protocol(header_timeout_s: float, max_connections: int) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol with a deadline for each request's headers — from connection
    open, and again from the end of each response, so an idle or trickling keep-alive
    connection is closed too — and a cap on open connections. At the cap, a new connection
    evicts the longest-waiting one that has not sent its headers yet (an attacker's stalled
    sockets go first, a client mid-request never does); only when there is none is the new
    connection closed."""

    class Guarded(HttpToolsProtocol):
        _deadline: asyncio.TimerHandle | None = None
        _armed_at: float = 0.0

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                waiting = [c for c in self.connections
                           if isinstance(c, Guarded) and c is not self and c._deadline is not None]
                if not waiting:
                    transport.abort()
                    return
                min(waiting, key=lambda c: c._armed_at)._expire()
            self._arm()

        def _arm(self) -> None:
            self._disarm()
            self._armed_at = self.loop.time()
            self._deadline = self.loop.call_later(header_timeout_s, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._disarm()
            if not self.transport.is_closing():
                self.transport.abort()

        def on_headers_complete(self) -> None:
            self._disarm()  # the body has its own deadline (``serving.http.read_json``)
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            idle = not self.pipeline  # else the next request, already read, starts now
            super().on_response_complete()
            if idle and not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return Guarded


def server_config(app: Any, *, header_timeout_s: float, max_connections: int, log_level: str = "warning",
                  graceful_s: int | None = None) -> Any:
    """The uvicorn configuration of a Hermes server (gateway, proxy, web view).

    ``proxy_headers=False``: uvicorn otherwise takes a request's client address from its
    ``X-Forwarded-For`` header whenever the connection comes from 127.0.0.1, so any local
    process could name a new address with each wrong token and never wait for the auth
    throttle's back-off (which is kept per address). Behind a reverse proxy every client then
    shares the proxy's address: wrong tokens back off together, right ones never wait."""
    import uvicorn

    return uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="on", proxy_headers=False,
                          timeout_graceful_shutdown=graceful_s, limit_concurrency=None,
                          http=guarded_protocol(header_timeout_s, max_connections),
                          timeout_keep_alive=max(1, int(header_timeout_s)))
