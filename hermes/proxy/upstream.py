"""The proxy's one HTTP client to the upstreams: a shared ``aiohttp`` session and bounded reads.

One pool per process (HTTP/1.1, keep-alive). aiohttp rather than httpx: the proxy holds many
upstream connections at once, and httpx's pool scans and polls every pooled socket on each
request, a cost that grows with the connections in flight (docs/performance.md has the
side-by-side figures). A connection goes back to the pool only after a complete final
response: interim ``1xx`` answers are skipped by the parser, never taken for the answer, and
an answer not read to its end closes its connection. The client keeps no cookies and follows
no redirects; ``HTTP(S)_PROXY`` / ``NO_PROXY`` are honoured. Bodies arrive decoded (the proxy
asks for ``identity``; an upstream that compresses anyway is decoded here), so what reaches a
client never carries the upstream's ``Content-Encoding``.
"""

from __future__ import annotations

import urllib.request
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
from multidict import CIMultiDictProxy
from yarl import URL

__all__ = ["Answer", "TooLarge", "Unreachable", "Upstream", "bounded", "check_declared", "read_bounded", "whole_events"]


class TooLarge(Exception):
    """The upstream's answer is larger than the proxy reads (``--max-upstream-body``)."""


class Unreachable(Exception):
    """The upstream could not be reached, or its answer broke off: a 502 for the client."""


class Answer:
    """An upstream's answer whose head is in and whose body is not read yet."""

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self._resp = resp
        self.status_code: int = resp.status
        self.headers: CIMultiDictProxy[str] = resp.headers
        self.raw_headers: tuple[tuple[bytes, bytes], ...] = resp.raw_headers
        """As the upstream sent them: a repeated header (``Set-Cookie``) stays repeated."""

    async def chunks(self) -> AsyncIterator[bytes]:
        """The decoded body as it arrives."""
        try:
            async for chunk in self._resp.content.iter_any():
                yield chunk
        except (TimeoutError, aiohttp.ClientError) as e:
            raise Unreachable(f"the upstream's answer broke off: {_said(e, self._resp.url)}") from None

    async def aclose(self) -> None:
        """Back to the pool when read to its end; otherwise the connection is closed."""
        if self._resp.content.at_eof():
            self._resp.release()
        else:
            self._resp.close()


class Upstream:
    """The shared session, opened on first use (aiohttp binds it to the running event loop)."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout = aiohttp.ClientTimeout(total=None, connect=30.0, sock_read=timeout_s)
        self._session: aiohttp.ClientSession | None = None
        self._proxies = urllib.request.getproxies_environment()
        """``HTTP(S)_PROXY`` / ``ALL_PROXY`` / ``NO_PROXY`` as the process started. Read here, not by
        aiohttp's ``trust_env``, which also reads ``~/.netrc`` on every request and would add its
        credentials to requests to the hosts it names."""

    def _proxy_for(self, url: URL) -> str | None:
        if not self._proxies or urllib.request.proxy_bypass(url.host or ""):
            return None
        return self._proxies.get(url.scheme) or self._proxies.get("all")

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            # idle connections dropped before common 5 s server keep-alives end, so a reused
            # one is not closed under a request
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=4.0)
            self._session = aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar(),
                                                  timeout=self.timeout, auto_decompress=True)
        return self._session

    async def send(self, method: str, url: str, headers: Mapping[str, str], content: bytes) -> Answer:
        """The request sent and the answer's head read; ``Unreachable`` when there is none."""
        session = self._open()
        target = URL(url, encoded=True)  # the path and query go out byte for byte, as the client wrote them
        kwargs: dict[str, Any] = {"data": content or None, "headers": dict(headers), "allow_redirects": False,
                                  "skip_auto_headers": ("Content-Type",), "proxy": self._proxy_for(target)}
        try:
            resp = await session.request(method, target, **kwargs)
        except (TimeoutError, aiohttp.ClientError, ValueError) as e:
            raise Unreachable(_said(e, target)) from None
        return Answer(resp)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


def _said(e: BaseException, url: URL) -> str:
    """What went wrong, for error text: aiohttp's messages may quote the URL, and its query may
    hold a client's key (``?key=``)."""
    text = f"{type(e).__name__}: {e}"
    for query in {url.raw_query_string, url.query_string} - {""}:
        text = text.replace(query, "…")
    return text


def check_declared(answer: Answer, limit: int) -> None:
    """``TooLarge`` when the answer's ``Content-Length`` is already past ``limit``."""
    declared = answer.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"the upstream's answer is {int(declared)} bytes; the proxy reads at most {limit}")


async def read_bounded(answer: Answer, limit: int) -> bytes:
    """The whole body, or ``TooLarge`` past ``limit`` bytes; closes ``answer`` either way."""
    try:
        check_declared(answer, limit)
        parts: list[bytes] = []
        size = 0
        async for chunk in answer.chunks():
            size += len(chunk)
            if size > limit:
                raise TooLarge(f"the upstream's answer exceeds {limit} bytes, the most the proxy reads")
            parts.append(chunk)
        return b"".join(parts)
    finally:
        await answer.aclose()


async def bounded(answer: Answer, limit: int) -> AsyncIterator[bytes]:
    """The body as it arrives, never buffered whole; stops with ``TooLarge`` past ``limit``
    bytes (the client sees its answer cut off). Closes ``answer`` at the end."""
    size = 0
    try:
        async for chunk in answer.chunks():
            size += len(chunk)
            if size > limit:
                raise TooLarge(f"the upstream's answer exceeds {limit} bytes, the most the proxy relays")
            yield chunk
    finally:
        await answer.aclose()


async def whole_events(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """An event stream relayed in whole events: each chunk up to its last blank line, the rest
    held until the next completes it. The client never holds half an event, so a stream cut
    short (``TooLarge``, the upstream gone) can still end with an error event its SDK reads."""
    held = b""
    async for chunk in chunks:
        held += chunk
        end = max(held.rfind(b"\n\n") + 2, held.rfind(b"\r\n\r\n") + 4, 0)
        if end:
            yield held[:end]
            held = held[end:]
    if held:
        yield held
