"""Running the gateway: loopback policy, the listening socket, uvicorn, graceful shutdown.

A non-loopback bind without a token is refused before any socket is opened: a gateway runs
turns with the server's provider keys, so an open one on a network is a free key. Shutdown
(SIGINT/SIGTERM) stops accepting, lets in-flight requests finish, then waits for every
running turn to commit (``GatewayState.drain``); worker threads are never cancelled, so no
turn is cut between its store writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import os
import signal
import socket
import sys
from typing import TYPE_CHECKING, Any, cast

from ..config import Config
from ..errors import ConfigError
from .app import GatewayOptions, create_app
from .lane import Lane, Letgo
from .turns import LANE_MARK

if TYPE_CHECKING:
    from ..store import SessionStore

__all__ = ["bind", "check_bind", "gateway_token", "guarded_protocol", "is_loopback", "run_announced", "serve",
           "uvicorn_config"]


MIN_PUBLIC_TOKEN = 16
"""Characters a token needs before the gateway listens beyond loopback."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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
    from ..errors import register_secret

    token = os.environ.get("HERMES_GATEWAY_TOKEN") or config.gateway_token or None
    if token:
        register_secret(token)
    return token


class HeadHeld:
    """The transport a request's response is written to, holding the response's head back
    until its body follows, so that a whole response leaves in one write: uvicorn writes the
    status line and headers as soon as the app sends them, then the body, and on a socket with
    ``TCP_NODELAY`` each write is its own send, its own segment and its own wake-up of a client
    waiting for the answer. A head is held at most until the end of the event loop's current
    pass (a streamed response's head goes out before its first event is ready)."""

    __slots__ = ("first", "held", "loop", "transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self.loop = loop
        self.held: bytes | None = None
        self.first = True

    def write(self, data: bytes) -> None:
        if self.held is not None:  # one writev: a large body is not copied to join its head
            head, self.held = self.held, None
            self.transport.writelines((head, data))
        elif self.first:  # the head (or a "100 Continue"): what follows at once goes with it
            self.first = False
            self.held = data
            self.loop.call_soon(self.flush)
        else:
            self.transport.write(data)

    def flush(self) -> None:
        if self.held is not None:
            data, self.held = self.held, None
            if not self.transport.is_closing():
                self.transport.write(data)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def is_closing(self) -> bool:
        return self.transport.is_closing()


def guarded_protocol(header_timeout_s: float, max_connections: int, lane: Lane | None = None) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol with two limits it lacks: a deadline for each request's headers
    (from connection open, and again from the end of each response, so an idle or trickling
    keep-alive connection is closed too), and a cap on open connections. A client that sends
    one header byte every few seconds is closed after ``header_timeout_s``; the event loop
    never waits on it, so other clients are served meanwhile. At the cap, a new connection
    evicts the longest-waiting one that has not sent its headers yet (an attacker's stalled
    sockets go first, a client mid-request never does); only when there is none is the new
    connection closed.

    The parser is ``httptools`` (llhttp, in C) when it is installed — it is a dependency — and
    uvicorn's pure-Python ``h11`` otherwise: h11 cost about a quarter of the event loop's CPU
    per gateway turn (2.07 → 1.53 ms) and nearly half of a bare request's (0.45 → 0.25 ms;
    docs/performance.md).

    With a ``lane`` (the gateway's), a keep-alive connection whose plain JSON turn was just
    answered is handed to it (``hermes.gateway.lane``): the loop stops reading it until the
    lane gives it back, with the bytes it read and did not answer, which are then parsed here
    as if they had just arrived. While the lane holds it, the connection has no deadline of
    the loop's (the lane keeps the same one) and a shutdown waits for the lane to let go."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as Base
        headers_done = "on_headers_complete"
    except ImportError:  # pragma: no cover - httptools is a dependency
        from uvicorn.protocols.http.h11_impl import H11Protocol as Base  # type: ignore[assignment]
        headers_done = "handle_events"

    class Guarded(Base):  # type: ignore[misc,valid-type]
        _deadline: asyncio.TimerHandle | None = None
        _armed_at: float = 0.0
        _adopted = False
        _stopping = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                waiting = [c for c in self.connections
                           if isinstance(c, Guarded) and c is not self and c._deadline is not None]
                if not waiting:
                    transport.abort()
                    return
                min(waiting, key=lambda c: c._armed_at)._expire()
            self._arm()

        def _arm(self, timeout_s: float = header_timeout_s) -> None:
            self._disarm()
            self._armed_at = self.loop.time()
            self._deadline = self.loop.call_later(max(0.0, timeout_s), self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._disarm()
            if not self.transport.is_closing():
                self.transport.abort()

        def _headers_seen(self) -> None:
            before = self.cycle
            getattr(super(), headers_done)()
            if self.cycle is not None and self.cycle is not before:
                self._disarm()  # headers complete: the body has its own deadline (read_json)
                # the cycle only writes, closes and asks is_closing(): what HeadHeld has
                self.cycle.transport = cast(asyncio.Transport, HeadHeld(self.transport, self.loop))

        def on_response_complete(self) -> None:
            cycle = self.cycle
            lender = lane if (cycle.scope.get(LANE_MARK) and not self.pipeline and not self._stopping
                              and self.scope is cycle.scope  # no byte of a next request parsed yet
                              and not (isinstance(cycle.transport, HeadHeld) and cycle.transport.held is not None)
                              ) else None
            super().on_response_complete()
            if self.transport.is_closing():
                return
            if lender is not None and self.transport.get_write_buffer_size() == 0 and lender.can_adopt():
                self._unset_keepalive_if_required()
                self._disarm()
                self.flow.pause_reading()
                self._adopted = True
                lender.adopt(self.transport.get_extra_info("socket").fileno(), self._handback_soon,
                             lambda: self.server_state.default_headers, lambda: self._stopping)
            elif self._deadline is None:
                self._arm()

        def _handback_soon(self, letgo: Letgo) -> None:
            with contextlib.suppress(RuntimeError):  # a closed loop: the process is ending
                self.loop.call_soon_threadsafe(self._handback, letgo)

        def _handback(self, letgo: Letgo) -> None:
            """The lane let go of this connection: write what it could not, serve what it read
            and did not answer."""
            self._adopted = False
            if self.transport.is_closing():
                return
            if letgo.mode == "abort":
                self.transport.abort()
                return
            if letgo.unsent:
                self.transport.write(letgo.unsent)
            if letgo.mode == "close" or self._stopping:
                self.transport.close()  # after the buffer is written
            else:
                self.flow.resume_reading()
                self._arm(letgo.left_s)
                if letgo.unread:
                    self.data_received(letgo.unread)

        def shutdown(self) -> None:
            self._stopping = True
            if not self._adopted:  # else the lane closes it once its turn is answered
                super().shutdown()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    setattr(Guarded, headers_done, Guarded._headers_seen)
    return Guarded


def uvicorn_config(app: Any, options: GatewayOptions, *, log_level: str = "warning",
                   graceful_s: int | None = None) -> Any:
    """The one uvicorn configuration every gateway runs with (``serve`` and the tests).

    ``proxy_headers=False``: uvicorn otherwise takes a request's client address from its
    ``X-Forwarded-For`` header whenever the connection comes from 127.0.0.1, so any local
    process could name a new address with each wrong token and never wait for the auth
    throttle's back-off (which is kept per address). Behind a reverse proxy every client then
    shares the proxy's address: wrong tokens back off together, right ones never wait."""
    import uvicorn

    gateway = getattr(getattr(app, "state", None), "gateway", None)
    return uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="on", proxy_headers=False,
                          timeout_graceful_shutdown=graceful_s, limit_concurrency=None,
                          http=guarded_protocol(options.header_timeout_s, options.max_connections,
                                                gateway.lane if gateway is not None else None),
                          timeout_keep_alive=max(1, int(options.header_timeout_s)))


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
    once it accepts connections (scripts and tests wait for it). Shared with ``hermes proxy``."""
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


def serve(store: SessionStore, config: Config, *, host: str, port: int, options: GatewayOptions,
          log_level: str = "warning", graceful_s: int | None = None, sock: socket.socket | None = None) -> None:
    """Serve until interrupted. Prints ``hermes gateway listening on URL`` once ready.
    ``sock``: an already listening socket (a ``--workers`` child inherits its parent's)."""
    import uvicorn

    check_bind(host, options.token)
    sock = sock or bind(host, port)
    actual = sock.getsockname()[1]
    app = create_app(store, config, dataclasses.replace(options, freeze_after_first_turn=True))
    server = uvicorn.Server(uvicorn_config(app, options, log_level=log_level, graceful_s=graceful_s))
    shown = f"[{host}]" if ":" in host else host
    run_announced(server, sock, f"hermes gateway listening on http://{shown}:{actual}"
                                f" ({'token required' if options.token else 'no token: loopback only'})")
    print("hermes gateway stopped: every running turn finished", file=sys.stderr, flush=True)
