"""``[mcp.servers.NAME]`` tables of config.toml: which MCP servers to offer the model.

```toml
[mcp.servers.files]                      # a stdio server: Hermes starts the command
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
env = { GITHUB_TOKEN = "$GITHUB_TOKEN" } # "$NAME" / "${NAME}" is read from Hermes's environment
cwd = "."                                # optional
timeout = 60                             # seconds per tool call (default 60)

[mcp.servers.search]                     # a streamable-HTTP server Hermes connects to
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer ${SEARCH_TOKEN}" }
```

Pure parsing, no I/O and no ``mcp`` import, so reading config.toml stays fast. Keys keep the
config.toml rule: an ``env`` or ``headers`` value under a secret-shaped name (``*TOKEN``,
``*KEY``, ``*SECRET``, ``*PASSWORD``, ``Authorization``, ``Cookie``) must reference the
environment (``$NAME`` / ``${NAME}``, anywhere in the value), never hold the secret itself;
what such a reference reads is registered for redaction when the server starts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import ConfigError, register_secret

__all__ = ["McpServer", "parse_mcp"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_SECRETISH = re.compile(r"(TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$|^(PROXY-)?AUTHORIZATION$|^COOKIE$",
                        re.IGNORECASE)
_REF = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
_FIELDS = {"command", "args", "env", "cwd", "url", "headers", "timeout"}


@dataclass(frozen=True, slots=True)
class McpServer:
    """One configured server: a stdio ``command`` or a streamable-HTTP ``url``."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    """As written in config.toml; ``$NAME`` references are resolved by ``resolved_env``."""
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    """HTTP only: sent with every request; ``$NAME`` references resolved by ``resolved_headers``."""
    timeout: float = 60.0
    """Seconds a tool call may take before the model gets a timeout error."""

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def resolved_env(self) -> dict[str, str]:
        """``env`` with ``$NAME`` references read from the environment (missing → empty)."""
        return {key: _expand(key, value) for key, value in self.env.items()}

    def resolved_headers(self) -> dict[str, str]:
        """``headers`` with ``$NAME`` references read from the environment (missing → empty)."""
        return {key: _expand(key, value) for key, value in self.headers.items()}


def _expand(key: str, value: str) -> str:
    """``value`` with every ``$NAME`` / ``${NAME}`` replaced; under a secret-shaped ``key`` what
    was read is registered as a secret, so no error, log or tool result can show it."""

    def read(m: re.Match[str]) -> str:
        found = os.environ.get(m.group(1) or m.group(2), "")
        if found and _SECRETISH.search(key):
            register_secret(found)
        return found

    return _REF.sub(read, value)


def parse_mcp(value: Any, where: str) -> dict[str, McpServer]:
    """The ``[mcp]`` table → servers by name; every mistake is a ConfigError naming ``where``."""
    if not isinstance(value, Mapping) or set(value) - {"servers"}:
        raise ConfigError(f"{where}: [mcp] takes only [mcp.servers.NAME] tables")
    servers = value.get("servers", {})
    if not isinstance(servers, Mapping):
        raise ConfigError(f"{where}: [mcp.servers] must be a table of servers")
    return {name: _server(name, spec, where) for name, spec in servers.items()}


def _server(name: str, spec: Any, where: str) -> McpServer:
    at = f"{where}: [mcp.servers.{name}]"
    if not _NAME.match(name) or "__" in name:
        raise ConfigError(f"{at}: server names are 1-32 letters, digits, '-' or '_' (no '__': it "
                          "separates server and tool in the names the model sees)")
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{at} must be a table")
    unknown = set(spec) - _FIELDS
    if unknown:
        raise ConfigError(f"{at}: unknown field(s) {sorted(unknown)}", hint=f"known: {', '.join(sorted(_FIELDS))}")
    command, url = spec.get("command"), spec.get("url")
    if (command is None) == (url is None):
        raise ConfigError(f"{at}: give either 'command' (stdio) or 'url' (streamable HTTP)")
    if url is not None:
        _check_url(url, at)
    if url is not None and set(spec) & {"args", "env", "cwd"}:
        raise ConfigError(f"{at}: args, env and cwd are for stdio servers (with 'command')")
    if command is not None and "headers" in spec:
        raise ConfigError(f"{at}: headers are for HTTP servers (with 'url')")
    if command is not None and (not isinstance(command, str) or not command.strip()):
        raise ConfigError(f"{at}: 'command' must be a non-empty string")
    args = spec.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{at}: 'args' must be a list of strings")
    env, headers = _strings(spec, "env", at), _strings(spec, "headers", at)
    cwd = spec.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ConfigError(f"{at}: 'cwd' must be a string")
    timeout = spec.get("timeout", 60)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ConfigError(f"{at}: 'timeout' must be a positive number of seconds")
    return McpServer(name, command, tuple(args), env, cwd, url, headers, float(timeout))


def _check_url(url: Any, at: str) -> None:
    """The base-URL rule (``urlpolicy``): http(s), a host, parseable, no credentials (a token
    goes in ``headers``, read from the environment); the message never repeats the URL."""
    from ..core.errors import RouteError
    from .urlpolicy import check_base_url

    if not isinstance(url, str):
        raise ConfigError(f"{at}: 'url' must be an http:// or https:// URL")
    try:
        check_base_url(url, "'url'")
    except RouteError as e:
        raise ConfigError(f"{at}: {e}", hint=e.hint) from None


def _strings(spec: Mapping[str, Any], table: str, at: str) -> dict[str, str]:
    """``env`` or ``headers``: a table of strings whose secret-shaped entries reference the
    environment instead of holding a secret."""
    value = spec.get(table, {})
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f"{at}: '{table}' must be a table of strings")
    for key, val in value.items():
        if _SECRETISH.search(key) and val and not _REF.search(val):
            raise ConfigError(f"{at}: {table} {key} looks like a secret; secrets do not belong in config.toml",
                              hint=(f'write {key} = "${key}" and export {key}' if table == "env" else
                                    f'write {key} = "Bearer ${{MY_TOKEN}}" and export MY_TOKEN'))
    return dict(value)
