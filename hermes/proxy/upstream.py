"""The proxy's HTTP/1.1 client for chat requests: a connection per request in flight, reused
last-idle-first, with the response parsed by ``httptools`` (llhttp, in C).

A proxied chat request crosses two HTTP stacks in the proxy: the server (uvicorn, Starlette)
and the client to the upstream. With ``httpx`` as that client, building the request, its
header models, the cookie and redirect layers, ``httpcore``'s pool and ``h11``'s state
machine were 60% of the proxy's CPU per request (a profile of 1,000 requests at one
client). This client does what a proxied POST needs and nothing else: it writes the request
in one piece, parses the answer in C, and hands the body over as it arrives (a stream is
relayed chunk by chunk, never buffered whole).

What it does not do is sent to ``httpx``: a request through a proxy named by the
environment (``HTTP(S)_PROXY``, ``ALL_PROXY``, honouring ``NO_PROXY``), and every other path
the proxy relays (``GET /models``, …); that client keeps no cookies (``NoCookies``). Connections: an idle connection the server has
closed is never reused (its transport has seen the end), and one idle for ``keepalive_s``
(4 s, before common 5 s server keep-alives end) is dropped. A request is never sent twice:
a POST the upstream may have read is not retried (neither did ``httpx``)."""

from __future__ import annotations

import asyncio
import http.cookiejar
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any, cast
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

import httptools
import httpx

__all__ = ["NoCookies", "UpstreamError", "UpstreamResponse", "Upstreams", "needs_env_proxy"]

_HIGH_WATER = 1 << 20
"""Body bytes buffered before the connection stops reading (the client reads slower)."""


class NoCookies(http.cookiejar.CookieJar):
    """A cookie jar that keeps nothing. The proxy serves many clients through one HTTP client:
    a jar would store a cookie an upstream (or the CDN in front of it) set in one tenant's
    response and send it with every other tenant's requests. ``Set-Cookie`` is relayed to the
    client that got it, and a client's own ``Cookie`` header is forwarded as it came."""

    def set_cookie(self, cookie: http.cookiejar.Cookie) -> None:
        pass

    def extract_cookies(self, response: Any, request: Any) -> None:
        pass


class UpstreamError(Exception):
    """The upstream could not be reached or broke off; the message says how."""


def needs_env_proxy(url: str) -> bool:
    """True when the environment names a proxy for ``url`` (as ``httpx``'s ``trust_env`` reads it)."""
    proxies = getproxies()
    if not proxies:
        return False
    parts = urlsplit(url)
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return False
    return not proxy_bypass(parts.hostname or "")


