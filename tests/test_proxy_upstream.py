"""The proxy's own HTTP/1.1 client (``hermes.proxy.upstream``) against a raw loopback server
that answers exactly as told: keep-alive reuse, the three ways a body can end (length,
chunks, the connection's end), answers cut short, a body larger than the buffer read
slowly, a server that closes idle connections, and which requests go to ``httpx`` instead
(a proxy named by the environment)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from hermes.proxy.upstream import UpstreamError, Upstreams, needs_env_proxy

Answer = Callable[[bytes], bytes]
"""From the request's bytes, what the server writes back (then it keeps the connection open
unless the answer ends with the CLOSE marker)."""

CLOSE = b"<close>"


async def serve(answer: Answer) -> tuple[asyncio.Server, str, list[int], list[bytes]]:
    """A server on 127.0.0.1; returns it, its URL, the client ports it saw and the requests."""
    ports: list[int] = []
    requests: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        port = writer.get_extra_info("peername")[1]
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                request = head + await reader.readexactly(length)
                ports.append(port)
                requests.append(request)
                out = answer(request)
                close = out.endswith(CLOSE)
                writer.write(out.removesuffix(CLOSE))
                await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/v1/chat/completions", ports, requests


def length_answer(body: bytes = b'{"ok":true}') -> Answer:
    return lambda _: b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        len(body), body)


def test_requests_reuse_one_connection_and_arrive_as_sent() -> None:
    async def main() -> None:
        server, url, ports, requests = await serve(length_answer())
        up = Upstreams(timeout_s=5)
        for i in range(5):
            r = await up.post(url, {"authorization": "Bearer k", "x-n": str(i)}, b'{"i":%d}' % i)
            assert r.status_code == 200 and r.headers["content-type"] == "application/json"
            assert await r.aread() == b'{"ok":true}'
            await r.aclose()
        assert up.opened == 1 and len(set(ports)) == 1
        first = requests[0]
        assert first.startswith(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:")
        assert b"\r\nx-n: 0\r\n" in first and first.endswith(b'\r\n\r\n{"i":0}') and b"Content-Length: 7" in first
        await up.aclose()
        server.close()

    asyncio.run(main())


def test_a_body_ends_by_length_by_chunks_or_by_the_connection_end() -> None:
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5\r\ndata:\r\n6\r\n hello\r\n0\r\n\r\n")
    until_close = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\ndata: all of it" + CLOSE

    async def main() -> None:
        cases = ((length_answer(b"x" * 10), b"x" * 10, True), (lambda _: chunked, b"data: hello", True),
                 (lambda _: until_close, b"data: all of it", False))
        for answer, body, reused in cases:
            server, url, _, _ = await serve(answer)
            up = Upstreams(timeout_s=5)
            for _ in range(2):
                r = await up.post(url, {}, b"{}")
                assert b"".join([c async for c in r.aiter_raw()]) == body
                await r.aclose()
            assert up.opened == (1 if reused else 2)
            await up.aclose()
            server.close()

    asyncio.run(main())


@pytest.mark.parametrize("cut", [
    b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this" + CLOSE,
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n" + CLOSE,
    b"HTTP/1.1 200 OK\r\nContent-Le" + CLOSE,
    b"" + CLOSE,
])
def test_an_answer_cut_short_is_an_error_not_a_shorter_answer(cut: bytes) -> None:
    async def main() -> None:
        server, url, _, _ = await serve(lambda _: cut)
        up = Upstreams(timeout_s=5)
        with pytest.raises(UpstreamError, match="closed the connection before its answer was complete"):
            r = await up.post(url, {}, b"{}")
            await r.aread()
        await up.aclose()
        server.close()

    asyncio.run(main())


def test_a_large_body_read_slowly_arrives_whole_and_in_order() -> None:
    body = bytes(range(256)) * (3 * 4096)  # 3 MiB: three times the buffer before reading pauses

    async def main() -> None:
        server, url, _, _ = await serve(length_answer(body))
        up = Upstreams(timeout_s=5)
        r = await up.post(url, {}, b"{}")
        got = []
        async for chunk in r.aiter_raw():
            got.append(chunk)
            await asyncio.sleep(0.001)
        assert b"".join(got) == body
        await r.aclose()
        r = await up.post(url, {}, b"{}")  # the connection is reusable after it
        assert await r.aread() == body
        assert up.opened == 1
        await up.aclose()
        server.close()

    asyncio.run(main())


def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    async def main() -> None:
        server, url, ports, _ = await serve(lambda _: length_answer()(b"") + CLOSE)  # no "Connection: close"
        up = Upstreams(timeout_s=5)
        for _ in range(3):
            r = await up.post(url, {}, b"{}")
            assert await r.aread() == b'{"ok":true}'
            await r.aclose()
            await asyncio.sleep(0.05)  # the server's close arrives while the connection is idle
        assert up.opened == 3 and len(set(ports)) == 3
        await up.aclose()
        server.close()

    asyncio.run(main())


def test_nothing_answering_or_a_line_break_in_a_header_is_a_clear_error() -> None:
    async def main() -> None:
        up = Upstreams(timeout_s=0.3, connect_s=2)
        with pytest.raises(UpstreamError, match=r"cannot connect to 127\.0\.0\.1:9"):
            await up.post("http://127.0.0.1:9/v1/chat/completions", {}, b"{}")
        server, url, _, requests = await serve(lambda _: b"")  # reads, never answers
        with pytest.raises(UpstreamError, match=r"sent nothing for 0\.3 s"):
            await up.post(url, {}, b"{}")
        with pytest.raises(UpstreamError, match="line break"):
            await up.post(url, {"x-evil": "a\r\nx-injected: 1"}, b"{}")
        assert all(b"x-injected" not in r for r in requests)
        await up.aclose()
        server.close()

    asyncio.run(main())


def test_a_proxy_named_by_the_environment_sends_the_request_through_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert not needs_env_proxy("https://api.deepseek.com/chat/completions")
    monkeypatch.setenv("HTTPS_PROXY", "http://corp-proxy:3128")
    assert needs_env_proxy("https://api.deepseek.com/chat/completions")
    assert not needs_env_proxy("http://127.0.0.1:8000/v1/chat/completions")  # only https is proxied
    monkeypatch.setenv("NO_PROXY", "api.deepseek.com")
    assert not needs_env_proxy("https://api.deepseek.com/chat/completions")
    assert needs_env_proxy("https://api.moonshot.ai/v1/chat/completions")
