"""The emulator harness: one loopback HTTP server hosting every provider personality.

Each personality is a Starlette app mounted at ``/{name}``; its base URL is
``http://127.0.0.1:{port}/{name}`` (plus the provider's own path prefix, see
``Personality.base_path``). Shared state lives in ``EmulatorState``:

* ``log`` — every request (personality, method, path, JSON body, headers without auth);
* ``mint`` / ``verify`` — HMAC signatures, so a replayed blob is checked byte-exact;
* ``control`` — per-personality drift (``reject_fields``) and faults (``500``, ``429``,
  ``truncate``, ``malformed``, ``slow``, ``html502``, ``empty200``, ``text4xx``), each
  consumed ``times`` times (``-1`` = until cleared). Set them over HTTP at
  ``POST /_control/{name}`` or in-process with ``EmulatorState.set_control``.

The emulators are part of the product (``hermes emulate``, ``hermes demo``); tests drive the
real adapters against them over real HTTP.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from .access import Access

__all__ = ["PERSONALITIES", "Control", "Emulator", "EmulatorState", "Personality", "register", "transport_fault"]

_HTML_502 = ("<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1>"
             "</center><hr><center>nginx</center></body></html>")


def transport_fault(fault: str | None) -> Response | None:
    """Faults that look the same whatever the provider: a proxy's HTML 502, an empty 200 and a
    plain-text 400. Provider-shaped faults (500, 429, truncate ...) stay with each personality."""
    if fault == "html502":
        return Response(_HTML_502, status_code=502, media_type="text/html")
    if fault == "empty200":
        return Response(b"", status_code=200, media_type="application/json")
    if fault == "text4xx":
        return Response("Bad Request: upstream rejected the request", status_code=400, media_type="text/plain")
    return None


@dataclass
class Control:
    reject_fields: set[str] = field(default_factory=set)
    """Drift: start rejecting these carrier fields as unknown, with the provider's real error."""
    fault: str | None = None
    times: int = 0
    delay: float = 0.0
    """Seconds between streamed chunks (``slow``)."""
    first_token: float = 0.0
    """Seconds before any answer starts: a provider's time to first token, for benchmarks at
    realistic latency (with ``delay`` as the time per streamed chunk)."""


@dataclass(frozen=True)
class Personality:
    name: str
    """Mount point and route key it emulates (``deepseek``, ``anthropic`` ...)."""
    build: Callable[[EmulatorState, str], Starlette]
    """(state, name) → the app serving this personality."""
    base_path: str = ""
    """Appended to ``/{name}`` to form the base URL a client is given (e.g. ``/v1``)."""


PERSONALITIES: dict[str, Personality] = {}


def register(p: Personality) -> Personality:
    PERSONALITIES[p.name] = p
    return p


class EmulatorState:
    """Request log, HMAC minting and per-personality controls; thread-safe."""

    def __init__(self, secret: bytes | None = None, *, keys: Iterable[str] | None = None) -> None:
        self.secret = secret or hashlib.sha256(str(time.time_ns()).encode()).digest()
        self.access = Access(keys)
        self.log: list[dict[str, Any]] = []
        self.controls: dict[str, Control] = {}
        self._lock = threading.Lock()

    def add_models(self, personality: str, *globs: str) -> None:
        """Let ``personality`` (``*``: every one) serve these models besides the profiled ones:
        how a test uses a made-up model id without the provider's unknown-model answer."""
        self.access.add_models(personality, *globs)

    # --- signatures -------------------------------------------------------------------
    def mint(self, personality: str, model: str, text: str, *, prefix: str = "Es") -> str:
        """A base64 signature binding (personality, model, text); verify() checks it exactly."""
        mac = hmac.new(self.secret, f"{personality}\0{model}\0{text}".encode(), hashlib.sha256).digest()
        return prefix + base64.b64encode(mac + mac[:16]).decode()

    def verify(self, personality: str, model: str, text: str, signature: str, *, prefix: str = "Es") -> bool:
        return hmac.compare_digest(self.mint(personality, model, text, prefix=prefix), signature)

    # --- log and controls -------------------------------------------------------------
    def record(self, personality: str, request: Request, body: Any) -> None:
        headers = {k: v for k, v in request.headers.items()
                   if k.lower() not in ("authorization", "x-api-key", "x-goog-api-key", "api-key")}
        with self._lock:
            self.log.append({"personality": personality, "method": request.method,
                             "path": request.url.path, "query": str(request.url.query),
                             "headers": headers, "body": body})

    def requests(self, personality: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.log if personality is None or r["personality"] == personality]

    def control(self, personality: str) -> Control:
        with self._lock:
            return self.controls.setdefault(personality, Control())

    def set_control(self, personality: str, *, reject_fields: list[str] | None = None,
                    fault: str | None = None, times: int = 1, delay: float | None = None,
                    first_token: float | None = None) -> None:
        c = self.control(personality)
        with self._lock:
            if reject_fields is not None:
                c.reject_fields = set(reject_fields)
            c.fault, c.times = (fault, times) if fault else (None, 0)
            if delay is not None:
                c.delay = delay
            if first_token is not None:
                c.first_token = first_token

    def reset_controls(self) -> None:
        """Back to a well-behaved provider: no armed faults, drift or delay. A test that arms
        more faults than its client consumes must not leave them to the next test sharing
        this emulator (that was an order-dependent failure in the suite)."""
        with self._lock:
            self.controls.clear()

    def take_fault(self, personality: str) -> str | None:
        """The pending fault for this personality, consuming one use."""
        c = self.control(personality)
        with self._lock:
            if not c.fault or c.times == 0:
                return None
            fault = c.fault
            if c.times > 0:
                c.times -= 1
            if c.times == 0:
                c.fault = None
            return fault


