"""API key lookup, in a documented order: ``--api-key``, the route's own variables, then
``HERMES_API_KEY``. Keys live only in memory and the environment; every key found is
registered with ``errors.register_secret`` so no error or log line can show it."""

from __future__ import annotations

import os

from .errors import ConfigError, register_secret
from .routes import Route

__all__ = ["auth_headers", "find_key"]


def find_key(route: Route, flag: str | None = None) -> str | None:
    """The key for ``route``; None for keyless routes (local servers, Bedrock's AWS chain)."""
    for value in (flag, *(os.environ.get(v) for v in route.key_env), os.environ.get("HERMES_API_KEY")):
        if value:
            register_secret(value)
            return value
    if route.auth in ("none", "aws"):
        return None
    names = ", ".join([*route.key_env, "HERMES_API_KEY"])
    raise ConfigError(f"no API key for {route.label}", hint=f"pass --api-key or set one of: {names}")


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
