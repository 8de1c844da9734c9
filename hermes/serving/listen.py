"""The listening socket, the loopback test every bind policy starts from, and the ``listening on`` line."""

from __future__ import annotations

import ipaddress
import signal
import socket
import sys
from typing import Any

from ..core.errors import ConfigError

__all__ = ["bind", "is_loopback", "run_announced"]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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


def run_announced(server: Any, sock: socket.socket, line: str) -> None:
    """Run a uvicorn ``server`` on ``sock`` until SIGINT/SIGTERM, printing ``line`` to stderr
    once it accepts connections (scripts and tests wait for it)."""
    original_startup = server.startup

    async def startup(sockets: list[socket.socket] | None = None) -> None:
        await original_startup(sockets=sockets)
        if server.started:
            print(line, file=sys.stderr, flush=True)

    server.startup = startup
    # uvicorn re-raises the stop signal after its graceful shutdown; with this handler in place
    # that re-raise is a no-op, so a drained server exits 0 instead of dying "by SIGTERM"
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
