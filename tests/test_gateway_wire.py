"""What the gateway puts on the socket: a whole response in one segment, a streamed one in order.

uvicorn writes a response's head as soon as the app sends it and the body after; on a socket
with ``TCP_NODELAY`` (the gateway's) each write leaves as its own segment and wakes the client
twice. ``server.HeadHeld`` holds the head back until the body follows. The kernel counts the
segments with data a socket received (``tcpi_data_segs_in``), so the client's own socket says
how many writes carried each response: no mock, no timing.
"""

from __future__ import annotations

import socket
import struct
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from _harness import gateway

from hermes.config import Config

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads Linux's struct tcp_info")

_DATA_SEGS_IN = 152
"""Offset of ``tcpi_data_segs_in`` in Linux's ``struct tcp_info`` (since 4.6)."""


def data_segments_in(sock: socket.socket) -> int:
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    if len(info) < _DATA_SEGS_IN + 4:
        pytest.skip("this kernel's tcp_info has no tcpi_data_segs_in (Linux < 4.6)")
    return int(struct.unpack_from("I", info, _DATA_SEGS_IN)[0])


def exchange(sock: socket.socket, request: bytes) -> tuple[bytes, bytes, int]:
    """Send one request, read its whole Content-Length response: (head, body, data segments)."""
    before = data_segments_in(sock)
    sock.sendall(request)
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += sock.recv(65536)
    head, body = buf.split(b"\r\n\r\n", 1)
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += sock.recv(65536)
    return head, body, data_segments_in(sock) - before


def post(path: str, body: dict[str, Any]) -> bytes:
    raw = orjson.dumps(body)
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(raw)}\r\n\r\n").encode() + raw


def test_whole_responses_leave_in_one_segment_and_streams_still_arrive_in_order(
        emulator: Any, hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-test-0001")
    with gateway(hermes_home, Config(), allowed_base_urls=(emulator.root,)) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port))) as sock:
            head, body, segs = exchange(sock, post("/v1/sessions", {
                "provider": "deepseek", "model": "deepseek-v4-pro", "base_url": emulator.url("deepseek")}))
            assert head.startswith(b"HTTP/1.1 201"), head
            assert segs == 1, f"a session's 201 came in {segs} segments"
            sid = orjson.loads(body)["id"]

            for text in ("one", "two"):  # turns on the same keep-alive connection
                head, body, segs = exchange(sock, post(f"/v1/sessions/{sid}/messages", {"content": text}))
                assert head.startswith(b"HTTP/1.1 200"), head + body
                assert orjson.loads(body)["session_id"] == sid
                assert segs == 1, f"a turn's answer came in {segs} segments"

            head, body, segs = exchange(sock, post(f"/v1/sessions/{sid}/messages", {}))  # an error answer too
            assert head.startswith(b"HTTP/1.1 400") and b"content" in body and segs == 1

            # a streamed turn: the head is not held for the stream's end; every event arrives, in order
            sock.sendall(post(f"/v1/sessions/{sid}/messages", {"content": "three", "stream": True}))
            stream = b""
            while not stream.endswith(b"0\r\n\r\n"):  # chunked: the last chunk ends the response
                chunk = sock.recv(65536)
                assert chunk, "the gateway closed the connection mid-stream"
                stream += chunk
    head, _, rest = stream.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
    events = [line.split(b": ", 1)[1] for line in rest.split(b"\n") if line.startswith(b"event: ")]
    assert events[-1] == b"done" and b"text" in events, events


def test_a_client_that_waits_for_100_continue_gets_it_before_it_sends_the_body(hermes_home: Path) -> None:
    """The interim "100 Continue" is the first thing written for its request, so it is held like
    a head; the client sends nothing more until it arrives, so it must leave on its own."""
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
