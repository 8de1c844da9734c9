"""What a gateway endpoint answers when something it called raised: the status and stable type."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from ..agent.compaction import CompactionError
from ..core.errors import (
    ConfigError,
    HermesError,
    HistoryError,
    ProviderError,
    ProviderHTTPError,
    RouteError,
    StoreError,
    redact,
)
from ..serving.http import ApiError, error_response, openai_error_response
from .locks import Busy

__all__ = ["answer_error", "error_payload", "from_exception"]


def error_payload(e: BaseException) -> dict[str, Any]:
    """The ``error`` event of a REST stream whose turn failed after it began."""
    err = from_exception(e)
    return {"error": {"type": err.type, "message": redact(err.message), "status": err.status}}


def from_exception(e: BaseException) -> ApiError:
    """Map what a turn or a store call raised to an HTTP error."""
    if isinstance(e, ApiError):
        return e
    if isinstance(e, Busy):
        return ApiError(409, "busy", f"session {e.args[0]} is running another turn; try again")
    if isinstance(e, StoreError) and str(e).startswith("unknown session"):
        return ApiError(404, "not_found", str(e))
    if isinstance(e, ProviderHTTPError):
        return _provider_status(e)
    if isinstance(e, ProviderError):
        return ApiError(502, "provider_error", str(e))
    if isinstance(e, ConfigError | RouteError | HistoryError | CompactionError):  # the request or session, not us
        hint = f" ({e.hint})" if e.hint else ""
        return ApiError(400, "invalid_request", f"{e}{hint}")
    if isinstance(e, HermesError):
        return ApiError(500, "internal", str(e))
    return ApiError(500, "internal", f"{type(e).__name__}: {e}")


def _provider_status(e: ProviderHTTPError) -> ApiError:
    """A provider's 4xx stays a 4xx (a client must not retry a request the provider refused:
    the official SDKs retry every 5xx, and each retry would be another turn); its 401/403 is
    this server's key being refused, so the client gets 403, not a 401 that blames its token.
    5xx, and a provider's own 408 timeout, are 502: the provider failed, not the request."""
    msg = f"provider returned HTTP {e.status}: {e}"
    if e.status in (401, 403):
        return ApiError(403, "provider_auth", f"{msg} (the provider refused this server's key)")
    if 400 <= e.status < 500 and e.status != 408:
        retry = {k.lower(): v for k, v in e.headers.items()}.get("retry-after")
        headers = {"retry-after": retry} if e.status == 429 and retry else {}
        return ApiError(e.status, "rate_limited" if e.status == 429 else "provider_error", msg, headers)
    return ApiError(502, "provider_error", msg)


def answer_error(e: BaseException, path: str, *, openai: bool = False) -> Response:
    """What an endpoint answers when ``e`` was raised: its status and type, in our shape or
    OpenAI's; an internal error is logged (redacted) as well."""
    err = from_exception(e)
    if err.status >= 500 and err.type == "internal":
        from ..store.requestlog import log_event

        log_event("gateway_error", path=path, error=redact(f"{type(e).__name__}: {e}"))
    if openai:
        return openai_error_response(err)
    return error_response(err.status, err.type, err.message, err.headers)


