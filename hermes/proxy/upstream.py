"""The proxy's one HTTP client to the upstreams: a shared ``httpx.AsyncClient`` and bounded reads.

One pool per process (HTTP/1.1, keep-alive), so a connection goes back to it only after
``httpcore`` has read a complete final response: interim ``1xx`` answers are skipped by the
parser, never taken for the answer. The client keeps no cookies (``NoCookies``) and follows
no redirects; ``HTTP(S)_PROXY`` / ``NO_PROXY`` are honoured as ``httpx`` reads them.
"""

from __future__ import annotations

import http.cookiejar
from collections.abc import AsyncIterator
from typing import Any

import httpx

__all__ = ["NoCookies", "TooLarge", "bounded", "check_declared", "make_client", "read_bounded"]


class NoCookies(http.cookiejar.CookieJar):
    """A cookie jar that keeps nothing. The proxy serves many clients through one HTTP client:
    a jar would store a cookie an upstream (or the CDN in front of it) set in one tenant's
    response and send it with every other tenant's requests. ``Set-Cookie`` is relayed to the
    client that got it, and a client's own ``Cookie`` header is forwarded as it came."""

    def set_cookie(self, cookie: http.cookiejar.Cookie) -> None:
        pass

    def extract_cookies(self, response: Any, request: Any) -> None:
        pass


class TooLarge(Exception):
    """The upstream's answer is larger than the proxy reads (``--max-upstream-body``)."""


def make_client(timeout_s: float) -> httpx.AsyncClient:
    """The shared client: idle connections dropped before common 5 s server keep-alives end,
    so a reused one is not closed under a request."""
    return httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=30.0),
                             limits=httpx.Limits(max_connections=None, max_keepalive_connections=64,
                                                 keepalive_expiry=4.0),
                             cookies=NoCookies(), follow_redirects=False)


def check_declared(resp: httpx.Response, limit: int) -> None:
    """``TooLarge`` when the answer's ``Content-Length`` is already past ``limit``."""
    declared = resp.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"the upstream's answer is {int(declared)} bytes; the proxy reads at most {limit}")


async def read_bounded(resp: httpx.Response, limit: int) -> bytes:
    """The whole (decoded) body, or ``TooLarge`` past ``limit`` bytes; closes ``resp`` either way."""
    try:
        check_declared(resp, limit)
        chunks: list[bytes] = []
        size = 0
        async for chunk in resp.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise TooLarge(f"the upstream's answer exceeds {limit} bytes, the most the proxy reads")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        await resp.aclose()


async def bounded(resp: httpx.Response, limit: int) -> AsyncIterator[bytes]:
    """The raw body as it arrives, never buffered whole; stops with ``TooLarge`` past ``limit``
    bytes (the client sees its answer cut off). Closes ``resp`` at the end."""
    size = 0
    try:
        async for chunk in resp.aiter_raw():
            size += len(chunk)
            if size > limit:
                raise TooLarge(f"the upstream's answer exceeds {limit} bytes, the most the proxy relays")
            yield chunk
    finally:
        await resp.aclose()
