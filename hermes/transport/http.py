"""The one HTTP seam: client construction, retries and error mapping.

* One ``httpx.Client`` per ``HttpTransport`` (the ``hermes.transport.Transport`` protocol);
  proxies and TLS come from the environment (``trust_env``); tests may inject ``transport=``
  but normally talk real HTTP to the loopback emulators.
* Retries: 408, 409, 429 and 5xx, and connection failures, with exponential backoff that
  honours ``retry-after`` (capped). No other 4xx is retried — a 400 is an answer.
  A stream is retried only before its first byte.
* Every failure becomes a ``ProviderError`` carrying the status, the provider's error body
  and the route; ``errors.redact`` keeps keys out of all of it.
"""

from __future__ import annotations

import re
import ssl
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from email.utils import parsedate_to_datetime
from typing import Any, Self

import httpx
import orjson

from ..core.errors import (
    AuthFailed,
    ProviderConnectionError,
    ProviderHTTPError,
    RateLimited,
    redact,
)

__all__ = ["RETRY_STATUSES", "HttpTransport", "error_from_response"]

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
_MAX_RETRY_AFTER = 30.0


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)
_TAGS = re.compile(r"<[^>]+>")


def _error_text(status: int, body: str) -> str:
    """The provider's own error message, or a short description of a non-JSON body.

    An HTML page almost always comes from a proxy, load balancer or gateway in front of the
    provider, not from the API itself; say so and show its title instead of the markup.
    """
    try:
        data: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        head = body.lstrip()[:200].lower()
        if head.startswith(("<!doctype html", "<html")) or "<body" in head or "<head" in head:
            m = _TITLE.search(body)
            title = " ".join(_TAGS.sub(" ", m.group(1) if m else body).split())[:120]
            return f"HTML error page from a proxy or gateway in front of the API: {title!r}"
        snippet = " ".join(body.split())[:160]
        return f"non-JSON error body: {snippet!r}" if snippet else "empty error body"
    msg: Any = data
    if isinstance(data, Mapping):
        err = data.get("error", data)
        if isinstance(err, Mapping):
            msg = err.get("message", err)
        elif isinstance(err, str):
            msg = err
        if isinstance(msg, Mapping | list):
            msg = orjson.dumps(msg).decode()
    return str(msg)[:500]


_AUTH_CODES = frozenset({"AccessDeniedException", "UnrecognizedClientException"})
_THROTTLE_CODES = frozenset({"ThrottlingException"})


def error_from_response(status: int, body: str, headers: Mapping[str, str], route: str, *,
                        code: str = "") -> ProviderHTTPError:
    """The typed error for a provider's refusal, whichever transport received it: HTTP, or
    botocore (which also gives an AWS error ``code``, e.g. ``ThrottlingException``)."""
    text = _error_text(status, body)
    cls: type[ProviderHTTPError] = ProviderHTTPError
    hint = ""
    if status in (401, 403) or code in _AUTH_CODES:
        cls, hint = AuthFailed, ("check the credentials for this provider (--api-key or its environment "
                                 "variable; AWS credentials and model access for Bedrock)")
    elif status == 429 or code in _THROTTLE_CODES:
        cls, hint = RateLimited, "the provider is rate limiting; wait and retry"
    return cls(f"{route}: HTTP {status}{' ' + code if code else ''}: {text}", status=status, body=body,
               route=route, headers=dict(headers), hint=hint)


def _retry_after(headers: Mapping[str, str], attempt: int) -> float:
    raw = headers.get("retry-after")
    if raw:
        try:
            return min(max(float(raw), 0.0), _MAX_RETRY_AFTER)
        except ValueError:
            pass
        try:  # the HTTP-date form
            when = parsedate_to_datetime(raw)
            return min(max(when.timestamp() - time.time(), 0.0), _MAX_RETRY_AFTER)
        except (TypeError, ValueError, IndexError):
            pass
    return min(0.25 * (2**attempt), 8.0)


