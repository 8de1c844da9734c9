"""The transport seam over real loopback HTTP: retries, error mapping, and no key in any error.

A tiny threaded HTTP server plays a scripted sequence of answers; requests go through the real
call path (``provider.complete`` → ``HttpTransport`` → httpx).
"""

from __future__ import annotations

import socket
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
import pytest

from hermes.agent import provider
from hermes.core.errors import (
    AuthFailed,
    ProviderConnectionError,
    ProviderHTTPError,
    RateLimited,
    StreamError,
)
from hermes.core.messages import Message
from hermes.routing.resolve import resolve
from hermes.transport.http import HttpTransport

CANARY = "canary-7f3a9c1e55d04b2b9e61"
OK = orjson.dumps({"id": "x", "choices": [{"index": 0, "finish_reason": "stop",
                                           "message": {"role": "assistant", "content": "hi", "reasoning_content": "r"}}]})


@dataclass
class Answer:
    status: int = 200
    body: bytes = OK
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})
    cut_after: int | None = None
    """Send only this many body bytes, then drop the connection (broken stream)."""
    echo_auth: bool = False
    """Put the request's Authorization header into the body (a badly behaved server)."""


class Server:
    def __init__(self) -> None:
        self.script: list[Answer] = []
        self.seen: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                outer.seen.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                   "body": orjson.loads(self.rfile.read(n)), "t": time.monotonic(),
                                   "peer": self.client_address[1]})
                a = outer.script.pop(0) if len(outer.script) > 1 else outer.script[0]
                body = a.body
                if a.echo_auth:
                    body = body.replace(b"$AUTH", self.headers.get("authorization", "").encode())
                self.send_response(a.status)
                for k, v in a.headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(body)))
                if a.cut_after is not None:
                    self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(body if a.cut_after is None else body[: a.cut_after])
                self.wfile.flush()
                if a.cut_after is not None:
                    self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


def call(url: str, *, stream: bool = False, retries: int = 2) -> provider.Exchange:
    resolved = resolve("generic", url, "m")
    with HttpTransport(max_retries=retries) as t:
        return provider.complete(resolved, [Message.user("hi")], stream=stream, api_key=CANARY, transport=t)


def err_json(message: str, code: Any = None) -> bytes:
    return orjson.dumps({"error": {"message": message, "type": "invalid_request_error", "code": code}})


def everything(e: BaseException) -> str:
    """All text an exception could show: message, args, attributes, formatted traceback."""
    parts = [str(e), repr(e), repr(e.args), "".join(traceback.format_exception(e))]
    parts += [repr(v) for v in vars(e).values()]
    return "\n".join(parts)


def test_429_waits_for_retry_after_then_succeeds(server: Server) -> None:
    server.script = [Answer(429, err_json("Rate limit reached"), {"retry-after": "0.4"}), Answer()]
    ex = call(server.url)
    assert ex.response.message.text == "hi"
    assert len(server.seen) == 2
    assert server.seen[1]["t"] - server.seen[0]["t"] >= 0.35
    assert server.seen[0]["body"] == server.seen[1]["body"]
    assert server.seen[0]["headers"]["authorization"] == f"Bearer {CANARY}"


