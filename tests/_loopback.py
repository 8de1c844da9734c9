"""A scripted loopback upstream and a real ``hermes proxy`` process in front of it, for the
security tests that attack the proxy over the wire.

``Upstream`` is a threaded ``http.server`` on 127.0.0.1: each request is recorded (path,
headers, JSON body) and answered by the test's own function, which writes the raw answer —
so a test can send a huge body, a gzip body, a stream, or headers the proxy must not repeat.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
from _procs import listening, stop_all

__all__ = ["Running", "Seen", "Upstream", "log_records", "proxy_process", "send_json"]


@dataclass(frozen=True)
class Seen:
    """One request the upstream received."""

    path: str
    headers: dict[str, str]
    body: Any


Answer = Callable[[Seen, BaseHTTPRequestHandler], None]
"""Writes the whole answer to ``handler`` (``send_response`` ... ``wfile.write``)."""


class Upstream:
    """``with Upstream(answer) as up:`` — ``up.url`` is its base URL, ``up.seen`` what it received."""

    def __init__(self, answer: Answer) -> None:
        self.seen: list[Seen] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go in separate writes

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                seen = Seen(self.path, {k.lower(): v for k, v in self.headers.items()},
                            orjson.loads(raw) if raw else None)
                outer.seen.append(seen)
                answer(seen, self)

            do_GET = do_POST

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Upstream:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def send_json(handler: BaseHTTPRequestHandler, body: Any, status: int = 200,
              headers: dict[str, str] | None = None) -> None:
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(raw)))
    for k, v in (headers or {}).items():
        handler.send_header(k, v)
    handler.end_headers()
    handler.wfile.write(raw)


@dataclass(frozen=True)
class Running:
    root: str
    """``http://127.0.0.1:PORT``"""
    pid: int


@contextlib.contextmanager
def proxy_process(home: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[Running]:
    """A real ``hermes proxy --port 0 ARGS`` with ``HERMES_HOME=home`` and ``env`` added. No
    ``HERMES_*`` or ``*_API_KEY`` of this machine reaches it."""
    home.mkdir(parents=True, exist_ok=True)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HERMES_") and not k.endswith("_API_KEY")},
           "HERMES_HOME": str(home), **(env or {})}
    err = home / "proxy.err"
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "proxy", "--port", "0", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=err.open("wb"))
    try:
        yield Running(listening(proc, err, "hermes proxy").removesuffix("/<route>"), proc.pid)
    finally:
        stop_all([proc])


def log_records(home: Path, event: str) -> list[dict[str, Any]]:
    """The ``event`` records of ``home``'s request log."""
    path = home / "logs" / "hermes.log"
    lines = path.read_bytes().splitlines() if path.exists() else []
    return [r for r in map(orjson.loads, lines) if r.get("event") == event]
