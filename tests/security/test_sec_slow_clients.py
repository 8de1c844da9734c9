"""Item 7: slow clients must not pin the gateway.

Attack against a real ``hermes gateway`` process: 300 connections trickle request headers one
byte at a time, 50 more send headers and then trickle the body, and 100 connect beyond the
connection cap (each evicting the oldest stalled one). Before the fix every one of them stayed open indefinitely (uvicorn has no
header deadline), pinning file descriptors before any auth check. Now: stalled connections are
closed within seconds, the cap holds, and a normal client is served throughout.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def _start(home: Path, *args: str) -> tuple[subprocess.Popen[bytes], str]:
    home.mkdir(parents=True, exist_ok=True)
    err = home / "gw.err"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}, "HERMES_HOME": str(home)}
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "gateway", "--port", "0", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=err.open("wb"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        text = err.read_text()
        if "listening on " in text:
            return proc, text.split("listening on ", 1)[1].split()[0]
        assert proc.poll() is None, text
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("gateway did not start")


def _closed(s: socket.socket) -> bool:
    """True once the server closed ``s`` (EOF or reset), whatever it answered before."""
    s.setblocking(False)
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except BlockingIOError:
        return False
    except (ConnectionResetError, BrokenPipeError):
        return True


def test_stalled_connections_are_closed_and_others_still_served(tmp_path: Path) -> None:
    proc, base = _start(tmp_path / "h", "--header-timeout", "2", "--body-timeout", "2", "--max-connections", "400")
    host, port = base.removeprefix("http://").split(":")
    socks: list[socket.socket] = []
    try:
        heads = [socket.create_connection((host, int(port))) for _ in range(300)]
        for s in heads:
            s.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        bodies = [socket.create_connection((host, int(port))) for _ in range(50)]
        for s in bodies:
            s.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 1000\r\n\r\n{")
        socks = heads + bodies
        extra = [socket.create_connection((host, int(port))) for _ in range(100)]
        socks += extra
        time.sleep(0.5)
        assert sum(not _closed(s) for s in socks) <= 400  # the cap holds: the oldest stalled ones went
        started = time.monotonic()
        served = []
        while time.monotonic() - started < 6:
            for s in heads:  # keep trickling: one byte per connection per round
                with contextlib.suppress(OSError):
                    s.send(b"x")
            t = time.monotonic()
            r = httpx.get(base + "/healthz", timeout=5)
            served.append((r.status_code, time.monotonic() - t))
            time.sleep(0.25)
        assert served and all(code == 200 for code, _ in served)
        assert max(t for _, t in served) < 2.0, served
        open_heads = [s for s in heads if not _closed(s)]
        assert not open_heads, f"{len(open_heads)} header-trickling connections still open after 6 s"
        assert all(_closed(s) for s in bodies + extra)
    finally:
        for s in socks:
            s.close()
        proc.terminate()
        proc.wait(timeout=20)


def test_body_trickle_gets_408(tmp_path: Path) -> None:
    proc, base = _start(tmp_path / "h", "--body-timeout", "1")
    host, port = base.removeprefix("http://").split(":")
    try:
        with socket.create_connection((host, int(port))) as s:
            s.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 100\r\n\r\n{")
            s.settimeout(10)
            reply = s.recv(4096)
        assert reply.startswith(b"HTTP/1.1 408"), reply
    finally:
        proc.terminate()
        proc.wait(timeout=20)
