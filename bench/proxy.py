"""Proxy overhead: the latency ``hermes proxy`` adds to a request over calling the upstream directly.

Setup: ``python -m hermes emulate --only deepseek --any-key`` (zero latency: no delays, no faults) and
``python -m hermes proxy --upstream deepseek=...`` as two subprocesses on a temporary
HERMES_HOME; the clients are asyncio tasks with one ``httpx.AsyncClient`` in this process.

The request is a real tool-loop conversation (three questions, each a tool call, its result
and an answer, then a fourth question: 13 messages) recorded through the proxy first, then
sent again and again:

* **direct** — the body exactly as the proxy forwards it (reasoning restored, switches set),
  posted to the emulator;
* **proxied** — the body as a client that drops reasoning sends it, posted to the proxy: it
  recognises six assistant turns, restores their reasoning, forwards, relays the answer and
  records the new turn.

A one-message request (nothing to restore) measures the HTTP hop alone. At one client
direct and proxied requests alternate; at 32 they run in interleaved blocks; both non-streamed
and streamed (time to first body byte). ``added`` at a percentile is proxied minus direct at
that percentile. The proxy process's CPU time per proxied request is printed too: on a loaded
machine wall-clock differences are noisy, CPU time much less so. Target: p50 added ≤ 2 ms at 1 client.

Run: ``PYTHONPATH=. python bench/proxy.py [--requests 400] [--pin]``. Last line:
``proxy p50_added_ms_1 X.XX``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import orjson

MODEL, KEY = "deepseek-v4-pro", "sk-bench-proxy-0000"
TOOLS = [{"type": "function", "function": {"name": "list_files", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s)) - 1))]


def start(args: list[str], home: Path, marker: str, name: str) -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "HERMES_HOME": str(home)}
    out = home / f"{name}.out"
    proc = subprocess.Popen([sys.executable, "-m", "hermes", *args], env=env, stdout=out.open("wb"),
                            stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = out.read_text() if out.exists() else ""
        if marker in text:
            return proc, text.split(marker, 1)[1].split()[0]
        if proc.poll() is not None:
            sys.exit(f"{name} did not start: {text}")
        time.sleep(0.05)
    proc.kill()
    sys.exit(f"{name} did not start in 30 s")


def conversation(proxy: str) -> list[dict[str, Any]]:
    """Three questions through the proxy, the assistant messages kept the way clients keep them."""
    messages: list[dict[str, Any]] = []
    with httpx.Client(headers={"authorization": f"Bearer {KEY}"}, timeout=30) as c:
        for q in ("what is in the repository?", "which files are tests?", "and the docs?"):
            messages.append({"role": "user", "content": q})
            while True:
                r = c.post(f"{proxy}/chat/completions", json={"model": MODEL, "messages": messages, "tools": TOOLS})
                r.raise_for_status()
                msg = r.json()["choices"][0]["message"]
                kept = {k: msg[k] for k in ("role", "content", "tool_calls") if k in msg}
                messages.append(kept)
                if not kept.get("tool_calls"):
                    break
                messages.append({"role": "tool", "tool_call_id": kept["tool_calls"][0]["id"], "content": "a b c"})
    messages.append({"role": "user", "content": "summarise"})
    return messages


def messages_conversation(proxy: str) -> list[dict[str, Any]]:
    """The same three questions through the Anthropic door, content blocks kept as the client
    gets them (thinking blocks with their sealed signatures)."""
    tools = [{"name": t["function"]["name"], "input_schema": t["function"]["parameters"]} for t in TOOLS]
    messages: list[dict[str, Any]] = []
    with httpx.Client(headers={"x-api-key": KEY}, timeout=30) as c:
        for q in ("what is in the repository?", "which files are tests?", "and the docs?"):
            messages.append({"role": "user", "content": q})
            while True:
                r = c.post(f"{proxy}/v1/messages", json={"model": MODEL, "max_tokens": 1024, "messages": messages,
                                                         "tools": tools})
                r.raise_for_status()
                content = r.json()["content"]
                messages.append({"role": "assistant", "content": content})
                calls = [b for b in content if b["type"] == "tool_use"]
                if not calls:
                    break
                messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": calls[0]["id"],
                                                              "content": "a b c"}]})
    messages.append({"role": "user", "content": "summarise"})
    return messages


def responses_conversation(proxy: str) -> list[dict[str, Any]]:
    """The same three questions through the Responses door, output items kept as a ``store:
    false`` client keeps them (reasoning items with their sealed ``encrypted_content``)."""
    tools = [{"type": "function", "name": t["function"]["name"], "parameters": t["function"]["parameters"]}
             for t in TOOLS]
    items: list[dict[str, Any]] = []
    with httpx.Client(headers={"authorization": f"Bearer {KEY}"}, timeout=30) as c:
        for q in ("what is in the repository?", "which files are tests?", "and the docs?"):
            items.append({"role": "user", "content": q})
            while True:
                r = c.post(f"{proxy}/v1/responses", json={"model": MODEL, "input": items, "tools": tools,
                                                          "store": False, "include": ["reasoning.encrypted_content"]})
                r.raise_for_status()
                out = r.json()["output"]
                items += out
                calls = [o for o in out if o["type"] == "function_call"]
                if not calls:
                    break
                items.append({"type": "function_call_output", "call_id": calls[0]["call_id"], "output": "a b c"})
    items.append({"role": "user", "content": "summarise"})
    return items


async def one(client: httpx.AsyncClient, url: str, body: bytes, stream: bool) -> float:
    t0 = time.perf_counter()
    if not stream:
        r = await client.post(url, content=body)
        assert r.status_code == 200, r.text[:300]
        return time.perf_counter() - t0
    async with client.stream("POST", url, content=body) as r:
        assert r.status_code == 200
        ttfb = 0.0
        async for _ in r.aiter_raw():
            ttfb = ttfb or time.perf_counter() - t0
        return ttfb


async def run(url: str, body: bytes, n: int, clients: int, stream: bool) -> tuple[list[float], float]:
    """``n`` requests from ``clients`` concurrent clients: each latency, and the wall time of them all."""
    out: list[float] = []
    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(headers=headers, timeout=60, limits=limits) as client:
        await one(client, url, body, stream)  # warm the connection

        async def worker(k: int) -> None:
            for _ in range(k):
                out.append(await one(client, url, body, stream))

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(n // clients) for _ in range(clients)))
        return out, time.perf_counter() - t0


async def proxy_cpu(url: str, body: bytes, n: int, stream: bool, cpu: Any) -> float:
    """The proxy's CPU seconds per request for ``n`` requests of ``body`` to ``url``, one client."""
    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}
    async with httpx.AsyncClient(headers=headers, timeout=60) as client:
        await one(client, url, body, stream)
        c0 = cpu()
        for _ in range(n):
            await one(client, url, body, stream)
        return (cpu() - c0) / n


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def alternate(direct: tuple[str, bytes], proxied: tuple[str, bytes], n: int, stream: bool,
                    cpu: Any) -> dict[str, Any]:
    """One client, direct and proxied requests alternating, so machine noise lands on both alike."""
    got: dict[str, Any] = {"direct": [], "proxied": [], "cpu": 0.0}
    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}
    async with httpx.AsyncClient(headers=headers, timeout=60) as client:
        await one(client, *direct, stream)
        await one(client, *proxied, stream)
        c0 = cpu()  # the proxy idles during direct requests: all its CPU here is for proxied ones
        for _ in range(n):
            got["direct"].append(await one(client, *direct, stream))
            got["proxied"].append(await one(client, *proxied, stream))
        got["cpu"] = (cpu() - c0) / n
    return got


