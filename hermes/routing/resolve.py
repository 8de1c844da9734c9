"""Turn (provider, base URL, model) into one route row, and say why.

Rules, in order:

1. ``--provider`` names the row (its key or an alias). ``--base-url`` then changes the host
   the request goes to, never the row.
2. Otherwise the base URL's host decides: exact host or a subdomain of a row's host, label by
   label — ``nousresearch.com.evil.io`` and ``api.deepseek.com.example.org`` match nothing.
3. Otherwise a loopback / private-network / CGNAT host is a local server (``local`` row).
4. Otherwise the ``generic`` row (``reasoning_content`` only).

User rows from ``$HERMES_HOME/routes.toml`` are searched before the built-in ones; a user
row with a built-in key overrides just the fields it names. ``[[model]]`` tables in the same
file add model profile rows (``models``), searched before the built-in profiles.

The model's profile is resolved here, once, into ``Resolved.profile``: wires, the estimator and
compaction read it instead of looking at model ids.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..config.tomlfile import check_bool, check_choice, read_once, read_toml
from ..core.errors import ConfigError, RouteError
from ..core.messages import RouteKey
from .models import PROFILES, Profile, ProfileRow, profile_for
from .profiles_toml import profile_row_from_toml
from .routes import (
    AWS_SDK_HOST,
    CARRIERS,
    FALLBACK_ROW,
    LOCAL_ROW,
    NATIVE_FIELDS,
    ROUTES,
    TOOL_ID_RULES,
    WIRES,
    ModelRule,
    Route,
    host_matches,
)

__all__ = ["Resolved", "Table", "host_matches", "is_local_host", "load_table", "parse_base_url", "resolve",
           "route_named"]

_DEFAULT_PROFILE = Profile()


class Table(tuple[Route, ...]):
    """Route rows plus the model profile rows that came with them (``routes.toml``)."""

    profiles: tuple[ProfileRow, ...]

    def __new__(cls, rows: Sequence[Route], profiles: Sequence[ProfileRow] = PROFILES) -> Table:
        self = super().__new__(cls, rows)
        self.profiles = tuple(profiles)
        return self


@dataclass(frozen=True, slots=True)
class Resolved:
    """A route row applied to one model and one base URL."""

    route: Route
    base_url: str
    host: str
    model: str
    why: tuple[str, ...]
    profile: Profile = _DEFAULT_PROFILE
    """The model's profile (``models``), resolved once for this request target."""

    @property
    def key(self) -> RouteKey:
        return RouteKey(self.route.key, self.host, self.model, self.route.wire)


def parse_base_url(base_url: str) -> tuple[str, str]:
    """(lower-case host without port, path) of a base URL; raises RouteError if it is not an
    http(s) URL with a host or carries credentials (``urlpolicy.check_base_url``)."""
    from ..config.urlpolicy import check_base_url

    check_base_url(base_url)
    parts = urlsplit(base_url)
    return (parts.hostname or "").lower().rstrip("."), parts.path or "/"


_CGNAT = ipaddress.ip_network("100.64.0.0/10")


def is_local_host(host: str) -> bool:
    """Loopback, private, link-local or CGNAT (Tailscale) address, or a ``localhost`` name."""
    h = host.strip("[]").lower()
    if h == "localhost" or h.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(h)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_private or ip.is_link_local or (ip.version == 4 and ip in _CGNAT)


def _row_matches(row: Route, host: str, path: str, model: str) -> str | None:
    if row.models and not any(fnmatchcase(model.lower(), m) for m in row.models):
        return None
    for pattern in row.hosts:
        if host_matches(host, pattern):
            if row.paths and (path.rstrip("/") or "/") not in row.paths:
                continue
            return pattern
    return None


def _sibling(table: Sequence[Route], named: Route, base_url: str, model: str) -> Route | None:
    """The row a named row's base URL really asks for: on one of the named row's own hosts, a
    path another row owns (``-p deepseek -u https://api.deepseek.com/anthropic`` is DeepSeek's
    Anthropic-compatible API, another wire); None when the URL is the named row's."""
    host, path = parse_base_url(base_url)
    if named.paths or not any(host_matches(host, h) for h in named.hosts):
        return None
    return next((r for r in table if r is not named and r.paths and _row_matches(r, host, path, model)), None)


def _by_name(table: Sequence[Route], name: str) -> Route | None:
    n = name.strip().lower()
    for row in table:
        if n == row.key or n in row.providers:
            return row
    return None


