"""Who may talk to a Hermes server from a browser: the ``Host`` allowlist and the ``Origin`` check.

A gateway on loopback without a token trusts its callers, and a web page is a caller too:

* **DNS rebinding**: a page on ``evil.example`` re-points its own name at 127.0.0.1 and then
  calls the gateway *same-origin*, so the browser lets it read the answers. Its requests carry
  ``Host: evil.example``; only the names the gateway is known by are accepted (loopback names,
  the bound address, ``[gateway] allowed_hosts``; ``*`` accepts any, the default for a
  wildcard bind, which needs a token anyway).
* **Cross-site requests**: any page can POST to ``http://127.0.0.1:8642`` without reading the
  answer — enough to start turns and spend money. Browsers label such requests with ``Origin``;
  a request whose ``Origin`` is neither the gateway's own nor in ``[gateway] allowed_origins``
  is refused before anything runs. (Non-browser clients send no ``Origin`` and are unaffected;
  ``read_json`` additionally insists on ``application/json``, which a page cannot send across
  sites without a preflight this server never approves.)

A pure ASGI middleware, so everything mounted in the app (the web view too) is covered.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .http import error_response

__all__ = ["HostOriginGuard", "allowed_hosts", "host_name"]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARDS = ("", "0.0.0.0", "::")


def host_name(value: str) -> str:
    """The host of a ``Host`` header value (``[::1]:8642`` → ``::1``), lower-case, no port."""
    v = value.strip().lower()
    if v.startswith("["):
        return v[1:].split("]", 1)[0]
    if v.count(":") == 1:
        v = v.split(":", 1)[0]
    return v.rstrip(".")


def allowed_hosts(bound: str, extra: Iterable[str]) -> frozenset[str]:
    """Host names accepted: loopback names, the bound address and ``extra`` (``*`` = any)."""
    names = {*LOOPBACK_NAMES, *(host_name(h) if h != "*" else "*" for h in extra)}
    if bound in WILDCARDS:
        names.add("*")
    else:
        names.add(host_name(bound))
    return frozenset(names)


class HostOriginGuard:
    """ASGI middleware: 421 for an unknown ``Host``, 403 for a foreign ``Origin``."""

    def __init__(self, app: Any, *, hosts: frozenset[str], origins: Iterable[str]) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = frozenset(o.rstrip("/").lower() for o in origins)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            refusal = self.check(scope)
            if refusal is not None:
                status, kind, message = refusal
                await error_response(status, kind, message)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def check(self, scope: Any) -> tuple[int, str, str] | None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        if host and "*" not in self.hosts and host_name(host) not in self.hosts:
            return (421, "wrong_host", f"this gateway does not answer to Host {host_name(host)!r}; "
                                       "add it to [gateway] allowed_hosts (or --allow-host) if it is yours")
        origin = headers.get("origin")
        if origin is not None:
            o = origin.rstrip("/").lower()
            same = o in (f"{scope.get('scheme', 'http')}://{host.lower()}",) if host else False
            if not same and o not in self.origins:
                return (403, "forbidden_origin", f"requests from origin {origin[:100]!r} are not allowed; "
                                                 "add it to [gateway] allowed_origins if it is yours")
        return None
