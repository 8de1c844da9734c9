"""How much the chat stream path costs over just parsing the JSON of every SSE line.

100k reasoning / text / tool-call deltas as an SSE body, arriving in 16 KiB text chunks as
from the network. (a) baseline: split the body into lines and ``orjson.loads`` every data
line; (b) ours: ``provider.sse_batches`` → ``ChatDecoder.decode_events`` (one call per network
read) → ``Accumulator`` fold into the stored turn. Prints both timings and the ratio (target ≤ 2×).

Run: ``python bench/stream_fold.py [N] [--instructions]`` (the latter also counts both sides'
instructions under callgrind on 10k deltas: stable on a loaded machine).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parent))
import _instr

from hermes.agent.provider import sse_batches
from hermes.core.messages import RouteKey
from hermes.core.stream import Accumulator
from hermes.wire.openai_chat import ChatDecoder

__all__ = ["main", "make_stream"]

ORIGIN = RouteKey("openrouter", "openrouter.ai", "anthropic/claude-sonnet-4.5", "openai_chat")


def make_stream(n: int) -> str:
    """An SSE body of ``n`` deltas: 70% reasoning, 20% text, 10% tool-call argument fragments."""
    out = [": OPENROUTER PROCESSING\n\n"]
    head = '{"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":'
    tail = ',"finish_reason":null}]}'
    calls = 0
    for i in range(n):
        r = i % 10
        if r < 7:
            delta = {"reasoning": f"thought {i} ", "reasoning_details": [
                {"type": "reasoning.text", "text": f"thought {i} ", "format": "anthropic-claude-v1", "index": 0}]}
        elif r < 9:
            delta = {"content": f"word{i} "}
        else:
            if calls % 50 == 0:
                delta = {"tool_calls": [{"index": calls // 50, "id": f"call_{calls // 50}", "type": "function",
                                         "function": {"name": "ls", "arguments": ""}}]}
            else:
                delta = {"tool_calls": [{"index": calls // 50, "function": {"arguments": f'"a{i}",'}}]}
            calls += 1
        out.append(f"data: {head}{orjson.dumps(delta).decode()}{tail}\n\n")
    out.append('data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n')
    out.append('data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":100000}}\n\n')
    out.append("data: [DONE]\n\n")
    return "".join(out)


CHUNK = 16 * 1024


def chunked(body: str) -> list[str]:
    return [body[i:i + CHUNK] for i in range(0, len(body), CHUNK)]


def baseline(chunks: list[str]) -> int:
    n = 0
    for line in "".join(chunks).split("\n"):
        if line.startswith("data: ") and line != "data: [DONE]":
            orjson.loads(line[6:])
            n += 1
    return n


def ours(chunks: list[str]) -> int:
    dec, acc = ChatDecoder(), Accumulator(ORIGIN)
    feed_all, decode = acc.feed_all, dec.decode_events
    for batch in sse_batches(chunks):
        feed_all(decode(batch))
    return len(acc.result().message.parts)


def best_of(fn: Callable[[list[str]], int], chunks: list[str], runs: int = 7) -> float:
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        fn(chunks)
        best = min(best, time.perf_counter() - t)
    return best


def main(n: int = 100_000) -> float:
    chunks = chunked(make_stream(n))
    a = best_of(baseline, chunks)
    b = best_of(ours, chunks)
    print(f"deltas            {n}")
    print(f"baseline (split + orjson.loads)        {a * 1000:8.1f} ms  ({a / n * 1e6:.2f} µs/delta)")
    print(f"ours (sse_batches + decode + fold)   {b * 1000:8.1f} ms  ({b / n * 1e6:.2f} µs/delta)")
    print(f"stream_fold ratio {b / a:.2f}")
    return b / a


def instructions(n: int = 10_000) -> None:
    argv = [_instr.python(), __file__, "--count", str(n)]
    a, b = (_instr.count_region([*argv, w]) for w in ("baseline", "ours"))
    if a and b:
        print(f"instructions ({n} deltas): baseline {a / 1e6:.0f} M, ours {b / 1e6:.0f} M")
        print(f"stream_fold instr_ratio {b / a:.2f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--count"]:  # under callgrind: one side, counted
        body = chunked(make_stream(int(sys.argv[2])))
        fn = baseline if sys.argv[3] == "baseline" else ours
        _instr.region(lambda: fn(body))
        sys.exit()
    args = [a for a in sys.argv[1:] if a != "--instructions"]
    if "--instructions" in sys.argv and _instr.available():
        instructions()
    main(int(args[0]) if args else 100_000)
