"""API key lookup, in a documented order: ``--api-key``, the route's own variables, the key
saved for the route with ``hermes keys set`` (``keyfile``), then ``HERMES_API_KEY``. The
environment wins over the file, so a shell or CI job can override a saved key; a saved key wins
over the catch-all ``HERMES_API_KEY`` because it names its route. Every key found is registered
with ``errors.register_secret`` so no error or log line can show it."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from ..core.errors import ConfigError, register_secret
from ..routing.routes import Route

__all__ = ["KeyMissing", "auth_headers", "check_key", "find_key", "key_source"]

_CONTROL = re.compile("[\x00-\x1f\x7f]")


class KeyMissing(ConfigError):
    """No key for a route that needs one; the REPL offers ``/key`` where the CLI says ``--api-key``."""

    def __init__(self, route: Route) -> None:
        self.route = route
        names = ", ".join([*route.key_env, "HERMES_API_KEY"])
        self.variables = names
        super().__init__(f"no API key for {route.label}",
                         hint=f"pass --api-key, save one with `hermes keys set {route.key}`, or set one of: {names}")


def find_key(route: Route, flag: str | None = None) -> str | None:
    """The key for ``route``; None for keyless routes (local servers, Bedrock's AWS chain)."""
    for source, value in _sources(route, flag):
        if value:
            register_secret(value)
            check_key(route, source, value)
            return value
    if route.auth in ("none", "aws"):
        return None
    raise KeyMissing(route)


def key_source(route: Route, flag: str | None = None) -> str | None:
    """Where ``find_key`` takes ``route``'s key from (``hermes keys list``), or None."""
    return next((source for source, value in _sources(route, flag) if value), None)


def _sources(route: Route, flag: str | None) -> Iterator[tuple[str, str | None]]:
    """Each place a key may come from, in order; the file is read only when the environment
    has no key of the route's own."""
    yield "--api-key", flag
    for v in route.key_env:
        yield v, os.environ.get(v)
    if route.auth != "aws":  # Bedrock signs with the AWS chain
        from .keyfile import keys_path, saved_keys

        yield str(keys_path()), saved_keys().get(route.key)
    yield "HERMES_API_KEY", os.environ.get("HERMES_API_KEY")


def check_key(route: Route, source: str, value: str) -> None:
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
