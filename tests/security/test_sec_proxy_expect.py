"""Issue 32 item 1: a client's ``Expect: 100-continue`` must not desync the proxy's upstream pool.

A real proxy process in front of a loopback upstream that honours ``Expect`` (interim ``100``,
then the answer after a pause). Client A posts with ``Expect``; client B, another key, right
after: B must get B's answer, never A's."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import orjson


def _upstream() -> tuple[socket.socket, int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)

    def conn(c: socket.socket) -> None:
        buf = b""
        with c:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = c.recv(65536)
                    if not data:
                        return
                    buf += data
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").lower().split("\r\n")
                length = next(int(x.split(":", 1)[1]) for x in lines if x.startswith("content-length:"))
                if any(x.startswith("expect:") and "100-continue" in x for x in lines):
                    c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                while len(buf) < length:
                    buf += c.recv(65536)
                body, buf = orjson.loads(buf[:length]), buf[length:]
                who = body["messages"][-1]["content"]
                time.sleep(0.3)
                out = orjson.dumps({"id": "x", "object": "chat.completion", "model": body["model"], "choices": [{
                    "index": 0, "finish_reason": "stop", "message": {
                        "role": "assistant", "content": f"answer for {who}", "reasoning_content": f"thought of {who}"}}]})
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                          % (len(out), out))

    def accept() -> None:
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=conn, args=(c,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return srv, srv.getsockname()[1]


def test_expect_100_continue_never_hands_one_client_anothers_answer(tmp_path: Path) -> None:
    srv, port = _upstream()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}, "HERMES_HOME": str(tmp_path)}
    out = tmp_path / "proxy.out"
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "proxy", "--port", "0", "--upstream",
                             f"deepseek=http://127.0.0.1:{port}"], env=env, stdout=out.open("wb"),
                            stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while "listening on " not in (out.read_text() if out.exists() else ""):
            assert proc.poll() is None and time.monotonic() < deadline, out.read_text()
            time.sleep(0.05)
        base = out.read_text().split("listening on ", 1)[1].split()[0].replace("/<route>", "/deepseek")
        got: dict[str, httpx.Response] = {}

        def post(who: str, extra: dict[str, str]) -> None:
            got[who] = httpx.post(f"{base}/chat/completions", timeout=30, headers={
                "authorization": f"Bearer sk-{who}-000000000000", **extra}, json={
                "model": "deepseek-v4-pro", "messages": [{"role": "user", "content": who}]})

        a = threading.Thread(target=post, args=("alice", {"expect": "100-continue"}))
        a.start()
        time.sleep(0.1)
        post("bob", {})
        a.join()
        assert got["alice"].status_code == 200 and got["alice"].json()["choices"][0]["message"]["content"] == \
            "answer for alice"
        assert got["bob"].status_code == 200, got["bob"].text
        assert "alice" not in got["bob"].text and "answer for bob" in got["bob"].text
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        srv.close()


def test_dot_segments_never_leave_the_upstream_prefix(tmp_path: Path) -> None:
    """Issue 32 item 6: ``..`` raw or percent-encoded (any case) is a 400, never forwarded."""
    srv, port = _upstream()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}, "HERMES_HOME": str(tmp_path)}
    out = tmp_path / "proxy.out"
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "proxy", "--port", "0", "--upstream",
                             f"deepseek=http://127.0.0.1:{port}/v1"], env=env, stdout=out.open("wb"),
                            stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while "listening on " not in (out.read_text() if out.exists() else ""):
            assert proc.poll() is None and time.monotonic() < deadline, out.read_text()
            time.sleep(0.05)
        root = out.read_text().split("listening on ", 1)[1].split()[0].replace("/<route>", "")
        host, _, p = root.removeprefix("http://").partition(":")
        for path in ("/deepseek/..%2F..%2Fadmin/x", "/deepseek/%2E%2e/admin", "/deepseek/a/%2e%2e%2fadmin"):
            with socket.create_connection((host, int(p)), timeout=10) as c:
                c.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
                answer = c.recv(65536)
            assert answer.startswith(b"HTTP/1.1 400"), (path, answer[:200])
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        srv.close()