class _Connection(asyncio.Protocol):
    """One keep-alive connection; one response at a time."""

    def __init__(self, key: tuple[str, str, int]) -> None:
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._parser = httptools.HttpResponseParser(self)
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.keep_alive = False
        self.length: int | None = None
        self.chunked = False
        self.raw: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []
        self.buffered = 0
        self.headers_done = False
        self.complete = False
        self.error: BaseException | None = None
        self._wake: asyncio.Future[None] | None = None
        self.paused = False

    # --- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport (uvloop's is not an asyncio.Transport subclass, only alike)
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as e:
            self._fail(UpstreamError(f"the upstream's answer is not valid HTTP: {e}"))
            assert self.transport is not None
            self.transport.close()

    def eof_received(self) -> bool | None:
        return None  # close the transport: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.complete:
            if self.headers_done and self.length is None and not self.chunked and exc is None:
                # an answer with neither a length nor chunks is delimited by the end of the connection
                self.complete = True
                self._poke()
            else:
                self._fail(UpstreamError("the upstream closed the connection before its answer was complete"
                                         + (f" ({exc})" if exc else "")))

    # --- httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.raw.append((name, value))

    def on_headers_complete(self) -> None:
        self.status = self._parser.get_status_code()
        for name, value in self.raw:
            n = name.lower()
            if n == b"content-length":
                self.length = int(value)
            elif n == b"transfer-encoding" and b"chunked" in value.lower():
                self.chunked = True
        self.headers_done = True
        self._poke()

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)
        self.buffered += len(body)
        if self.buffered > _HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._poke()

    def on_message_complete(self) -> None:
        self.keep_alive = self._parser.should_keep_alive()  # the parser forgets it once the message is done
        self.complete = True
        self._poke()

    # --- the waiting side
    def _poke(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def _fail(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error
        self._poke()

    async def wait(self, timeout_s: float) -> None:
        """Until something arrives (headers, body, the end, an error)."""
        self._wake = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout_s):
                await self._wake
        except TimeoutError:
            raise UpstreamError(f"the upstream sent nothing for {timeout_s:g} s") from None
        finally:
            self._wake = None

    def take(self) -> list[bytes]:
        chunks, self.chunks, self.buffered = self.chunks, [], 0
        if self.paused and self.transport is not None and not self.closed:
            self.paused = False
            self.transport.resume_reading()
        return chunks

    @property
    def reusable(self) -> bool:
        return self.complete and self.keep_alive and not self.closed and self.error is None


class UpstreamResponse:
    """What the proxy reads of an answer: status, headers, the body as it arrives. ``aclose``
    gives the connection back when the whole answer was read, else closes it."""

    def __init__(self, pool: Upstreams, conn: _Connection, timeout_s: float) -> None:
        self._pool = pool
        self._conn: _Connection | None = conn
        self._timeout_s = timeout_s
        self.status_code = conn.status
        self.headers = httpx.Headers(conn.raw)  # the bytes as sent: relayed as they came

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        conn = self._conn
        if conn is None:
            return
        while True:
            if conn.chunks:  # what arrived while the last chunks were handed on (reading may be paused)
                for chunk in conn.take():
                    yield chunk
                continue
            if conn.error is not None:
                raise conn.error
            if conn.complete:
                return
            await conn.wait(self._timeout_s)

    async def aread(self) -> bytes:
        return b"".join([chunk async for chunk in self.aiter_raw()])

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._pool.release(conn)


class Upstreams:
    """Connections to the upstreams, per (scheme, host, port), the last idle one first."""

    def __init__(self, *, timeout_s: float, connect_s: float = 30.0, keepalive_s: float = 4.0) -> None:
        self.timeout_s = timeout_s
        self.connect_s = connect_s
        self.keepalive_s = keepalive_s
        self.opened = 0
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._tls: ssl.SSLContext | None = None

    async def post(self, url: str, headers: dict[str, str], content: bytes) -> UpstreamResponse:
        """Send ``content`` to ``url`` with ``headers`` (hop-by-hop ones already removed) and
        return once the answer's headers are in."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname:
            raise UpstreamError(f"not an http(s) URL: {url!r}")
        port = parts.port or (443 if scheme == "https" else 80)
        key = (scheme, parts.hostname, port)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname  # an IPv6 literal
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        lines = [f"POST {target} HTTP/1.1", f"Host: {host}", f"Content-Length: {len(content)}"]
        lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() not in ("host", "content-length")]
        text = "\r\n".join(lines)
        if text.count("\n") != len(lines) - 1 or text.count("\r") != len(lines) - 1:
            raise UpstreamError("a header name or value holds a line break")
        head = (text + "\r\n\r\n").encode("latin-1")
        conn = self._reuse(key) or await self._open(key)
        return await self._exchange(conn, head, content)

    async def _exchange(self, conn: _Connection, head: bytes, content: bytes) -> UpstreamResponse:
        assert conn.transport is not None
        if len(content) < 65536:  # one write, one segment; a large body is not copied to join it
            conn.transport.write(head + content)
        else:
            conn.transport.write(head)
            conn.transport.write(content)
        try:
            while not conn.headers_done:
                if conn.error is not None:
                    raise conn.error
                await conn.wait(self.timeout_s)
        except BaseException:
            conn.closed = True
            conn.transport.close()
            raise
        return UpstreamResponse(self, conn, self.timeout_s)

    def _reuse(self, key: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            if not conn.closed and now - conn.idle_since < self.keepalive_s:
                conn._reset()
                return conn
            if conn.transport is not None:
                conn.transport.close()
        return None

    async def _open(self, key: tuple[str, str, int]) -> _Connection:
        scheme, host, port = key
        tls: ssl.SSLContext | None = None
        if scheme == "https":
            if self._tls is None:  # httpx's default context (environment honoured), loaded once
                self._tls = httpx.create_ssl_context(trust_env=True)
            tls = self._tls
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_s):
                _, conn = await loop.create_connection(lambda: _Connection(key), host, port, ssl=tls,
                                                       server_hostname=host if tls else None)
        except TimeoutError:
            raise UpstreamError(f"cannot connect to {host}:{port} within {self.connect_s:g} s") from None
        except (OSError, ssl.SSLError) as e:
            raise UpstreamError(f"cannot connect to {host}:{port}: {type(e).__name__}: {e}") from None
        self.opened += 1  # (asyncio sets TCP_NODELAY on the sockets it connects)
        return conn

    def release(self, conn: _Connection) -> None:
        """Back to the idle stack when its answer was read to the end; closed otherwise."""
        if conn.reusable:
            conn.idle_since = time.monotonic()
            self._idle.setdefault(conn.key, []).append(conn)
        elif conn.transport is not None and not conn.closed:
            conn.closed = True
            conn.transport.close()

    async def aclose(self) -> None:
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                if conn.transport is not None:
                    conn.transport.close()
