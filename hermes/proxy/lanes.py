"""The parts of the proxy's ``httpx`` client (for what its own chat client, ``upstream.py``,
does not send: other paths, and requests through a proxy named by the environment): its
connections, a stack of small connection pools ("lanes", one per request in flight), and its
cookie jar, which keeps nothing.

httpcore's connection pool checks every connection it holds on each request and on each
response's close (is it expired, did the server close it — a ``poll`` and a peer lookup
each), with a list comprehension over all of them inside that loop. One pool shared by the
proxy held a connection per request that was ever in flight at once: after 32 clients a lone
client's request paid for 32 connections, twice, and the pool's bookkeeping was a quarter of the
proxy's CPU per request. Here a request takes the lane that went idle last (a stack) and
gives it back when its response is closed; a lane holds the connections of the one request
at a time it serves (one per upstream it was sent to), so the checks are few and the lane's
connection is the one just used. The process still holds one connection per request in flight
at the peak, as before; a lane whose response is never closed is simply not reused.
"""

from __future__ import annotations

import http.cookiejar
import ssl
from typing import Any

import httpx

__all__ = ["Lanes", "NoCookies"]


class NoCookies(http.cookiejar.CookieJar):
    """A cookie jar that keeps nothing. The proxy serves many clients through one HTTP client:
    a jar would store a cookie an upstream (or the CDN in front of it) set in one tenant's
    response and send it with every other tenant's requests. ``Set-Cookie`` is relayed to the
    client that got it, and a client's own ``Cookie`` header is forwarded as it came."""

    def set_cookie(self, cookie: http.cookiejar.Cookie) -> None:
        pass

    def extract_cookies(self, response: Any, request: Any) -> None:
        pass


class _Released(httpx.AsyncByteStream):
    """A response body that returns its lane to the stack once closed."""

    def __init__(self, stream: httpx.AsyncByteStream, lanes: Lanes, lane: httpx.AsyncHTTPTransport) -> None:
        self._stream = stream
        self._lanes = lanes
        self._lane: httpx.AsyncHTTPTransport | None = lane

    def __aiter__(self):  # type: ignore[no-untyped-def]
        return self._stream.__aiter__()

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            lane, self._lane = self._lane, None
            if lane is not None:
                self._lanes.idle.append(lane)


class Lanes(httpx.AsyncBaseTransport):
    """An ``httpx`` transport for one event loop (no locks: the stack is touched only between
    awaits). ``limits`` apply to each lane."""

    def __init__(self, limits: httpx.Limits) -> None:
        self.limits = limits
        self._tls: ssl.SSLContext | None = None
        self.idle: list[httpx.AsyncHTTPTransport] = []
        self.made = 0
        self._all: list[httpx.AsyncHTTPTransport] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.idle:
            lane = self.idle.pop()
        else:
            if self._tls is None:  # httpx's default context (environment honoured), loaded once for all lanes
                self._tls = httpx.create_ssl_context(trust_env=True)
            lane = httpx.AsyncHTTPTransport(verify=self._tls, limits=self.limits)
            self._all.append(lane)
            self.made += 1
        try:
            response = await lane.handle_async_request(request)
        except BaseException:
            self.idle.append(lane)
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _Released(response.stream, self, lane)
        return response

    async def aclose(self) -> None:
        lanes, self._all, self.idle = self._all, [], []
        for lane in lanes:
            await lane.aclose()
