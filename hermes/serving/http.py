"""HTTP plumbing every server here shares: the error shape, bearer auth with a throttle, bounded JSON bodies.

Every error is ``{"error": {"type": ..., "message": ...}}`` with a fixed ``type`` vocabulary
(``unauthorized``, ``invalid_request``, ``not_found``, ``too_large``, ``busy``,
``provider_error``, ``provider_auth``, ``rate_limited``, ``timeout``, ``not_implemented``,
``internal``, ...) so clients can branch on it; OpenAI-shaped endpoints answer in OpenAI's own
error shape (``openai_error_response``), keeping that ``type`` as ``code``. Messages are
passed through ``errors.redact`` so no key the server knows can leak into a response.
"""

from __future__ import annotations

import asyncio
import hmac
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from ..core.errors import redact

__all__ = ["ApiError", "AuthThrottle", "body_late", "error_response", "field", "json_response",
           "openai_error_response", "read_body", "read_json", "require_auth", "token_ok"]


class ApiError(Exception):
    """An error with its HTTP status and stable ``type``."""

    def __init__(self, status: int, type_: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.type = type_
        self.message = message
        self.headers = headers or {}


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS), status_code=status,
                    media_type="application/json", headers=headers)


def error_response(status: int, type_: str, message: str, headers: dict[str, str] | None = None) -> Response:
    return json_response({"error": {"type": type_, "message": redact(message)}}, status, headers)


_OPENAI_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                 404: "not_found_error", 408: "timeout_error", 409: "conflict_error", 413: "invalid_request_error",
                 415: "invalid_request_error", 421: "invalid_request_error", 422: "invalid_request_error",
                 429: "rate_limit_error"}


def openai_error_response(err: ApiError) -> Response:
    """The error in OpenAI's shape (``message``, ``type``, ``param``, ``code``), which the official
    SDKs parse into their exception classes; our own ``type`` is kept in ``code``."""
    kind = _OPENAI_TYPES.get(err.status, "api_error" if err.status >= 500 else "invalid_request_error")
    return json_response({"error": {"message": redact(err.message), "type": kind, "param": None, "code": err.type}},
                         err.status, err.headers)


def token_ok(header: str, token: str) -> bool:
    """An ``Authorization`` header value carrying ``token``; constant-time comparison."""
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def require_auth(request: Request, token: str | None) -> None:
    """Bearer auth when a token is configured."""
    if token and not token_ok(request.headers.get("authorization", ""), token):
        raise ApiError(401, "unauthorized", "missing or wrong bearer token (Authorization: Bearer <token>)",
                       {"www-authenticate": "Bearer"})


class AuthThrottle:
    """Bearer auth that slows guessing down: each wrong or missing token from one client
    address waits twice as long as the last (50 ms up to 2 s; forgotten after a quiet minute).
    The wait is ``asyncio.sleep``, so it holds neither a thread nor other clients."""

    def __init__(self, *, first_s: float = 0.05, max_s: float = 2.0, forget_s: float = 60.0) -> None:
        self.first_s, self.max_s, self.forget_s = first_s, max_s, forget_s
        self.failures: dict[str, tuple[int, float]] = {}

    async def check(self, request: Request, token: str | None) -> None:
        try:
            require_auth(request, token)
        except ApiError:
            await self.failed(request)
            raise

    async def failed(self, request: Request) -> None:
        """Wait this client's next back-off step: it just gave a wrong token (here, or in the
        web view's login form)."""
        import time

        who = request.client.host if request.client else ""
        now = time.monotonic()
        count, last = self.failures.get(who, (0, now))
        count = 1 if now - last > self.forget_s else count + 1
        if len(self.failures) > 10_000:
            self.failures.clear()
        self.failures[who] = (count, now)
        await asyncio.sleep(min(self.max_s, self.first_s * 2 ** (count - 1)))


async def read_json(request: Request, limit: int, *, optional: bool = False,
                    timeout_s: float | None = None) -> dict[str, Any]:
    """The request body as a JSON object; 413 past ``limit`` bytes (checked while reading, so a
    lying or absent Content-Length cannot get more in), 400 when it is not a JSON object, 415
    when a body is not declared ``application/json`` (a browser can send ``text/plain`` across
    sites without asking; it cannot send JSON that way), 408 when it does not arrive within
    ``timeout_s`` (a client trickling a body would otherwise hold a connection forever)."""
    try:
        async with asyncio.timeout(timeout_s):  # asyncio's own: anyio's cancel scope costs ~4x more
            raw = await read_body(request, limit)
    except TimeoutError:
        raise body_late(timeout_s or 0) from None
    if not raw.strip():
        if optional:
            return {}
        raise ApiError(400, "invalid_request", "request body is empty; expected a JSON object")
    ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if ctype != "application/json":
        raise ApiError(415, "unsupported_media_type",
                       f"a JSON body needs Content-Type: application/json (got {ctype or 'none'!r})")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise ApiError(400, "invalid_request", f"request body is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise ApiError(400, "invalid_request", f"request body must be a JSON object, not {type(data).__name__}")
    return data


def body_late(timeout_s: float) -> ApiError:
    """408 for a body that did not arrive in time; the connection is closed after it."""
    return ApiError(408, "timeout", f"the request body did not arrive within {timeout_s:g} s", {"connection": "close"})


async def read_body(request: Request, limit: int) -> bytes:
    """The raw body; 413 past ``limit`` bytes, checked while reading (``hermes proxy`` too)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise ApiError(413, "too_large", f"request body is {int(declared)} bytes; the limit is {limit}")
        except ValueError:
            raise ApiError(400, "invalid_request", "Content-Length is not a number") from None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, "too_large", f"request body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def field(body: dict[str, Any], name: str, *, required: bool = False, kind: type = str) -> Any:
    """A typed body field; 400 naming the field when it is missing or of the wrong type."""
    value = body.get(name)
    if value is None:
        if required:
            raise ApiError(400, "invalid_request", f"'{name}' is required")
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        from ..config.settings import type_words

        raise ApiError(400, "invalid_request", f"'{name}' must be {type_words(kind)}")
    return value
