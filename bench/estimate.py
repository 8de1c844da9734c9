"""Bench: estimate a 2,000-turn history vs one bpe_openai encode of the same text.

    python bench/estimate.py [--turns 2000]

Prints the time of a cold estimate (tokenizer cache cleared) on an OpenAI route (real BPE per
part) and on a ratio route (calibrated text model), a warm re-estimate (what the preflight pays
on every request of a long session), and one encode of all readable text concatenated.
The last line is ``estimate ratio X.XX``: cold OpenAI-route estimate time / one encode.
"""

from __future__ import annotations

import argparse
import base64
import random
import time

import bpe_openai

from hermes.builder import estimate as est
from hermes.core.messages import Message, Reasoning, Text, ToolCall, ToolResult
from hermes.routing.resolve import resolve


def history(turns: int) -> tuple[list[Message], str]:
    rng = random.Random(3)
    openai = resolve("openai-responses", None, "gpt-5").key
    out: list[Message] = []
    for i in range(turns):
        q = f"Turn {i}: please look at src/module_{i % 97}.py and explain what parse_{i % 13}() does with its input."
        think = (f"The user wants to know about parse_{i % 13}. I should read the file first, then look for "
                 f"callers; line {i * 7 % 400} looked suspicious last time. ") * 3
        blob = "gAAAAA" + base64.urlsafe_b64encode(rng.randbytes(1200)).decode()
        result = "\n".join(f"{n:4d}    value_{n} = compute(x_{n}, y={n * i % 17})  # step {n}" for n in range(40))
        answer = f"parse_{i % 13}() reads the header, validates {i % 5} fields and returns a dict of values."
        out += [Message.user(q),
                Message("assistant", (Reasoning(think, openai, blob, "openai.encrypted", f"rs_{i}"),
                                      ToolCall(f"call_{i}", "read_file", f'{{"path": "src/module_{i % 97}.py"}}'))),
                Message("tool", (ToolResult(f"call_{i}", result, "read_file"),)),
                Message("assistant", (Text(answer),))]
    text = "\n".join(p.text if isinstance(p, Text | Reasoning) else p.arguments if isinstance(p, ToolCall)
                     else p.content if isinstance(p, ToolResult) else "" for m in out for p in m.parts)
    return out, text


def timed(fn: object) -> tuple[float, int]:
    t = time.perf_counter()
    n = fn()  # type: ignore[operator]
    return time.perf_counter() - t, n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=2000)
    turns = ap.parse_args().turns
    h, text = history(turns)
    enc = bpe_openai.get_encoding("o200k_base")
    enc.encode_ordinary("warm up")
    openai = resolve("openai-responses", None, "gpt-5")
    ratio_route = resolve("gemini", None, "gemini-2.5-pro")

    def encode_once() -> int:
        return sum(len(enc.encode_ordinary(text[i:i + 40_000])) for i in range(0, len(text), 40_000))

    t_enc, n_enc = timed(encode_once)
    est.count_text.cache_clear()
    t_cold, n_cold = timed(lambda: est.estimate_history(h, openai))
    t_warm, _ = timed(lambda: est.estimate_history(h, openai))
    est.count_text.cache_clear()
    t_ratio, n_ratio = timed(lambda: est.estimate_history(h, ratio_route))
    print(f"history: {turns} turns, {len(h)} messages, {len(text):,} readable chars")
    print(f"one o200k encode of the readable text: {t_enc * 1000:.0f} ms, {n_enc:,} tokens")
    print(f"estimate, OpenAI route (bpe per part), cold: {t_cold * 1000:.0f} ms, {n_cold:,} tokens "
          f"(blobs and overheads included)")
    print(f"estimate, OpenAI route, warm (cached parts): {t_warm * 1000:.0f} ms")
    print(f"estimate, ratio route (text model), cold: {t_ratio * 1000:.0f} ms, {n_ratio:,} tokens")
    print(f"estimate ratio {t_cold / t_enc:.2f}")


if __name__ == "__main__":
    main()