def _app(state: EmulatorState, names: list[str]) -> Starlette:
    async def control(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            spec = orjson.loads(await request.body() or b"{}")
        except orjson.JSONDecodeError:
            return JSONResponse({"error": "control body must be JSON"}, status_code=400)
        if spec.get("models"):
            state.add_models(name, *map(str, spec["models"]))
        state.set_control(name, reject_fields=spec.get("reject_fields"), fault=spec.get("fault"),
                          times=int(spec.get("times", 1)), delay=spec.get("delay"),
                          first_token=spec.get("first_token"))
        return JSONResponse({"ok": True})

    async def log(request: Request) -> Response:
        return Response(orjson.dumps(state.requests(request.query_params.get("personality"))),
                        media_type="application/json")

    routes: list[Any] = [Route("/_control/{name}", control, methods=["POST"]), Route("/_log", log)]
    routes += [Mount(f"/{n}", app=PERSONALITIES[n].build(state, n)) for n in names]
    return Starlette(routes=routes)


class Emulator:
    """Run every registered personality (or ``names``) on 127.0.0.1 in a background thread."""

    def __init__(self, names: list[str] | None = None, *, port: int = 0, host: str = "127.0.0.1",
                 keys: Iterable[str] | None = None) -> None:
        """``keys``: the only keys accepted (None: any non-empty key)."""
        from . import load_all

        load_all()
        self.names = names or sorted(PERSONALITIES)
        self.state = EmulatorState(keys=keys)
        self.host = host
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # accepted sockets inherit this; asyncio sets TCP_NODELAY only on sockets it creates, so
        # without it every response (headers, then body) waits ~40 ms for a delayed ACK
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock.bind((host, port))
        self.port = self._sock.getsockname()[1]
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def root(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, name: str) -> str:
        """The base URL a client uses for personality ``name``."""
        return f"{self.root}/{name}{PERSONALITIES[name].base_path}"

    def requests(self, name: str | None = None) -> list[dict[str, Any]]:
        return self.state.requests(name)

    def app(self) -> Any:
        """The ASGI app served; a subclass may wrap it (e.g. to record raw responses)."""
        return _app(self.state, self.names)

    def start(self) -> Emulator:
        import uvicorn

        config = uvicorn.Config(self.app(), log_level="warning", lifespan="off",
                                access_log=False, timeout_graceful_shutdown=1,
                                # A client may reuse an idle connection at the moment the server
                                # closes it ("disconnected without sending a response"); on a loaded
                                # machine uvicorn's 5 s default made property tests flaky.
                                timeout_keep_alive=300)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name="hermes-emulator", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("emulator failed to start")
            time.sleep(0.01)
        return self

    def serve_forever(self, *, access_log: bool = False) -> None:
        """Foreground mode for ``hermes emulate``: uvicorn says only what went wrong, and each
        request only when asked."""
        import uvicorn

        config = uvicorn.Config(_app(self.state, self.names), log_level="info" if access_log else "warning",
                                access_log=access_log, lifespan="off")
        uvicorn.Server(config).run(sockets=[self._sock])

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._sock.close()

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
