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

from ..core.errors import RouteError

__all__ = ["base_url_allowed", "check_base_url", "normalise_allowlist"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_BAD_CHAR = re.compile(r"[\x00-\x20\x7f\\]")
"""Space, control characters and backslash: one regex search, not a per-character loop (every
resolve checks its URL; the proxy resolves once per request)."""
_EXAMPLE = "a base URL looks like https://api.example.com/v1"


def check_base_url(url: str, setting: str = "a base URL") -> None:
    """Refuse a base URL Hermes cannot or must not send a key to: not ``http(s)://host``, not
    parseable, carrying credentials, or holding characters parsers read differently.

    ``setting`` names where the URL came from (``--base-url``, ``[proxy] upstream`` ...). The
    URL itself is never part of the message: it may hold a password."""
    if _BAD_CHAR.search(url):
        raise RouteError(f"{setting} must not contain spaces, control characters or backslashes",
                         hint=_EXAMPLE)
    head = url.split("?", 1)[0].split("#", 1)[0]
    if "@" in head:  # wherever parsers put the authority, no "@" means no user:password@ part
        raise RouteError(f"{setting} must not carry a user name or password (user:password@host)",
                         hint="give keys with --api-key or the provider's environment variable; "
                              "the URL was not stored")
    try:
        p = urlsplit(url)
        p.port  # noqa: B018 - parsed on access: "port out of range", "could not be cast"
    except ValueError as e:  # "Invalid IPv6 URL" ...; no "@" above, so no password in the text
        raise RouteError(f"{setting} is not a valid URL ({e})", hint=_EXAMPLE) from None
    if p.scheme.lower() not in _DEFAULT_PORTS:
        raise RouteError(f"{setting} must start with http:// or https://", hint=_EXAMPLE)
    if not p.hostname:
        raise RouteError(f"{setting} has no host", hint=_EXAMPLE)


def _parts(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path without trailing slash) of a URL ``check_base_url`` passed."""
    p = urlsplit(url)
    scheme = p.scheme.lower()
    host = (p.hostname or "").lower().rstrip(".")
    return scheme, host, p.port or _DEFAULT_PORTS.get(scheme, 0), p.path.rstrip("/")


def normalise_allowlist(entries: Sequence[str], setting: str = "an allowed base URL") -> tuple[str, ...]:
    """Validate ``allowed_base_urls`` entries: absolute http(s) URLs with a host, no credentials,
    no query or fragment. Raises ``RouteError`` or ``ValueError``, ``setting`` naming the entry."""
    out = []
    for entry in entries:
        check_base_url(entry, setting)
        p = urlsplit(entry)
        if p.query or p.fragment:
            raise ValueError(f"{setting} must be a URL prefix without ?query or #fragment, "
                             "like https://host:port/path")
        out.append(entry.rstrip("/"))
    return tuple(out)


def base_url_allowed(url: str, *, default: str, allowlist: Sequence[str]) -> bool:
    """True when ``url`` is the route's ``default`` base URL or under an allowlist entry."""
    check_base_url(url)
    p = urlsplit(url)
    if p.query or p.fragment or ".." in p.path.split("/"):
        return False
    want = _parts(url)
    if default and want == _parts(default):
        return True
    for entry in allowlist:
        scheme, host, port, path = _parts(entry)
        if (scheme, host, port) == want[:3] and (want[3] == path or want[3].startswith(path + "/")):
            return True
    return False