def measure(direct: tuple[str, bytes], proxied: tuple[str, bytes], n: int, clients: int, stream: bool,
            cpu: Any, blocks: int = 8) -> dict[str, Any]:
    if clients == 1:
        return asyncio.run(alternate(direct, proxied, n, stream, cpu))
    got: dict[str, Any] = {"direct": [], "proxied": [], "cpu": 0.0, "wall": {"direct": 0.0, "proxied": 0.0}}
    for _ in range(blocks):  # interleaved, so machine noise lands on both
        for side, target in (("direct", direct), ("proxied", proxied)):
            c0 = cpu()
            lat, wall = asyncio.run(run(*target, n // blocks, clients, stream))
            got[side] += lat
            got["wall"][side] += wall
            if side == "proxied":
                got["cpu"] += cpu() - c0
    got["cpu"] /= max(1, len(got["proxied"]))
    # requests per second proxied over direct: the ratio a user would feel as throughput
    got["throughput"] = got["wall"]["direct"] / got["wall"]["proxied"]
    return got


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=400, help="requests per mode and level")
    ap.add_argument("--pin", action="store_true", help="run the proxy with --pin (on one CPU of its own)")
    ap.add_argument("--realistic", action="store_true",
                    help="the upstream answers as a provider does (300 ms to first token, then a chunk each 20 ms, "
                         "about 50 tokens/s) and only the 32-client rows run: the throughput and p99 a user feels")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        emu, emu_url = start(["emulate", "--port", "0", "--only", "deepseek", "--any-key"], home, "deepseek ", "emulator")
        emu_url = emu_url.strip()
        px, root = start(["proxy", "--port", "0", "--upstream", f"deepseek={emu_url}", *(["--pin"] * a.pin)], home,
                         "listening on ", "proxy")
        proxy_url = root.replace("/<route>", "") + "/deepseek"
        try:
            messages = conversation(proxy_url)
            client_body = {"model": MODEL, "messages": messages, "tools": TOOLS}
            # what the proxy forwards for this body: the emulator's log has it
            httpx.post(f"{proxy_url}/chat/completions", json=client_body,
                       headers={"authorization": f"Bearer {KEY}"}).raise_for_status()
            log = httpx.get(emu_url.split("/deepseek")[0] + "/_log").json()
            forwarded = log[-1]["body"]
            assert sum(1 for m in forwarded["messages"] if m.get("reasoning_content")) == 6, "all six restored"
            rows = []
            doors: list[tuple[str, dict[str, Any]]] = []
            cpus: dict[str, tuple[float, float]] = {}
            cpu = partial(cpu_s, px.pid)
            if a.realistic:
                httpx.post(emu_url.split("/deepseek")[0] + "/_control/deepseek",
                           json={"first_token": 0.3, "delay": 0.02}).raise_for_status()
            else:
                short = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
                got = measure((f"{emu_url}/chat/completions", orjson.dumps(short)),
                              (f"{proxy_url}/chat/completions", orjson.dumps(short)), a.requests, 1, False, cpu)
                rows.append((1, "relay", got))
            for clients in ((32,) if a.realistic else (1, 32)):
                for stream in (False, True):
                    extra = {"stream": True, "stream_options": {"include_usage": True}} if stream else {}
                    d = (f"{emu_url}/chat/completions", orjson.dumps({**forwarded, **extra}))
                    p = (f"{proxy_url}/chat/completions", orjson.dumps({**client_body, **extra}))
                    n = a.requests if clients == 1 else max(a.requests, 32 * 10)
                    got = measure(d, p, n, clients, stream, cpu)
                    rows.append((clients, "ttfb" if stream else "json", got))
            # the Anthropic door against the chat door, one client: the door's own cost
            tools = [{"name": t["function"]["name"], "input_schema": t["function"]["parameters"]} for t in TOOLS]
            door_body = {"model": MODEL, "max_tokens": 1024, "messages": messages_conversation(proxy_url),
                         "tools": tools}
            for stream in (() if a.realistic else (False, True)):
                extra = {"stream": True, "stream_options": {"include_usage": True}} if stream else {}
                chat = (f"{proxy_url}/chat/completions", orjson.dumps({**client_body, **extra}))
                door = (f"{proxy_url}/v1/messages", orjson.dumps({**door_body, **({"stream": True} if stream else {})}))
                name = "messages ttfb" if stream else "messages json"
                doors.append((name, measure(chat, door, a.requests, 1, stream, cpu)))
                # the proxy's CPU per request through each door alone (the alternating run's is both)
                cpus[name] = (asyncio.run(proxy_cpu(*chat, a.requests // 2, stream, cpu)),
                              asyncio.run(proxy_cpu(*door, a.requests // 2, stream, cpu)))
            # the Responses door likewise
            rtools = [{"type": "function", "name": t["function"]["name"], "parameters": t["function"]["parameters"]}
                      for t in TOOLS]
            resp_body = {"model": MODEL, "input": responses_conversation(proxy_url), "tools": rtools, "store": False,
                         "include": ["reasoning.encrypted_content"]}
            for stream in (() if a.realistic else (False, True)):
                extra = {"stream": True, "stream_options": {"include_usage": True}} if stream else {}
                chat = (f"{proxy_url}/chat/completions", orjson.dumps({**client_body, **extra}))
                door = (f"{proxy_url}/v1/responses", orjson.dumps({**resp_body, **({"stream": True} if stream else {})}))
                name = "responses ttfb" if stream else "responses json"
                doors.append((name, measure(chat, door, a.requests, 1, stream, cpu)))
                cpus[name] = (asyncio.run(proxy_cpu(*chat, a.requests // 2, stream, cpu)),
                              asyncio.run(proxy_cpu(*door, a.requests // 2, stream, cpu)))
        finally:
            for proc in (px, emu):
                proc.terminate()
                proc.wait(timeout=10)
    print(f"{'clients':>7} {'mode':8} {'direct p50':>10} {'p99':>7} {'proxied p50':>11} {'p99':>7} "
          f"{'added p50':>9} {'p99':>7} {'proxy CPU/req':>13}  (ms)")
    figures: dict[tuple[int, str], tuple[float, float]] = {}
    for clients, mode, got in rows:
        d50, d99 = pct(got["direct"], 50) * 1e3, pct(got["direct"], 99) * 1e3
        p50, p99 = pct(got["proxied"], 50) * 1e3, pct(got["proxied"], 99) * 1e3
        figures[(clients, mode)] = (p50 - d50, p99 - d99)
        print(f"{clients:>7} {mode:8} {d50:10.2f} {d99:7.2f} {p50:11.2f} {p99:7.2f} {p50 - d50:9.2f} {p99 - d99:7.2f}"
              f" {got['cpu'] * 1e3:13.2f}")
    print("(relay: a one-message request, nothing to restore — the HTTP hop alone; proxy CPU/req: CPU time\n"
          " the proxy process spent per proxied request, the part of the added latency load cannot inflate)")
    for clients, mode, got in rows:
        if "throughput" in got:
            print(f"throughput proxied / direct, {clients} clients, {mode}: {got['throughput']:.3f}")
    if doors:
        print(f"{'door':14} {'chat p50':>8} {'door p50':>8} {'added p50':>9} {'chat CPU':>8} {'door CPU':>8} "
          f"{'added CPU':>9}  (ms per request, one client; the door vs the chat door, alternating)")
    for name, got in doors:
        c50, d50 = pct(got["direct"], 50) * 1e3, pct(got["proxied"], 50) * 1e3
        chat_cpu, door_cpu = (x * 1e3 for x in cpus[name])
        figures[(1, name)] = (d50 - c50, door_cpu - chat_cpu)
        print(f"{name:14} {c50:8.2f} {d50:8.2f} {d50 - c50:9.2f} {chat_cpu:8.2f} {door_cpu:8.2f} "
              f"{door_cpu - chat_cpu:9.2f}")
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    if a.realistic:
        thr = next(got["throughput"] for clients, mode, got in rows if mode == "json")
        print(f"proxy realistic_throughput_ratio_32 {thr:.3f}")
        print(f"proxy realistic_p99_added_ms_32 {figures[(32, 'json')][1]:.2f}")
        return
    print(f"proxy p99_added_ms_32 {figures[(32, 'json')][1]:.2f}")
    print(f"proxy stream_ttfb_added_ms_1 {figures[(1, 'ttfb')][0]:.2f}")
    print(f"proxy messages_door_added_ms_1 {figures[(1, 'messages json')][0]:.2f}")
    print(f"proxy messages_door_added_cpu_ms {figures[(1, 'messages json')][1]:.2f}")
    print(f"proxy responses_door_added_ms_1 {figures[(1, 'responses json')][0]:.2f}")
    print(f"proxy responses_door_added_cpu_ms {figures[(1, 'responses json')][1]:.2f}")
    print(f"proxy p50_added_ms_1 {figures[(1, 'json')][0]:.2f}")


if __name__ == "__main__":
    main()
