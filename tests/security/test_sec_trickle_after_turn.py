"""Issue 32 item 2: a slow sender must not pin a gateway turn thread.

Attack against a real ``hermes gateway`` process over loopback: 100 keep-alive connections
each run one normal turn, then send the first byte of their next request at once and go on
trickling it, one byte at a time. Before the fix the gateway's turn lane read a connection's
next request on a turn thread, so each of these connections held one of the 64 threads for
the whole header timeout and the next client's turn waited for a thread once 64 of them did
(so the 65th connection's own first turn already waits). Now only the event loop waits on a client's bytes: the normal turn is served
within a second while every trickler is still connected.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from _procs import listening, stop_all

KEY = "sk-deepseek-trickle-0001"
TRICKLERS = 100


def _post(path: str, body: dict[str, Any]) -> bytes:
    raw = orjson.dumps(body)
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(raw)}\r\n\r\n").encode() + raw


def _answer(sock: socket.socket) -> tuple[bytes, bytes]:
    """One whole Content-Length response read from ``sock``: (head, body)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        assert chunk, "the gateway closed the connection"
        buf += chunk
    head, body = buf.split(b"\r\n\r\n", 1)
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += sock.recv(65536)
    return head, body


def test_connections_trickling_their_next_request_do_not_delay_another_clients_turn(
        emulator: Any, tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HERMES_") and not k.endswith("_API_KEY")},
           "HERMES_HOME": str(home), "DEEPSEEK_API_KEY": KEY}
    err = home / "gw.err"
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "gateway", "--port", "0", "--header-timeout", "30",
                             "--allow-base-url", emulator.root], env=env, stdout=subprocess.DEVNULL,
                            stderr=err.open("wb"))
    socks: list[socket.socket] = []
    try:
        base = listening(proc, err, "gateway")
        host, port = base.removeprefix("http://").rsplit(":", 1)
        session = {"provider": "deepseek", "model": "deepseek-v4-pro", "base_url": emulator.url("deepseek")}
        with httpx.Client(base_url=base, timeout=30) as c:
            sids = [c.post("/v1/sessions", json=session).json()["id"] for _ in range(TRICKLERS + 1)]
        for sid in sids[:TRICKLERS]:
            s = socket.create_connection((host, int(port)), timeout=10)
            socks.append(s)
            s.sendall(_post(f"/v1/sessions/{sid}/messages", {"content": "a normal turn"}))
            try:
                head, body = _answer(s)
            except TimeoutError:
                pytest.fail(f"connection {len(socks)}'s turn waited 10 s for a thread held by a trickler")
            assert head.startswith(b"HTTP/1.1 200"), head + body
            s.sendall(b"P")  # the next request's first byte, right after the answer

        def trickle() -> None:
            for s in socks:
                with contextlib.suppress(OSError):
                    s.send(b"O")

        trickle()
        started = time.monotonic()
        with httpx.Client(base_url=base, timeout=30) as c:
            r = c.post(f"/v1/sessions/{sids[-1]}/messages", json={"content": "another client"})
        took = time.monotonic() - started
        trickle()
        assert r.status_code == 200, r.text
        assert "another client" in r.json()["answer"]
        assert took < 1.0, f"a normal client's turn took {took:.1f} s while {TRICKLERS} connections trickled"
        still_open = 0
        for s in socks:  # the attack was real: the tricklers were still connected meanwhile
            s.setblocking(False)
            try:
                still_open += s.recv(1) != b""
            except BlockingIOError:
                still_open += 1
            except OSError:
                pass
        assert still_open == TRICKLERS
    finally:
        for s in socks:
            s.close()
        stop_all([proc])
