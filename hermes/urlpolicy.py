"""Which base URLs Hermes will send a provider key to.

Two rules, both pure functions:

* **No credentials in a URL, anywhere** (CLI, config, routes.toml, gateway): a base URL with a
  ``user:password@`` part is refused, and the refusal never repeats the URL, so the password
  does not reach a terminal, a log or ``state.db``. Characters that URL parsers disagree on
  (backslash, whitespace, control characters) are refused too: a host check is only worth
  something if the HTTP client connects to the host that was checked.
* **Over HTTP, only known hosts** (``hermes gateway``): a client may name a base URL only when
  it is the route's own default or starts with an entry of ``[gateway] allowed_base_urls``
  (same scheme, host and port; path prefix on a ``/`` boundary). Otherwise any client could
  point a session at its own server and receive the server's provider key.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from .errors import RouteError

__all__ = ["base_url_allowed", "check_base_url", "normalise_allowlist"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_BAD_CHAR = re.compile(r"[\x00-\x20\x7f\\]")
"""Space, control characters and backslash: one regex search, not a per-character loop (every
resolve checks its URL; the proxy resolves once per request)."""


def check_base_url(url: str) -> None:
    """Refuse a base URL carrying credentials or characters parsers read differently.

    The URL itself is never part of the message: it may hold a password."""
    if _BAD_CHAR.search(url):
        raise RouteError("a base URL must not contain spaces, control characters or backslashes",
                         hint="check the value of --base-url / base_url")
    head = url.split("?", 1)[0].split("#", 1)[0]
    if "@" in head:  # wherever parsers put the authority, no "@" means no user:password@ part
        raise RouteError("a base URL must not carry a user name or password (user:password@host)",
                         hint="give keys with --api-key or the provider's environment variable; "
                              "the URL was not stored")


def _parts(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path without trailing slash) of an http(s) URL."""
    p = urlsplit(url)
    scheme = p.scheme.lower()
    host = (p.hostname or "").lower().rstrip(".")
    try:
        port = p.port or _DEFAULT_PORTS.get(scheme, 0)
    except ValueError:
        port = -1
    return scheme, host, port, p.path.rstrip("/")


def normalise_allowlist(entries: Sequence[str]) -> tuple[str, ...]:
    """Validate ``allowed_base_urls`` entries: absolute http(s) URLs with a host, no credentials,
    no query or fragment. Raises ``ValueError`` naming the bad entry."""
    out = []
    for entry in entries:
        check_base_url(entry)
        p = urlsplit(entry)
        if p.scheme.lower() not in _DEFAULT_PORTS or not p.hostname or p.query or p.fragment:
            raise ValueError(f"{entry!r} is not an http(s) URL prefix like https://host:port/path")
        out.append(entry.rstrip("/"))
    return tuple(out)


def base_url_allowed(url: str, *, default: str, allowlist: Sequence[str]) -> bool:
    """True when ``url`` is the route's ``default`` base URL or under an allowlist entry."""
    check_base_url(url)
    p = urlsplit(url)
    if p.query or p.fragment or ".." in p.path.split("/"):
        return False
    want = _parts(url)
    if want[0] not in _DEFAULT_PORTS or not want[1] or want[2] < 0:
        return False
    if default and want == _parts(default):
        return True
    for entry in allowlist:
        scheme, host, port, path = _parts(entry)
        if (scheme, host, port) == want[:3] and (want[3] == path or want[3].startswith(path + "/")):
            return True
    return False
