"""The proxy's upstream lanes over real loopback HTTP: a request takes the lane that went idle
last and gives it back when its response is closed, so a lone client's requests keep using
one lane and one connection however many were in flight before; a failed request or an
abandoned stream does not lose its lane; closing closes every lane's connections."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from hermes.proxy.lanes import Lanes


class Upstream:
    """Answers every POST with 200 after ``hold`` is set, noting each request's client port."""

    def __init__(self) -> None:
        self.ports: list[int] = []
        self.hold = threading.Event()
        self.hold.set()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                outer.ports.append(self.client_address[1])
                outer.hold.wait(5)
                body = b"x" * 50_000  # more than one read: a stream can be abandoned half-read
                self.send_response(200)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1/chat/completions"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    u = Upstream()
    yield u
    u.httpd.shutdown()
    u.httpd.server_close()


def test_lanes_follow_the_requests_in_flight(upstream: Upstream) -> None:
    lanes = Lanes(httpx.Limits(max_keepalive_connections=4))

    async def main() -> None:
        async with httpx.AsyncClient(transport=lanes) as client:
            # 6 at once: six lanes, each with its own connection
            upstream.hold.clear()
            sends = [asyncio.create_task(client.post(upstream.url, content=b"{}")) for _ in range(6)]
            while len(upstream.ports) < 6:
                await asyncio.sleep(0.01)
            upstream.hold.set()
            assert all(r.status_code == 200 for r in await asyncio.gather(*sends))
            assert lanes.made == 6 and len(lanes.idle) == 6 and len(set(upstream.ports)) == 6
            last = lanes.idle[-1]

            # one at a time: the lane that went idle last, and the connection it holds
            upstream.ports.clear()
            for _ in range(5):
                assert (await client.post(upstream.url, content=b"{}")).status_code == 200
                assert lanes.idle[-1] is last
            assert lanes.made == 6 and len(set(upstream.ports)) == 1

            # a stream abandoned half-read still gives its lane back when closed
            async with client.stream("POST", upstream.url, content=b"{}") as r:
                async for _ in r.aiter_raw(1024):
                    break
                assert len(lanes.idle) == 5
            assert len(lanes.idle) == 6

            # a request that fails gives its lane back too
            with pytest.raises(httpx.ConnectError):
                await client.post("http://127.0.0.1:9/", content=b"{}")
            assert len(lanes.idle) == 6 and lanes.made == 6
            made = list(lanes.idle)
            assert any(lane._pool.connections for lane in made)

        # the client closed its transport: every lane's connections are closed
        assert not lanes.idle and all(not lane._pool.connections for lane in made)

    asyncio.run(main())
