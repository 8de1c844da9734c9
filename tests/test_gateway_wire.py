"""What the gateway does on a keep-alive connection, byte by byte: deadlines between requests,
interim ``100 Continue``. Raw sockets against the gateway's own uvicorn configuration
(``serving.protocol``), so nothing a client library does hides what the server sends."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from _harness import gateway

from hermes.config.settings import Config


def exchange(sock: socket.socket, request: bytes) -> tuple[bytes, bytes]:
    """Send one request, read its whole Content-Length response: (head, body)."""
    sock.sendall(request)
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


def post(path: str, body: dict[str, Any]) -> bytes:
    raw = orjson.dumps(body)
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(raw)}\r\n\r\n").encode() + raw


def closed_within(sock: socket.socket, seconds: float) -> bytes:
    """What the server sent before it closed ``sock``; fails if it stays open ``seconds``."""
    started, got = time.monotonic(), b""
    sock.settimeout(seconds + 1)
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except ConnectionResetError:
        pass
    assert time.monotonic() - started < seconds, "the connection stayed open"
    return got


def test_after_a_turn_the_next_request_has_its_deadlines_too(
        emulator: Any, hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After an answer on a keep-alive connection: a next head trickled a byte at a time is
    closed at the header deadline (uvicorn's own keep-alive timer stops at the first byte), a
    half-sent body is answered 408 and closed, and an idle connection is closed too."""
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-test-0001")
    with gateway(hermes_home, Config(), allowed_base_urls=(emulator.root,),
                 header_timeout_s=1.0, body_timeout_s=1.0) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)

        def after_a_turn() -> tuple[socket.socket, str]:
            sock = socket.create_connection((host, int(port)), timeout=10)
            head, body = exchange(sock, post("/v1/sessions", {
                "provider": "deepseek", "model": "deepseek-v4-pro", "base_url": emulator.url("deepseek")}))
            assert head.startswith(b"HTTP/1.1 201"), head + body
            sid = orjson.loads(body)["id"]
            head, body = exchange(sock, post(f"/v1/sessions/{sid}/messages", {"content": "one"}))
            assert head.startswith(b"HTTP/1.1 200") and orjson.loads(body)["session_id"] == sid
            return sock, sid

        sock, sid = after_a_turn()
        whole = post(f"/v1/sessions/{sid}/messages", {"content": "trickled"})
        started = time.monotonic()
        closed = False
        for byte in whole[:40]:  # one byte every 0.1 s: 4 s in all, against a 1 s deadline
            try:
                sock.send(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.1)
        assert closed or closed_within(sock, 1.0) == b""
        assert time.monotonic() - started < 3.0
        sock.close()

        sock, sid = after_a_turn()
        sock.sendall(post(f"/v1/sessions/{sid}/messages", {"content": "half a body"})[:-5])
        got = closed_within(sock, 3.0)
        assert got.startswith(b"HTTP/1.1 408") and b"did not arrive" in got, got
        sock.close()

        sock, _ = after_a_turn()
        assert closed_within(sock, 3.0) == b""  # idle past the header deadline
        sock.close()


def test_a_client_that_waits_for_100_continue_gets_it_before_it_sends_the_body(hermes_home: Path) -> None:
    body = orjson.dumps({"provider": "deepseek", "model": "deepseek-v4-pro"})
    with gateway(hermes_home, Config()) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
            assert sock.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
            sock.sendall(body)
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 201"), answer
