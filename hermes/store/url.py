"""Store URLs: which ones Hermes takes, and what of one may be shown.

A store URL is libpq's URI form, ``postgresql://`` (or ``postgres://``). Its password — in
``user:password@`` or in a ``password=`` / ``sslpassword=`` query parameter — reaches no
message and no log: messages show ``display_url``, and a URL that is refused is never repeated.
A libpq ``key=value`` string (``host=… password=…``) is refused the same way.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit, urlunsplit

from ..core.errors import StoreError

__all__ = ["check_store_url", "display_url", "url_passwords"]

SCHEMES = ("postgresql://", "postgres://")
_HINT = ("use postgresql://user@host:port/dbname (the password in PGPASSWORD or ~/.pgpass), "
         "or unset it for state.db")
_BAD_CHAR = re.compile(r"[\x00-\x20\x7f]")
_SECRET_PARAM = re.compile(r"(^|&)((?:ssl)?password)=([^&]*)", re.IGNORECASE)


def check_store_url(url: str, setting: str) -> None:
    """Refuse a store URL that is not a parseable ``postgresql://`` URL; ``setting`` names where
    it came from. The message never repeats the URL."""
    if not url.startswith(SCHEMES):
        if "=" in url and "://" not in url:
            raise StoreError(f"{setting} is a key=value connection string; Hermes takes a postgresql:// URL",
                             hint=_HINT)
        raise StoreError(f"{setting} must start with postgresql://", hint=_HINT)
    if _BAD_CHAR.search(url):
        raise StoreError(f"{setting} must not contain spaces or control characters", hint=_HINT)
    try:
        urlsplit(url).port  # noqa: B018 - parsed on access
    except ValueError as e:
        text = str(e)  # "Invalid IPv6 URL", "Port out of range ..." hold no password; other texts may
        why = text if text.startswith(("Invalid IPv6", "Port")) else "its host part cannot be read"
        raise StoreError(f"{setting} is not a valid URL ({why})", hint=_HINT) from None


def url_passwords(url: str) -> list[str]:
    """Every password ``url`` holds, as written and percent-decoded (for ``register_secret``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    raw = [parts.password or "", *(m.group(3) for m in _SECRET_PARAM.finditer(parts.query))]
    return sorted({v for r in raw if r for v in (r, unquote(r))})


def display_url(url: str) -> str:
    """``url`` with every password replaced by ``***``: what messages and logs may show."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsed on access
    except ValueError:
        return "(a store URL that cannot be parsed)"
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username or ''}:***@{netloc.rpartition('@')[2]}"
    query = _SECRET_PARAM.sub(lambda m: f"{m.group(1)}{m.group(2)}=***", parts.query)
    return urlunsplit(parts._replace(netloc=netloc, query=query))