@functools.lru_cache(maxsize=4096)
def _words(name: str) -> frozenset[str]:
    """The distinctive words of a route name or label (``vertex`` in ``anthropic-vertex``).
    Remembered: every resolve by name compares its name with every row's (the proxy resolves
    once per request), and the names are few."""
    return frozenset(w for w in re.split(r"[^a-z0-9]+", name.lower()) if len(w) >= 4 and w not in ("openai", "compat"))


def _look_alikes(table: Sequence[Route], name: str, exclude: Route | None = None) -> list[Route]:
    """Rows whose names share a distinctive word with ``name``: ``vertex`` is Gemini on Vertex
    AI while ``anthropic-vertex`` is Claude there, and a user should be told which is which."""
    words = _words(name)
    return [r for r in table if r is not exclude and words & _names_words((r.key, *r.providers))]


@functools.lru_cache(maxsize=4096)
def _names_words(names: tuple[str, ...]) -> frozenset[str]:
    return frozenset().union(*map(_words, names))


def _unknown_hint(table: Sequence[Route], name: str) -> str:
    alikes = _look_alikes(table, name)
    if 1 < len(alikes) <= 6:
        listed = "; ".join(f"-p {r.key}" + (f" (or {', '.join(r.providers)})" if r.providers else "")
                           + f" = {r.label}" for r in alikes)
        return f"{listed}. `hermes routes` lists every route"
    import difflib  # only an unknown route name needs it

    names = sorted({r.key for r in table} | {p for r in table for p in r.providers})
    close = difflib.get_close_matches(name.lower(), names, n=1) or [r.key for r in alikes]
    return (f"did you mean {close[0]!r}? " if close else "") + "`hermes routes` lists them"


def route_named(table: Sequence[Route], name: str) -> Route:
    """The row ``-p name`` picks; an unknown name is refused with the did-you-mean ``-p`` gets."""
    row = _by_name(table, name)
    if row is None:
        raise RouteError(f"unknown provider {name!r}", hint=_unknown_hint(table, name))
    return row


def resolve(
    provider: str | None,
    base_url: str | None,
    model: str,
    *,
    table: Sequence[Route] = ROUTES,
) -> Resolved:
    """The row for this request, applied to ``model``, with the reasons it was chosen."""
    why: list[str] = []
    if not model:
        raise RouteError("no model given", hint="pass --model or set a default model in config.toml")
    if provider:
        row = _by_name(table, provider)
        if row is None:
            raise RouteError(f"unknown provider {provider!r}", hint=_unknown_hint(table, provider))
        why.append(f"--provider {provider!r} names row {row.key!r} ({row.label})")
        sibling = _sibling(table, row, base_url, model) if base_url else None
        why.extend(f"not to be confused with {o.key!r} ({o.label}, another wire)"
                   for o in _look_alikes(table, provider, row) if o.wire != row.wire and o is not sibling)
        url = base_url or row.base_url
        if base_url and sibling is not None:
            why.append(f"--base-url path {parse_base_url(base_url)[1]!r} is {sibling.key!r} ({sibling.label}), "
                       f"the other API of {row.key!r}'s host")
            row = sibling
        elif base_url:
            why.append(f"--base-url changes the host to {parse_base_url(base_url)[0]!r}, not the row")
    else:
        if not base_url:
            raise RouteError("no provider and no base URL", hint="pass --provider P or --base-url URL")
        url = base_url
        host, path = parse_base_url(url)
        for row in table:
            pattern = _row_matches(row, host, path, model)
            if pattern:
                why.append(f"host {host!r} matches {pattern!r} of row {row.key!r}")
                break
        else:
            if is_local_host(host):
                row = _by_name(table, LOCAL_ROW) or _fallback(table)
                why.append(f"host {host!r} is loopback/private: local server row")
            else:
                row = _fallback(table)
                why.append(f"host {host!r} matches no row: fallback row {row.key!r}")
    if not url and row.auth != "aws":
        raise RouteError(f"route {row.key!r} has no default base URL", hint="pass --base-url URL")
    host = parse_base_url(url)[0] if url else _aws_host(row)
    profile = profile_for(model, table.profiles if isinstance(table, Table) else PROFILES)
    applied = row.for_model(model, profile.prior_turns, host)
    for rule in row.model_rules:
        if rule.pattern and applied is not row and _rule_hit(rule, model, host):
            why.append(f"model {model!r} matches rule {rule.pattern!r}")
    return Resolved(applied, url.rstrip("/") if url else "", host, model, tuple(why), profile)


