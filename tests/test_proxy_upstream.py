"""The proxy's HTTP client to its upstreams, against a loopback upstream that misbehaves the
ways real ones do: an interim ``100`` nobody asked for, a compressed answer although the proxy
asked for ``identity``, a ``~/.netrc`` naming the upstream's host."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from _proxy import running_proxy

MODEL = "deepseek-v4-pro"


class Upstream:
    """A chat-completions upstream on 127.0.0.1; ``mode`` picks how it misbehaves. Every
    request's headers and body are kept in ``seen``."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.seen: list[tuple[dict[str, str], dict[str, Any]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = orjson.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.seen.append(({k.lower(): v for k, v in self.headers.items()}, body))
                who = body["messages"][-1]["content"]
                if outer.mode == "interim":  # a 1xx nobody asked for, then the answer
                    self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                msg = {"role": "assistant", "content": f"answer for {who}", "reasoning_content": f"thought of {who}"}
                if body.get("stream"):
                    events = [{"choices": [{"index": 0, "delta": {"role": "assistant",
                                                                   "reasoning_content": msg["reasoning_content"]}}]},
                              {"choices": [{"index": 0, "delta": {"content": msg["content"]}}]},
                              {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
                    data = b"".join(b"data: " + orjson.dumps({"id": "c1", "object": "chat.completion.chunk",
                                                              "model": MODEL, **e}) + b"\n\n" for e in events)
                    data += b"data: [DONE]\n\n"
                    kind = "text/event-stream"
                else:
                    data = orjson.dumps({"id": "c1", "object": "chat.completion", "model": MODEL, "choices": [
                        {"index": 0, "finish_reason": "stop", "message": msg}]})
                    kind = "application/json"
                self.send_response(200)
                self.send_header("content-type", kind)
                if outer.mode == "gzip":
                    data = gzip.compress(data)
                    self.send_header("content-encoding", "gzip")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"

    def url_for(self, route: str) -> str:
        return self.url


@contextmanager
def proxied(mode: str) -> Iterator[tuple[Upstream, str]]:
    up = Upstream(mode)
    threading.Thread(target=up.server.serve_forever, daemon=True).start()
    try:
        with running_proxy(type("Emu", (), {"url": staticmethod(up.url_for)})()) as px:
            yield up, px.url("deepseek")
    finally:
        up.server.shutdown()


def post(base: str, key: str, messages: list[dict[str, Any]], stream: bool = False) -> httpx.Response:
    return httpx.post(f"{base}/chat/completions", json={"model": MODEL, "messages": messages, "stream": stream},
                      headers={"authorization": f"Bearer {key}"}, timeout=20)


def test_an_unasked_interim_answer_is_never_taken_for_the_answer() -> None:
    with proxied("interim") as (_up, base):
        answers = [post(base, f"sk-client-{who}-0000", [{"role": "user", "content": who}]) for who in "ABAB"]
    assert [r.status_code for r in answers] == [200] * 4
    assert [r.json()["choices"][0]["message"]["content"] for r in answers] == [f"answer for {w}" for w in "ABAB"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_compressed_answer_reaches_the_client_decoded_and_is_remembered(stream: bool) -> None:
    with proxied("gzip") as (up, base):
        first = post(base, "sk-client-gzip-0000", [{"role": "user", "content": "q"}], stream)
        assert first.status_code == 200
        assert "content-encoding" not in first.headers
        if stream:
            assert b"data: [DONE]" in first.content and b"thought of q" in first.content
        else:
            assert first.json()["choices"][0]["message"]["reasoning_content"] == "thought of q"
        # the client drops the reasoning, as most do: the proxy restores it from what it recorded
        again = post(base, "sk-client-gzip-0000", [{"role": "user", "content": "q"},
                                                   {"role": "assistant", "content": "answer for q"},
                                                   {"role": "user", "content": "next"}], stream)
        assert again.status_code == 200
    assert up.seen[1][1]["messages"][1].get("reasoning_content") == "thought of q"


def test_a_netrc_entry_for_the_upstream_adds_no_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine 127.0.0.1 login someone password netrc-secret-0000\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(netrc))
    with proxied("plain") as (up, base):
        r = httpx.post(f"{base}/chat/completions", timeout=20,
                       json={"model": MODEL, "messages": [{"role": "user", "content": "q"}]})
    assert r.status_code == 200
    assert "authorization" not in up.seen[0][0]
