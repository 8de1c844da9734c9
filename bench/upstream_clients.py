"""The proxy's upstream client, httpx vs aiohttp side by side: CPU per request at 32 requests in flight.

Setup: the deepseek emulator in this process, answering as a provider does (300 ms to first
token); the clients run in the main thread, so ``RUSAGE_THREAD`` counts the client alone, not the
emulator. Each client makes the same requests the proxy makes: POST, body read to its end,
connection back to the pool; 32 at once, in rounds. Both are configured as ``hermes proxy``
would be (keep-alive pool, no connection limit). Several rounds alternate the two, so machine
load lands on both alike.

Why: the proxy holds one request per client in flight, and a pool's per-request cost can grow
with the connections it holds. Run: ``PYTHONPATH=. python bench/upstream_clients.py [--requests 640]``.
Last lines: ``upstream_clients <client>_cpu_ms_per_request X.XXX``.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
from collections.abc import Awaitable, Callable

import aiohttp
import httpx
import orjson

from hermes.emulate import Emulator

BODY = orjson.dumps({"model": "deepseek-v4-pro", "messages": [{"role": "user", "content": "hi"}]})
HEADERS = {"authorization": "Bearer sk-bench-0000", "content-type": "application/json"}
CONCURRENT = 32


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_THREAD)
    return r.ru_utime + r.ru_stime


async def rounds(one: Callable[[], Awaitable[None]], n: int) -> float:
    """CPU ms per request over ``n`` requests, 32 at a time (one warm-up round first)."""
    await asyncio.gather(*(one() for _ in range(CONCURRENT)))
    t = cpu()
    for _ in range(n // CONCURRENT):
        await asyncio.gather(*(one() for _ in range(CONCURRENT)))
    return (cpu() - t) / n * 1e3


async def with_httpx(url: str, n: int) -> float:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=64, keepalive_expiry=4.0)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        async def one() -> None:
            r = await client.send(client.build_request("POST", url, content=BODY, headers=HEADERS), stream=True)
            async for _ in r.aiter_raw():
                pass
            await r.aclose()

        return await rounds(one, n)


async def with_aiohttp(url: str, n: int) -> float:
    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=4.0)
    async with aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar()) as session:
        async def one() -> None:
            async with session.post(url, data=BODY, headers=HEADERS) as r:
                async for _ in r.content.iter_any():
                    pass

        return await rounds(one, n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=640, help="requests per client and round")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    got: dict[str, list[float]] = {"httpx": [], "aiohttp": []}
    with Emulator(["deepseek"]) as emu:
        emu.state.set_control("deepseek", first_token=0.3)
        url = emu.url("deepseek") + "/chat/completions"
        for _ in range(a.rounds):
            got["httpx"].append(asyncio.run(with_httpx(url, a.requests)))
            got["aiohttp"].append(asyncio.run(with_aiohttp(url, a.requests)))
    for name, values in got.items():
        print(f"{name:8} CPU per request (ms), each round: {' '.join(f'{v:.3f}' for v in values)}")
    h, ai = statistics.median(got["httpx"]), statistics.median(got["aiohttp"])
    print(f"upstream_clients ratio_httpx_over_aiohttp {h / ai:.1f}")
    print(f"upstream_clients httpx_cpu_ms_per_request {h:.3f}")
    print(f"upstream_clients aiohttp_cpu_ms_per_request {ai:.3f}")


if __name__ == "__main__":
    main()
