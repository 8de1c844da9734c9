"""Who may see the web view: the API's token, carried as a cookie after a login form, or —
when no token is configured — loopback clients only.

* With a token: ``Authorization: Bearer`` (checked by the gateway's own ``require_auth``) or
  the ``hermes_ui`` cookie the login form sets: HttpOnly (no script can read it), SameSite=
  Strict (no other site's page can make the browser send it), Path limited to the UI, so the
  JSON API, which reads only the header, never accepts it and gains no CSRF surface. The
  cookie holds an HMAC of the token, not the token: cookies are not scoped by port, so another
  local server under ``/ui/`` could receive it, and what it would get cannot call the API.
* Without a token: the peer address must be loopback **and** the Host header must name a
  loopback host. The second check stops DNS rebinding, where a web page on some other name
  that resolves to 127.0.0.1 would otherwise read this loopback server from the victim's browser.
* Every POST (login, logout) whose Origin names another host is refused (the gateway's own
  Host/Origin middleware says the same for everything it serves; ``hermes ui`` has only this).
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import urlsplit

from starlette.requests import Request

from ..serving.guard import host_name
from ..serving.http import ApiError, require_auth
from ..serving.listen import is_loopback

__all__ = ["COOKIE", "UiAccess", "is_loopback_host", "safe_next"]

COOKIE = "hermes_ui"


def is_loopback_host(host: str) -> bool:
    """``localhost``, ``127.0.0.0/8`` or ``::1``, with or without a port (Host header form)."""
    return is_loopback(host_name(host))


def safe_next(value: str | None, base: str) -> str:
    """Where to go after login: only a path inside the UI (no open redirect)."""
    if value and value.startswith(base + "/") and not value.startswith("//") and "\\" not in value:
        return value
    return base + "/"


class UiAccess:
    """Who may see the web view: anyone with the token (bearer or login cookie), or loopback
    only when the server has none."""

    def __init__(self, token: str | None) -> None:
        self.token = token or None

    def check(self, request: Request) -> None:
        """Raise ``ApiError`` (401 login needed, 403 refused) unless the request may see the UI."""
        if self.token is None:
            peer = request.client.host if request.client else ""
            if not (is_loopback_host(peer) and is_loopback_host(request.headers.get("host", ""))):
                raise ApiError(403, "forbidden", "this server has no token, so it answers loopback only "
                                                 "(a loopback address and a loopback Host header)")
            return
        if self.cookie_ok(request):
            return
        require_auth(request, self.token)

    def cookie_value(self) -> str:
        """What the login cookie holds: derived from the token, useless as a bearer token."""
        assert self.token is not None
        return hmac.new(self.token.encode(), b"hermes-ui-cookie-v1", hashlib.sha256).hexdigest()

    def cookie_ok(self, request: Request) -> bool:
        given = request.cookies.get(COOKIE, "")
        return bool(self.token) and bool(given) and hmac.compare_digest(given.encode(), self.cookie_value().encode())

    def matches(self, given: str) -> bool:
        assert self.token is not None
        return hmac.compare_digest(given.encode(), self.token.encode())

    @staticmethod
    def same_origin(request: Request) -> None:
        """Refuse a cross-site form post (the login form must come from this server's page)."""
        origin = request.headers.get("origin")
        if origin is None:  # not a browser form post from another page (curl, or same-origin navigation)
            return
        if urlsplit(origin).netloc.lower() != request.headers.get("host", "").lower():
            raise ApiError(403, "forbidden", "cross-origin form post refused")
