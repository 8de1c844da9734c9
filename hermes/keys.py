"""API key lookup, in a documented order: ``--api-key``, the route's own variables, then
``HERMES_API_KEY``. Keys live only in memory and the environment; every key found is
registered with ``errors.register_secret`` so no error or log line can show it."""

from __future__ import annotations

import os
import re

from .errors import ConfigError, register_secret
from .routes import Route

__all__ = ["auth_headers", "find_key"]

_CONTROL = re.compile("[\x00-\x1f\x7f]")


def find_key(route: Route, flag: str | None = None) -> str | None:
    """The key for ``route``; None for keyless routes (local servers, Bedrock's AWS chain)."""
    sources = [("--api-key", flag), *((v, os.environ.get(v)) for v in route.key_env),
               ("HERMES_API_KEY", os.environ.get("HERMES_API_KEY"))]
    for source, value in sources:
        if value:
            register_secret(value)
            _check_key(route, source, value)
            return value
    if route.auth in ("none", "aws"):
        return None
    names = ", ".join([*route.key_env, "HERMES_API_KEY"])
    raise ConfigError(f"no API key for {route.label}", hint=f"pass --api-key or set one of: {names}")


def _check_key(route: Route, source: str, value: str) -> None:
    """A key goes into an HTTP header: a control or non-ASCII character there makes the HTTP
    library fail with a message that quotes the header (the key, escaped, so ``redact`` cannot
    find it). Refuse it here, naming where it came from and never showing it."""
    if _CONTROL.search(value):  # in C: a gateway looks its key up on every turn
        raise ConfigError(f"the key for {route.key} contains a control character (from {source})",
                          hint="look for a stray newline or carriage return where the key was set")
    if not value.isascii():
        raise ConfigError(f"the key for {route.key} contains a non-ASCII character (from {source})",
                          hint="look for smart quotes or an invisible character copied with the key")


def auth_headers(route: Route, key: str | None) -> dict[str, str]:
    """Request headers that carry ``key`` the way ``route`` expects it."""
    if not key:
        return {}
    match route.auth:
        case "x-api-key":
            return {"x-api-key": key}
        case "goog-api-key":
            return {"x-goog-api-key": key}
        case "aws":
            return {}
        case _:
            return {"authorization": f"Bearer {key}"}
