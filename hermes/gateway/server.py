"""Running the gateway: its token policy, uvicorn, graceful shutdown.

A non-loopback bind without a token is refused before any socket is opened: a gateway runs
turns with the server's provider keys, so an open one on a network is a free key. Shutdown
(SIGINT/SIGTERM) stops accepting, lets in-flight requests finish, then waits for every
running turn to commit (``GatewayState.drain``); worker threads are never cancelled, so no
turn is cut between its store writes.
"""

from __future__ import annotations

import os
import socket
import sys
from typing import TYPE_CHECKING, Any

from ..config.settings import Config
from ..core.errors import ConfigError
from ..serving.listen import bind, is_loopback, run_announced
from ..serving.protocol import server_config
from .app import GatewayOptions, create_app

if TYPE_CHECKING:
    from ..store import SessionStore

__all__ = ["check_bind", "gateway_token", "serve", "uvicorn_config"]


MIN_PUBLIC_TOKEN = 16
"""Characters a token needs before the gateway listens beyond loopback."""


def check_bind(host: str, token: str | None) -> None:
    """Refuse, before any socket or file is opened, a bind that would hand out this server's
    provider keys: a network address without a token, or with a guessable one."""
    if is_loopback(host):
        return
    if not token:
        raise ConfigError(f"refusing to listen on {host} without a token: anyone who can reach it could "
                          "run turns with this server's provider keys",
                          hint="set HERMES_GATEWAY_TOKEN (or [gateway] token in config.toml), "
                               "or bind 127.0.0.1")
    if len(token) < MIN_PUBLIC_TOKEN:
        raise ConfigError(f"refusing to listen on {host} with a {len(token)}-character token: a token "
                          f"for a network bind needs at least {MIN_PUBLIC_TOKEN} characters",
                          hint="e.g. HERMES_GATEWAY_TOKEN=$(python -c 'import secrets; print(secrets.token_urlsafe(32))')")


def gateway_token(config: Config) -> str | None:
    """``HERMES_GATEWAY_TOKEN`` wins over config.toml ``[gateway] token``."""
    from ..core.errors import register_secret

    token = os.environ.get("HERMES_GATEWAY_TOKEN") or config.gateway_token or None
    if token:
        register_secret(token)
    return token


def uvicorn_config(app: Any, options: GatewayOptions, *, log_level: str = "warning",
                   graceful_s: int | None = None) -> Any:
    """The one uvicorn configuration every gateway runs with (``serve`` and the tests)."""
    return server_config(app, header_timeout_s=options.header_timeout_s, max_connections=options.max_connections,
                         log_level=log_level, graceful_s=graceful_s)


def serve(store: SessionStore, config: Config, *, host: str, port: int, options: GatewayOptions,
          log_level: str = "warning", graceful_s: int | None = None, sock: socket.socket | None = None) -> None:
    """Serve until interrupted. Prints ``hermes gateway listening on URL`` once ready.
    ``sock``: an already listening socket (a ``--workers`` child inherits its parent's)."""
    import uvicorn

    check_bind(host, options.token)
    sock = sock or bind(host, port)
    actual = sock.getsockname()[1]
    app = create_app(store, config, options)
    server = uvicorn.Server(uvicorn_config(app, options, log_level=log_level, graceful_s=graceful_s))
    shown = f"[{host}]" if ":" in host else host
    run_announced(server, sock, f"hermes gateway listening on http://{shown}:{actual}"
                                f" ({'token required' if options.token else 'no token: loopback only'})")
    print("hermes gateway stopped: every running turn finished", file=sys.stderr, flush=True)
