"""Running the proxy: the listening socket, uvicorn, shutdown.

The proxy holds no provider key unless started with ``--env-keys``; then, like the gateway,
it refuses to listen beyond loopback (anyone who could reach it would spend those keys).
"""

from __future__ import annotations

import socket
import sys
from typing import TYPE_CHECKING, Any

from ..core.errors import ConfigError
from ..serving.listen import bind, is_loopback, run_announced
from ..serving.protocol import server_config
from .app import ProxyOptions, create_app

if TYPE_CHECKING:
    from ..store import SessionStore
    from .memory import ReasoningMemory

__all__ = ["check_env_keys", "serve"]

_HEADER_TIMEOUT_S = 10.0
_MAX_CONNECTIONS = 1024


def _config(app: Any, log_level: str) -> Any:
    """uvicorn as the gateway runs it (``serving.protocol``)."""
    return server_config(app, header_timeout_s=_HEADER_TIMEOUT_S, max_connections=_MAX_CONNECTIONS,
                         log_level=log_level, graceful_s=5)


def check_env_keys(host: str, env_keys: bool) -> None:
    if env_keys and not is_loopback(host):
        raise ConfigError(f"refusing to listen on {host} with --env-keys: anyone who can reach it could "
                          "spend this machine's provider keys", hint="bind 127.0.0.1, or let clients send their keys")


def serve(memory: ReasoningMemory, ledger: SessionStore, *, host: str, port: int, options: ProxyOptions,
          log_level: str = "warning", sock: socket.socket | None = None) -> None:
    """Serve until interrupted. Prints ``hermes proxy listening on URL`` once ready.
    ``sock``: an already listening socket (a ``--workers`` child inherits its parent's)."""
    import uvicorn

    check_env_keys(host, options.env_keys)
    sock = sock or bind(host, port)
    actual = sock.getsockname()[1]
    server = uvicorn.Server(_config(create_app(memory, ledger, options), log_level))
    shown = f"[{host}]" if ":" in host else host
    run_announced(server, sock, f"hermes proxy listening on http://{shown}:{actual}/<route>")
    print("hermes proxy stopped", file=sys.stderr, flush=True)

