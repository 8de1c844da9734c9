"""``$HERMES_HOME/config.toml``: defaults a user sets once. Behaviour only — never keys.

```toml
provider = "deepseek"          # default --provider
model = "deepseek-v4"          # default --model
base_url = ""                  # default --base-url
thinking = true                # request thinking (keep-thinking switches follow it)
effort = "high"                # default reasoning effort
stream = true
max_steps = 12                 # model calls per user turn before stopping
allow_commands = false         # run_command without asking (REPL asks otherwise)
allow_writes = false           # write_file / edit_file without asking (REPL shows the diff and asks)
allow_read = []                # directories tools may read besides the working directory
context_budget = 0             # tokens; 0 = the route's default

[aliases]                      # hermes chat -m fast  →  provider/model
fast = { provider = "groq", model = "openai/gpt-oss-20b" }

[gateway]
token = ""                     # prefer HERMES_GATEWAY_TOKEN
allowed_base_urls = []         # base URLs clients may point a session at (besides route defaults)
allowed_hosts = []             # Host headers accepted besides loopback names and the bound address
allowed_origins = []           # browser Origins allowed to call (the gateway's own is always allowed)

[mcp.servers.files]            # MCP tools (see hermes/config/mcp.py, docs/mcp.md)
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "."]

[proxy]                        # hermes proxy (flags win)
host = "127.0.0.1"
port = 8787
memory_mb = 32                 # reasoning memory per tenant (client key + route)
memory_days = 7                # a recording older than this is never restored
upstream = { deepseek = "https://api.deepseek.com" }   # route -> base URL to forward to

[store]
url = "postgresql://hermes@db.internal/hermes"   # sessions on PostgreSQL (HERMES_DATABASE_URL wins);
                               # no password here: use PGPASSWORD or ~/.pgpass
```

A key-shaped setting (``api_key``, ``token`` outside ``[gateway]``) is refused so secrets stay
in the environment or on the command line.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ConfigError
from .paths import config_path
from .tomlfile import read_once, read_toml

if TYPE_CHECKING:  # parsed by mcp_config only when config.toml has [mcp]
    from .mcp import McpServer

__all__ = ["Alias", "Config", "ProxySettings", "load_config"]


@dataclass(frozen=True, slots=True)
class Alias:
    provider: str | None
    model: str
    base_url: str | None = None


@dataclass(frozen=True, slots=True)
class ProxySettings:
    host: str = "127.0.0.1"
    port: int = 8787
    memory_mb: float = 32.0
    memory_days: float = 7.0
    upstream: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Config:
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    thinking: bool = True
    effort: str | None = None
    stream: bool = True
    max_steps: int = 12
    allow_commands: bool = False
    allow_writes: bool = False
    allow_read: tuple[str, ...] = ()
    context_budget: int = 0
    aliases: Mapping[str, Alias] = field(default_factory=dict)
    gateway_token: str | None = None
    allowed_base_urls: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    mcp_servers: Mapping[str, McpServer] = field(default_factory=dict)
    proxy: ProxySettings = field(default_factory=ProxySettings)
    store_url: str | None = None
    source: str = ""


EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")


def effort_hint(value: str) -> str:
    """``did you mean 'high'?`` for a misspelt effort, else ``""``."""
    close = difflib.get_close_matches(str(value).lower(), EFFORTS, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def type_words(want: Any) -> str:
    """How an error names a TOML type: ``a whole number``, ``true or false`` …"""
    words = {int: "a whole number", float: "a number", bool: "true or false", str: "a string"}
    if isinstance(want, tuple):
        return " or ".join(words.get(w, getattr(w, "__name__", str(w))) for w in want)
    return words.get(want, f"a {getattr(want, '__name__', want)}")
"""Reasoning efforts any route accepts in some form; anything else is a typo."""
_GATEWAY_LISTS = ("allowed_base_urls", "allowed_hosts", "allowed_origins")


_TYPES: dict[str, type | tuple[type, ...]] = {
    "provider": str, "model": str, "base_url": str, "thinking": bool, "effort": str, "stream": bool,
    "max_steps": int, "allow_commands": bool, "allow_writes": bool, "context_budget": int,
}


def _line_of(src: str, key: str) -> int:
    for n, line in enumerate(src.splitlines(), 1):
        if re.match(rf"\s*{re.escape(key)}\s*=", line) or line.strip() == f"[{key}]" \
                or line.strip().startswith(f"[{key}."):
            return n
    return 1


def load_config(path: Path | None = None) -> Config:
    """The user's config, or defaults when there is none; errors name file:line.

    Parsed once per process (``tomlfile.read_once``): kept while the file stays the same, so a
    caller asking again (a REPL, a gateway, a test that edits the file) costs one ``stat``."""
    path = path or config_path()
    if not path.exists():
        return Config()
    return read_once(path, lambda: _parse(path), key="config")


def _parse(path: Path) -> Config:
    src, data = read_toml(path)
    values: dict[str, Any] = {"source": str(path)}
    for key, value in data.items():
        where = f"{path}:{_line_of(src, key)}"
        if key in ("api_key", "key", "token", "secret"):
            raise ConfigError(f"{where}: '{key}' does not belong in config.toml",
                              hint="put keys in the environment or pass --api-key")
        if key == "aliases":
            values["aliases"] = _aliases(value, where)
        elif key == "gateway":
            values.update(_gateway(value, where))
        elif key == "allow_read":
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise ConfigError(f"{where}: 'allow_read' must be a list of directory paths")
            values["allow_read"] = tuple(str(Path(v).expanduser()) for v in value)
        elif key == "mcp":
            from .mcp import parse_mcp

            values["mcp_servers"] = parse_mcp(value, where)
        elif key == "proxy":
            values["proxy"] = _proxy(value, where)
        elif key == "store":
            values["store_url"] = _store_url(value, where)
        elif key in _TYPES:
            want = _TYPES[key]
            if not isinstance(value, want) or (want is int and isinstance(value, bool)):
                raise ConfigError(f"{where}: '{key}' must be {type_words(want)}")
            if key == "max_steps" and isinstance(value, int) and value < 1:
                raise ConfigError(f"{where}: 'max_steps' must be at least 1")
            if key == "context_budget" and isinstance(value, int) and value < 0:
                raise ConfigError(f"{where}: 'context_budget' must be 0 (the route's default) or a number of tokens")
            if key == "effort" and value not in EFFORTS:
                raise ConfigError(f"{where}: 'effort' must be one of {', '.join(EFFORTS)}, not {value!r}",
                                  hint=effort_hint(str(value)))
            if key == "base_url" and isinstance(value, str) and value:
                _url(value, where, "base_url")
            values[key] = value or None if want is str else value
        else:
            known = sorted([*_TYPES, 'aliases', 'gateway', 'allow_read', 'mcp', 'proxy', 'store'])
            close = difflib.get_close_matches(key, known, n=1)
            raise ConfigError(f"{where}: unknown setting '{key}'",
                              hint=(f"did you mean '{close[0]}'? " if close else "") + f"known: {', '.join(known)}")
    return Config(**values)


def _store_url(value: Any, where: str) -> str | None:
    """``[store] url``: a PostgreSQL URL without a password (secrets stay out of config.toml)."""
    from ..core.errors import HermesError
    from ..store.url import check_store_url, url_passwords

    if not isinstance(value, Mapping) or set(value) - {"url"}:
        raise ConfigError(f"{where}: [store] takes only 'url'")
    url = value.get("url")
    if url is not None and not isinstance(url, str):
        raise ConfigError(f"{where}: store url must be a string")
    if url and url_passwords(url):
        raise ConfigError(f"{where}: the store url holds a password",
                          hint="remove it; use PGPASSWORD, ~/.pgpass, or HERMES_DATABASE_URL in the environment")
    if url:
        try:
            check_store_url(url, "[store] url")
        except HermesError as e:
            raise ConfigError(f"{where}: {e}", hint=e.hint) from None
    return url or None


def _aliases(value: Any, where: str) -> dict[str, Alias]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: [aliases] must be a table")
    out = {}
    for name, spec in value.items():
        if not isinstance(spec, Mapping) or not isinstance(spec.get("model"), str):
            raise ConfigError(f"{where}: alias '{name}' needs a 'model' string")
        if set(spec) - {"provider", "model", "base_url"}:
            raise ConfigError(f"{where}: alias '{name}' takes provider, model, base_url")
        if any(spec.get(k) is not None and not isinstance(spec[k], str) for k in ("provider", "base_url")):
            raise ConfigError(f"{where}: alias '{name}': provider and base_url must be strings")
        if spec.get("base_url"):
            _url(spec["base_url"], where, f"alias '{name}' base_url")
        out[name] = Alias(spec.get("provider"), spec["model"], spec.get("base_url"))
    return out


def _url(value: str, where: str, setting: str) -> None:
    """``setting`` of the file ``where`` must be a base URL ``urlpolicy`` accepts."""
    from ..core.errors import HermesError
    from .urlpolicy import check_base_url

    try:
        check_base_url(value, setting)
    except HermesError as e:
        raise ConfigError(f"{where}: {e}", hint=e.hint) from None


def _gateway(value: Any, where: str) -> dict[str, Any]:
    """``[gateway]``: the token and the three allowlists (see docs/security.md)."""
    from ..core.errors import HermesError
    from .urlpolicy import normalise_allowlist

    if not isinstance(value, Mapping) or set(value) - {"token", *_GATEWAY_LISTS}:
        raise ConfigError(f"{where}: [gateway] takes only 'token', {', '.join(repr(k) for k in _GATEWAY_LISTS)}")
    token = value.get("token")
    if token is not None and not isinstance(token, str):
        raise ConfigError(f"{where}: gateway token must be a string")
    out: dict[str, Any] = {"gateway_token": token or None}
    for name in _GATEWAY_LISTS:
        items = value.get(name, [])
        if not isinstance(items, list) or not all(isinstance(i, str) and i for i in items):
            raise ConfigError(f"{where}: [gateway] {name} must be a list of non-empty strings")
        out[name] = tuple(items)
    try:
        out["allowed_base_urls"] = normalise_allowlist(out["allowed_base_urls"], "an entry of [gateway] allowed_base_urls")
    except (ValueError, HermesError) as e:
        raise ConfigError(f"{where}: {e}") from None
    return out


def _proxy(value: Any, where: str) -> ProxySettings:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: [proxy] must be a table")
    known = {"host": str, "port": int, "memory_mb": (int, float), "memory_days": (int, float), "upstream": Mapping}
    for k, v in value.items():
        want = known.get(k)
        if want is None:
            raise ConfigError(f"{where}: [proxy] takes {', '.join(known)}; not {k!r}")
        if not isinstance(v, want) or isinstance(v, bool):  # type: ignore[arg-type]
            raise ConfigError(f"{where}: [proxy] {k} has the wrong type")
    port = value.get("port", 8787)
    if not 0 <= port <= 65535:
        raise ConfigError(f"{where}: [proxy] port must be 0-65535")
    for k in ("memory_mb", "memory_days"):
        if k in value and value[k] <= 0:
            raise ConfigError(f"{where}: [proxy] {k} must be positive")
    upstream = dict(value.get("upstream") or {})
    for route, url in upstream.items():
        if not isinstance(url, str):
            raise ConfigError(f"{where}: [proxy] upstream {route!r} must be a URL like https://host/v1")
        _url(url, where, f"[proxy] upstream {route!r}")
    return ProxySettings(value.get("host", "127.0.0.1"), port, float(value.get("memory_mb", 32.0)),
                         float(value.get("memory_days", 7.0)), upstream)
