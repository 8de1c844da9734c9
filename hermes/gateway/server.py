"""Running the gateway: loopback policy, the listening socket, uvicorn, graceful shutdown.

A non-loopback bind without a token is refused before any socket is opened: a gateway runs
turns with the server's provider keys, so an open one on a network is a free key. Shutdown
(SIGINT/SIGTERM) stops accepting, lets in-flight requests finish, then waits for every
running turn to commit (``GatewayState.drain``); worker threads are never cancelled, so no
turn is cut between its store writes.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import sys
from typing import Any

from ..config import Config
from ..errors import ConfigError
from .app import GatewayOptions, create_app

__all__ = ["bind", "gateway_token", "is_loopback", "serve"]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def gateway_token(config: Config) -> str | None:
    """``HERMES_GATEWAY_TOKEN`` wins over config.toml ``[gateway] token``."""
    from ..errors import register_secret

    token = os.environ.get("HERMES_GATEWAY_TOKEN") or config.gateway_token or None
    if token:
        register_secret(token)
    return token


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # inherited by accepted connections: asyncio only sets TCP_NODELAY on sockets it creates,
    # and without it each response (headers, then body) waits ~40 ms for a delayed ACK
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {e.strerror or e}",
                          hint="pick another --port (0 = any free port)") from None
    sock.listen(2048)
    return sock


def serve(store: Any, config: Config, *, host: str, port: int, options: GatewayOptions,
          log_level: str = "warning", graceful_s: int | None = None) -> None:
    """Serve until interrupted. Prints ``hermes gateway listening on URL`` once ready."""
    import uvicorn

    if not options.token and not is_loopback(host):
        raise ConfigError(f"refusing to listen on {host} without a token: anyone who can reach it could "
                          "run turns with this server's provider keys",
                          hint="set HERMES_GATEWAY_TOKEN (or [gateway] token in config.toml), "
                               "or bind 127.0.0.1")
    sock = bind(host, port)
    actual = sock.getsockname()[1]
    app = create_app(store, config, options)
    cfg = uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="on",
                         timeout_graceful_shutdown=graceful_s, limit_concurrency=None)
    server = uvicorn.Server(cfg)
    shown = f"[{host}]" if ":" in host else host

    async def announce() -> None:
        print(f"hermes gateway listening on http://{shown}:{actual}"
              f" ({'token required' if options.token else 'no token: loopback only'})",
              file=sys.stderr, flush=True)

    original_startup = server.startup

    async def startup(sockets: list[socket.socket] | None = None) -> None:
        await original_startup(sockets=sockets)
        if server.started:
            await announce()

    server.startup = startup  # type: ignore[method-assign]
    # uvicorn re-raises the stop signal after its graceful shutdown; with this handler in place
    # that re-raise is a no-op, so a drained gateway exits 0 instead of dying "by SIGTERM"
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("hermes gateway stopped: every running turn finished", file=sys.stderr, flush=True)