def _rule_hit(rule: ModelRule, model: str, host: str) -> bool:
    return fnmatchcase(model.lower(), rule.pattern) and (not rule.hosts or any(host_matches(host, h) for h in rule.hosts))


def _aws_host(row: Route) -> str:
    return AWS_SDK_HOST


def _fallback(table: Sequence[Route]) -> Route:
    row = _by_name(table, FALLBACK_ROW)
    if row is None:  # a user table without the fallback row
        raise RouteError(f"no {FALLBACK_ROW!r} route row to fall back to")
    return row


# ----------------------------------------------------------------------------- routes.toml

_LIST_FIELDS = {"providers", "hosts", "paths", "carriers", "native", "blob_kinds", "key_env", "models",
                "must_echo_models"}
_BOOL_FIELDS = {"must_echo", "think_tags", "local", "signed_loop"}
_STR_FIELDS = {"key", "wire", "label", "base_url", "auth", "policy", "prior_turns", "blob_scope", "effort_field",
               "variant", "call_signature", "text_signature", "signature_pad", "tokens", "tool_ids"}
_TABLE_FIELDS = {"switches", "thinking_off", "effort_map", "headers", "streams_with"}
_CHOICES = {
    "wire": WIRES,
    "auth": ("bearer", "x-api-key", "goog-api-key", "aws", "none"),
    "policy": ("signed", "strip", "unsigned", "keep", "fields"),
    "prior_turns": ("all", "loop"),
    "blob_scope": ("model", "provider"),
    "tool_ids": TOOL_ID_RULES,
    "variant": ("", "vertex"),
    "tokens": ("", "o200k_base", "cl100k_base", "ratio:o200k", "ratio:cl100k"),
}
_ALLOWED = _LIST_FIELDS | _BOOL_FIELDS | _STR_FIELDS | _TABLE_FIELDS | {"model_rules"}


def _header_lines(src: str, header: str) -> list[int]:
    return [n for n, line in enumerate(src.splitlines(), 1) if line.strip().startswith(header)]


def load_table(path: Path | None, *, base: Sequence[Route] = ROUTES) -> Table:
    """Built-in rows plus the user's ``routes.toml`` (if it exists); errors name file:line.

    Parsed once per process (``tomlfile.read_once``): the table is kept while the file stays the
    same, so a gateway or REPL resolving a route per turn neither reads nor parses it again."""
    if path is None or not path.exists():
        return Table(base)
    return read_once(path, lambda: _load_table(path, base), key=("routes", id(base)))


def _load_table(path: Path, base: Sequence[Route]) -> Table:
    src, data = read_toml(path)
    unknown_top = set(data) - {"route", "model"}
    if unknown_top:
        raise ConfigError(f"{path}:1: unknown top-level key(s) {sorted(unknown_top)}; "
                          "use [[route]] and [[model]] tables")
    rows = data.get("route", [])
    if not isinstance(rows, list):
        raise ConfigError(f"{path}:1: 'route' must be an array of tables ([[route]])")
    models = data.get("model", [])
    if not isinstance(models, list):
        raise ConfigError(f"{path}:1: 'model' must be an array of tables ([[model]])")
    model_lines = _header_lines(src, "[[model]]")
    profiles = []
    for i, raw in enumerate(models):
        line = model_lines[i] if i < len(model_lines) else 1
        try:
            profiles.append(profile_row_from_toml(raw, source=str(path)))
        except ConfigError as e:
            raise ConfigError(f"{path}:{line}: {e}") from None
    header_lines = _header_lines(src, "[[route]]")
    table = list(base)
    added: list[Route] = []
    for i, raw in enumerate(rows):
        line = header_lines[i] if i < len(header_lines) else 1
        try:
            row = _row_from_toml(raw, table, source=str(path))
        except ConfigError as e:
            raise ConfigError(f"{path}:{line}: {e}") from None
        idx = next((j for j, r in enumerate(table) if r.key == row.key), None)
        if idx is None:
            added.append(row)
        else:
            table[idx] = row
    return Table((*added, *table), (*profiles, *PROFILES))