class _ByScheme(httpx.BaseTransport):
    """httpx's default transport, with two changes of where its pools live.

    * **Per scheme, made on first use**: a plain ``http://`` base URL (a local model server,
      the emulators, a sidecar) never pays for loading the CA bundle: its
      pools get a TLS context with no CAs that they never use — were one ever asked for TLS it
      would refuse every certificate, never accept one. ``https://`` gets exactly httpx's
      default (``verify=True``, ``SSL_CERT_FILE`` honoured). Proxies from the environment are
      mounted by the client in front of this, as before.
    * **Per thread**: each thread that sends gets its own connection pool (the TLS context is
      shared). A pool checks every connection it holds on every request and on every
      response's close — a ``poll`` each, to see whether the server closed it — under one
      lock. One pool shared by a gateway's turn threads held a connection per thread that
      ever ran a turn at once: a lone session then paid that many checks per turn, each
      releasing the GIL (``bench/gateway.py``'s lock-step pairs show it). A thread sends one request at a time, so its own pool holds the one connection it reuses;
      the process still holds one connection per concurrent turn, as before."""

    def __init__(self) -> None:
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._pools: dict[tuple[int, str], httpx.HTTPTransport] = {}
        self._lock = threading.Lock()  # the gateway shares one HttpTransport between threads

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        key = (threading.get_ident(), "http" if request.url.scheme == "http" else "https")
        pool = self._pools.get(key)
        if pool is None:
            with self._lock:
                pool = self._pools.get(key)
                if pool is None:
                    pool = self._pools[key] = httpx.HTTPTransport(verify=self._context(key[1]), trust_env=True)
        return pool.handle_request(request)

    def _context(self, scheme: str) -> ssl.SSLContext:
        """The scheme's TLS context, made once (under the lock) and shared by every thread's pool."""
        ctx = self._contexts.get(scheme)
        if ctx is None:
            if scheme == "http":
                ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            else:
                ctx = httpx.create_ssl_context(trust_env=True)
            self._contexts[scheme] = ctx
        return ctx

    def close(self) -> None:
        with self._lock:
            pools = list(self._pools.values())
            self._pools.clear()
        for pool in pools:
            pool.close()


class HttpTransport:
    """HTTP client with the retry and error policy above."""

    def __init__(
        self,
        *,
        max_retries: int = 2,
        timeout: float = 300.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.max_retries = max_retries
        self.client = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=15.0),
            transport=transport if transport is not None else _ByScheme(),
            trust_env=True,
            follow_redirects=False,
        )

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, request: httpx.Request, *, route: str, stream: bool) -> httpx.Response:
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                response = self.client.send(request, stream=stream)
            except httpx.TransportError as e:
                if last:
                    raise ProviderConnectionError(
                        f"{route}: cannot reach {request.url.host}: {redact(str(e)) or type(e).__name__}",
                        hint="check --base-url and your network/proxy settings",
                    ) from None
                time.sleep(min(0.25 * (2**attempt), 4.0))
                continue
            if response.status_code < 400:
                return response
            body = response.read().decode("utf-8", "replace")
            response.close()
            if response.status_code in RETRY_STATUSES and not last:
                time.sleep(_retry_after(response.headers, attempt))
                continue
            raise error_from_response(response.status_code, body, response.headers, route)
        raise AssertionError("unreachable")  # pragma: no cover

    def post_json(self, url: str, body: bytes, headers: Mapping[str, str], *, route: str) -> tuple[int, bytes]:
        """POST and read the whole response; returns (status, raw body)."""
        request = self.client.build_request("POST", url, content=body, headers=dict(headers))
        response = self._send(request, route=route, stream=False)
        return response.status_code, response.content

    @contextmanager
    def stream(self, url: str, body: bytes, headers: Mapping[str, str], *, route: str) -> Iterator[httpx.Response]:
        """POST with a streamed response; error statuses raise before the caller reads."""
        request = self.client.build_request("POST", url, content=body, headers=dict(headers))
        response = self._send(request, route=route, stream=True)
        try:
            yield response
        except httpx.TransportError as e:
            from ..core.errors import StreamError

            raise StreamError(f"{route}: stream broke off: {redact(str(e)) or type(e).__name__}") from None
        finally:
            response.close()