def test_429_on_a_stream_is_retried_before_the_first_byte(server: Server) -> None:
    sse = (b'data: {"choices":[{"delta":{"reasoning_content":"r"}}]}\n\n'
           b'data: {"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
    server.script = [Answer(429, err_json("slow down"), {"retry-after": "0"}),
                     Answer(200, sse, {"content-type": "text/event-stream"})]
    ex = call(server.url, stream=True)
    assert (ex.response.message.text, ex.response.message.reasoning[0].text) == ("hi", "r")
    assert len(server.seen) == 2


def test_400_is_an_answer_not_retried(server: Server) -> None:
    server.script = [Answer(400, err_json("Unrecognized request argument supplied: thinking"))]
    with pytest.raises(ProviderHTTPError) as ei:
        call(server.url)
    assert ei.value.status == 400 and len(server.seen) == 1
    assert "Unrecognized request argument supplied: thinking" in str(ei.value)
    assert ei.value.json()["error"]["message"].startswith("Unrecognized")


def test_5xx_is_retried_then_mapped(server: Server) -> None:
    server.script = [Answer(503, err_json("overloaded"), {"retry-after": "0"})]
    with pytest.raises(ProviderHTTPError) as ei:
        call(server.url, retries=2)
    assert ei.value.status == 503 and "overloaded" in str(ei.value)
    assert len(server.seen) == 3


def test_exhausted_429_is_rate_limited(server: Server) -> None:
    server.script = [Answer(429, err_json("Rate limit reached"), {"retry-after": "0"})]
    with pytest.raises(RateLimited) as ei:
        call(server.url, retries=1)
    assert ei.value.hint and len(server.seen) == 2


def test_html_502_page_gives_a_clear_error(server: Server) -> None:
    page = (b"<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1>"
            b"</center><hr><center>nginx</center></body></html>")
    server.script = [Answer(502, page, {"content-type": "text/html", "retry-after": "0"})]
    with pytest.raises(ProviderHTTPError) as ei:
        call(server.url, retries=1)
    msg = str(ei.value)
    assert "HTTP 502" in msg and "502 Bad Gateway" in msg and "proxy or gateway" in msg
    assert "<center>" not in msg


def test_200_with_empty_body_is_a_stream_error(server: Server) -> None:
    server.script = [Answer(200, b"")]
    with pytest.raises(StreamError, match="empty response body"):
        call(server.url)


def test_200_that_is_not_json_is_a_stream_error(server: Server) -> None:
    server.script = [Answer(200, b"<html>login required</html>", {"content-type": "text/html"})]
    with pytest.raises(StreamError, match="not JSON"):
        call(server.url)


def test_4xx_plain_text_is_readable(server: Server) -> None:
    server.script = [Answer(400, b"Bad Request: upstream rejected the request", {"content-type": "text/plain"})]
    with pytest.raises(ProviderHTTPError) as ei:
        call(server.url)
    assert "HTTP 400" in str(ei.value) and "upstream rejected the request" in str(ei.value)
    assert ei.value.json() is None


def test_broken_stream_is_a_stream_error(server: Server) -> None:
    sse = b'data: {"choices":[{"delta":{"reasoning_content":"thinking about it"}}]}\n\n' * 4
    server.script = [Answer(200, sse, {"content-type": "text/event-stream"}, cut_after=len(sse) // 2)]
    with pytest.raises(StreamError):
        call(server.url, stream=True)
    assert len(server.seen) == 1  # never retried once bytes arrived


def test_stream_without_finish_is_truncated(server: Server) -> None:
    sse = b'data: {"choices":[{"delta":{"content":"par"}}]}\n\ndata: [DONE]\n\n'
    server.script = [Answer(200, sse, {"content-type": "text/event-stream"})]
    with pytest.raises(StreamError, match="truncated"):
        call(server.url, stream=True)


@pytest.mark.parametrize("answer", [
    Answer(401, b'{"error":{"message":"Incorrect API key provided: $AUTH"}}', echo_auth=True),
    Answer(400, b'{"error":{"message":"bad header $AUTH"}}', echo_auth=True),
    Answer(502, b"<html><title>bad gateway for $AUTH</title></html>", {"retry-after": "0"}, echo_auth=True),
    Answer(400, b"token $AUTH is not valid", {"content-type": "text/plain"}, echo_auth=True),
    Answer(200, b"oops $AUTH", echo_auth=True),
    Answer(200, b'data: {"error":{"message":"key $AUTH revoked"}}\n\n', {"content-type": "text/event-stream"},
           echo_auth=True),
])
def test_the_api_key_never_appears_in_an_error(server: Server, answer: Answer) -> None:
    server.script = [answer]
    with pytest.raises((ProviderHTTPError, StreamError)) as ei:
        call(server.url, stream=answer.headers.get("content-type") == "text/event-stream", retries=0)
    assert CANARY not in everything(ei.value)
    assert CANARY in server.seen[0]["headers"]["authorization"]  # the server did see (and echo) it
    if isinstance(ei.value, AuthFailed):
        assert ei.value.hint


def test_connection_refused_is_a_connection_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ProviderConnectionError) as ei:
        call(f"http://127.0.0.1:{port}/v1", retries=1)
    assert "cannot reach 127.0.0.1" in str(ei.value) and ei.value.hint
    assert CANARY not in everything(ei.value)


@pytest.fixture
def tls_server(tmp_path: Any) -> Iterator[tuple[Server, str]]:
    """The scripted server behind TLS with a fresh self-signed certificate for 127.0.0.1."""
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    s = Server()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    s.httpd.socket = ctx.wrap_socket(s.httpd.socket, server_side=True)
    s.url = s.url.replace("http://", "https://")
    s.script.append(Answer())
    yield s, str(cert)
    s.close()


def test_https_is_verified_as_httpx_does_and_plain_http_needs_no_ca_bundle(
        tls_server: tuple[Server, str], server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default transport is made per scheme on first use: ``https://`` refuses a
    certificate nobody vouches for and accepts it once ``SSL_CERT_FILE`` names it (httpx's own
    default, environment honoured); ``http://`` works beside it on the same HttpTransport."""
    tls, cert = tls_server
    with pytest.raises(ProviderConnectionError, match=r"CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
        call(tls.url, retries=0)
    monkeypatch.setenv("SSL_CERT_FILE", cert)
    server.script.append(Answer())
    with HttpTransport(max_retries=0) as t:
        for url in (tls.url, server.url):
            ex = provider.complete(resolve("generic", url, "m"), [Message.user("hi")], api_key=CANARY, transport=t)
            assert ex.response.message.text == "hi"
    assert len(tls.seen) == 1 and len(server.seen) == 1


def test_each_thread_reuses_its_own_connection_and_close_closes_them_all(server: Server) -> None:
    """The pools are per thread: concurrent threads never wait on one pool's lock or check each
    other's connections, and a thread's successive requests reuse the one connection it opened
    (the server sees one client port per thread). ``close`` closes every thread's pool."""
    server.script.append(Answer())
    resolved = resolve("generic", server.url, "m")
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def sender(t: HttpTransport, name: str) -> None:
        try:
            start.wait(5)
            for _ in range(3):
                provider.complete(resolved, [Message.user(name)], api_key=CANARY, transport=t)
        except BaseException as e:  # reported below, on the test's thread
            errors.append(e)

    with HttpTransport(max_retries=0) as t:
        threads = [threading.Thread(target=sender, args=(t, f"thread-{i}")) for i in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(10)
        assert not errors
        ports: dict[str, set[int]] = {}
        for seen in server.seen:
            ports.setdefault(seen["body"]["messages"][-1]["content"], set()).add(seen["peer"])
        assert sorted(ports) == [f"thread-{i}" for i in range(4)]
        assert all(len(p) == 1 for p in ports.values()), ports  # one connection per thread, reused
        assert len(set().union(*ports.values())) == 4  # and not shared between threads
        pools = list(t.client._transport._pools.values())  # type: ignore[attr-defined]
        assert len(pools) == 4
    assert not t.client._transport._pools  # type: ignore[attr-defined]
    assert all(not pool._pool.connections for pool in pools)  # every connection closed
