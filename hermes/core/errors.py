"""The one exception tree Hermes raises; the CLI catches ``HermesError`` once.

::

    HermesError
    ├── ConfigError            bad config.toml / routes.toml / key lookup
    ├── RouteError             unknown provider, unresolvable route
    ├── HistoryError           a history record that is not in the documented JSON form
    ├── UnsupportedPart        a part a wire cannot carry (never skipped silently)
    ├── ProviderError
    │   ├── ProviderHTTPError(status, body, route, attempt)
    │   │   ├── RateLimited
    │   │   └── AuthFailed
    │   ├── ProviderConnectionError
    │   └── StreamError         truncated or malformed response / stream
    └── StoreError

Messages never contain API keys: every constructor that takes provider text passes it
through :func:`redact` first.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .attempt import Attempt

__all__ = [
    "AuthFailed",
    "ConfigError",
    "HermesError",
    "HistoryError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderHTTPError",
    "RateLimited",
    "RouteError",
    "StoreError",
    "StreamError",
    "UnsupportedPart",
    "redact",
    "register_secret",
    "registered_secrets",
]

_SECRETS: set[str] = set()
_KEYISH = re.compile(r"\b(sk|key|AKIA|ASIA|gh[pousr])[-_A-Za-z0-9]{12,}")


def register_secret(value: str | None) -> None:
    """Remember a secret so that any error text mentioning it is scrubbed."""
    if value and len(value) >= 6:
        _SECRETS.add(value)


def registered_secrets() -> frozenset[str]:
    """The secrets registered so far (for scrubbing tool output, which must not go through the
    key-shape pattern of ``redact``: it would mangle ordinary identifiers in files)."""
    return frozenset(_SECRETS)


def redact(text: str) -> str:
    """Scrub registered secrets and key-shaped tokens out of text bound for users or logs."""
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "***")
    return _KEYISH.sub("***", text)


class HermesError(Exception):
    """Base of every error Hermes raises on purpose; ``hint`` says how to fix it."""

    hint: str = ""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(redact(message))
        if hint:
            self.hint = redact(hint)


class ConfigError(HermesError):
    """A configuration file or key lookup is wrong."""


class RouteError(HermesError):
    """No route can be resolved for the given provider / base URL / model."""


class HistoryError(HermesError):
    """A history record does not follow the documented JSON form."""


class UnsupportedPart(HermesError):
    """A wire cannot carry a part it was given; raised, never skipped."""


class StoreError(HermesError):
    """state.db cannot be opened, migrated, read or written."""


class ProviderError(HermesError):
    """Talking to a provider failed."""


class ProviderConnectionError(ProviderError):
    """The provider could not be reached (DNS, refused, timeout, TLS)."""


class StreamError(ProviderError):
    """The response or stream was truncated or malformed; nothing from it is stored."""


class ProviderHTTPError(ProviderError):
    """The provider answered with an error status.

    ``attempt`` is what the refused request carried back (``hermes.core.attempt``): the transport
    raises without it, ``provider.complete`` (and the proxy) add it, and rejection learning
    classifies the error against it alone."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        body: str = "",
        route: str = "",
        headers: dict[str, str] | None = None,
        hint: str = "",
        attempt: Attempt | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.status = status
        self.body = redact(body)
        self.route = route
        self.headers = dict(headers or {})
        self.attempt = attempt

    def json(self) -> Any:
        """The error body as JSON, or None when it is not JSON."""
        import orjson

        try:
            return orjson.loads(self.body)
        except orjson.JSONDecodeError:
            return None


class RateLimited(ProviderHTTPError):
    """429 after retries were exhausted."""


class AuthFailed(ProviderHTTPError):
    """401/403: the key is missing, wrong or lacks access."""