def _row_from_toml(raw: Any, table: Sequence[Route], *, source: str) -> Route:
    if not isinstance(raw, Mapping):
        raise ConfigError("each [[route]] must be a table")
    key = raw.get("key")
    if not isinstance(key, str) or not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", key):
        raise ConfigError("route needs a 'key' of lower-case letters, digits, '.', '_' or '-'")
    unknown = set(raw) - _ALLOWED
    if unknown:
        raise ConfigError(f"route {key!r}: unknown field(s) {sorted(unknown)}")
    existing = next((r for r in table if r.key == key), None)
    if existing is None and "wire" not in raw:
        raise ConfigError(f"route {key!r}: a new route needs 'wire' (one of {', '.join(WIRES)})")
    values: dict[str, Any] = {"source": source}
    for name, value in raw.items():
        values[name] = _field(key, name, value)
    if existing is None:
        values.setdefault("label", key)
        return Route(**values)
    return replace(existing, **values)


def _field(key: str, name: str, value: Any) -> Any:
    where = f"route {key!r}: field {name!r}"
    if name in _STR_FIELDS:
        if not isinstance(value, str):
            raise ConfigError(f"{where} must be a string")
        if name == "base_url" and value:
            from ..config.urlpolicy import check_base_url

            try:
                check_base_url(value, where)
            except RouteError as e:
                raise ConfigError(str(e), hint=e.hint) from None
        return check_choice(where, value, _CHOICES[name]) if name in _CHOICES else value
    if name in _BOOL_FIELDS:
        return check_bool(where, value)
    if name in _LIST_FIELDS:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where} must be a list of strings")
        if name == "carriers" and (bad := set(value) - set(CARRIERS)):
            raise ConfigError(f"{where}: unknown carrier(s) {sorted(bad)}; known: {', '.join(CARRIERS)}")
        if name == "native" and (bad := set(value) - set(NATIVE_FIELDS)):
            raise ConfigError(f"{where}: unknown native field(s) {sorted(bad)}")
        if name in ("carriers", "native", "blob_kinds"):
            return frozenset(value)
        return tuple(v.lower() if name in ("providers", "hosts", "models", "must_echo_models") else v for v in value)
    if name in _TABLE_FIELDS:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where} must be a table")
        if name in ("effort_map", "headers") and not all(isinstance(v, str) for v in value.values()):
            raise ConfigError(f"{where}: every value must be a string")
        return dict(value)
    if name == "model_rules":
        if not isinstance(value, list):
            raise ConfigError(f"{where} must be an array of tables")
        rules = []
        for rule in value:
            if not isinstance(rule, Mapping) or not isinstance(rule.get("pattern"), str):
                raise ConfigError(f"{where}: each rule needs a 'pattern' string")
            known = {f.name for f in fields(ModelRule)}
            if set(rule) - known:
                raise ConfigError(f"{where}: unknown rule field(s) {sorted(set(rule) - known)}")
            for table_field in ("switches", "thinking_off"):
                if not isinstance(rule.get(table_field, {}), Mapping):
                    raise ConfigError(f"{where}: rule {rule['pattern']!r}: {table_field!r} must be a table")
            for opt in ("policy", "prior_turns"):
                if rule.get(opt) is not None and rule[opt] not in _CHOICES[opt]:
                    raise ConfigError(f"{where}: rule {rule['pattern']!r}: {opt!r} must be one of "
                                      f"{', '.join(_CHOICES[opt])}")
            for list_field in ("without", "hosts"):
                got = rule.get(list_field, [])
                if not isinstance(got, list) or not all(isinstance(w, str) for w in got):
                    raise ConfigError(f"{where}: rule {rule['pattern']!r}: {list_field!r} must be a list of strings")
            carriers = rule.get("carriers")
            if carriers is not None and (not isinstance(carriers, list) or set(carriers) - set(CARRIERS)):
                raise ConfigError(f"{where}: rule {rule['pattern']!r}: 'carriers' must be a list of {', '.join(CARRIERS)}")
            off = rule.get("thinking_off")
            rules.append(ModelRule(rule["pattern"].lower(), dict(rule.get("switches", {})),
                                   rule.get("policy"), rule.get("prior_turns"),
                                   None if off is None else dict(off), tuple(rule.get("without", [])),
                                   tuple(h.lower() for h in rule.get("hosts", [])),
                                   None if carriers is None else frozenset(carriers)))
        return tuple(rules)
    raise ConfigError(f"{where} is not supported")  # pragma: no cover - guarded by _ALLOWED
