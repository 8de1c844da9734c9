"""Request build: plan + render + serialise a 2,000-turn history (tool turns, 2 KB reasoning,
4 KB blobs) for three routes, against orjson.dumps of the same final body, in the same run.

Two figures per route:
* cold — a fresh process's first build (e.g. ``--resume``): every message planned and rendered;
* step — the agent's rebuild after one more tool step, with the conversation's BuildMemo:
  only the new messages are planned and rendered, the rest is reused.

    python bench/replay_build.py      # prints `replay_build ratio X.XX` (step, worst route; target ≤ 1.5×)
    python bench/replay_build.py --instructions   # + cold build vs orjson.dumps in instructions (callgrind)
"""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _instr
from _timing import best_of

from hermes.messages import Message, Reasoning, Text, ToolCall, ToolResult
from hermes.provider import build_body, get_wire
from hermes.replay import BuildMemo, Settings, plan_replay
from hermes.resolve import Resolved, resolve

ROUTES = [("openrouter", "anthropic/claude-sonnet-4.5"), ("deepseek", "deepseek-v4"), ("anthropic", "claude-opus-5")]
SETTINGS = Settings()


def turn(target: Resolved, i: int) -> list[Message]:
    o = target.key
    kind = {"openrouter": "openrouter.details", "anthropic": "anthropic.signature"}.get(target.route.key)
    text = f"step {i}: I should look at the files before answering. " * 36  # ~2 KB
    blob = None
    if kind == "openrouter.details":
        sig = base64.b64encode(os.urandom(3000)).decode()
        blob = orjson.dumps([{"type": "reasoning.text", "text": text, "signature": sig, "index": 0}]).decode()
    elif kind:
        blob = base64.b64encode(os.urandom(3000)).decode()  # 4 KB
    return [Message.user(f"question {i}"),
            Message("assistant", (Reasoning(text, o, blob, kind if blob else None),
                                  ToolCall(f"c{i}", "read_file", '{"path":"a.py"}'))),
            Message("tool", (ToolResult(f"c{i}", "contents of a.py"),)),
            Message("assistant", (Text(f"answer {i}"),))]


def build(target: Resolved, history: list[Message], cache: BuildMemo | None) -> bytes:
    wire = get_wire(target.route.wire)
    plan = plan_replay(history, target, settings=SETTINGS, cache=cache)
    return orjson.dumps(build_body(wire, plan, tools=(), settings=SETTINGS, stream=False, memo=cache))


def measure(key: str, model: str) -> tuple[float, float]:
    target = resolve(key, None, model)
    history = [m for i in range(2000) for m in turn(target, i)]
    body = orjson.loads(build(target, history, None))
    baseline = best_of(lambda: orjson.dumps(body), runs=7)
    cold = best_of(lambda: build(target, history, None), runs=3)
    cache = BuildMemo()
    build(target, history, cache)
    grown = list(history)

    def step() -> None:
        grown.extend(turn(target, len(grown)))  # the next tool step's messages
        build(target, grown, cache)

    warm = best_of(step, runs=7)
    print(f"replay_build[{key}]: orjson {baseline * 1e3:.1f} ms · cold build {cold * 1e3:.1f} ms "
          f"({cold / baseline:.1f}×) · next-step build {warm * 1e3:.1f} ms ({warm / baseline:.2f}×)")
    return cold / baseline, warm / baseline


def count_worker(route: int, what: str) -> None:
    """Under callgrind (see ``_instr.count_region``): one cold build or one ``orjson.dumps``."""
    key, model = ROUTES[route]
    target = resolve(key, None, model)
    history = [m for i in range(2000) for m in turn(target, i)]
    if what == "cold":
        _instr.region(lambda: build(target, history, None))
    elif what == "step":  # the next tool step's rebuild with the conversation's warm cache
        cache = BuildMemo()
        build(target, history, cache)
        grown = [*history, *turn(target, len(history))]
        _instr.region(lambda: build(target, grown, cache))
    else:
        body = orjson.loads(build(target, history, None))
        _instr.region(lambda: orjson.dumps(body))


def instructions() -> None:
    ratios, steps = [], []
    for i, (key, _) in enumerate(ROUTES):
        argv = [_instr.python(), __file__, "--count", str(i)]
        cold, step, base = (_instr.count_region([*argv, w]) for w in ("cold", "step", "dumps"))
        if cold and step and base:
            print(f"replay_build[{key}]: instructions cold build {cold / 1e6:.0f} M, next-step build "
                  f"{step / 1e6:.1f} M, orjson.dumps {base / 1e6:.1f} M ({cold / base:.1f}×, {step / base:.2f}×)")
            ratios.append(cold / base)
            steps.append(step / base)
    if ratios:
        print(f"replay_build instr_ratio {max(ratios):.2f}  (cold build, worst route)")
        print(f"replay_build step_instr_ratio {max(steps):.2f}  (next-step build, worst route)")


def main() -> None:
    if sys.argv[1:2] == ["--count"]:
        count_worker(int(sys.argv[2]), sys.argv[3])
        return
    results = [measure(key, model) for key, model in ROUTES]
    print(f"replay_build cold_ratio {max(c for c, _ in results):.2f}  (first build in a fresh process)")
    if "--instructions" in sys.argv and _instr.available():
        instructions()
    print(f"replay_build ratio {max(w for _, w in results):.2f}  (next-step build, worst route; target ≤ 1.5×)")


if __name__ == "__main__":
    main()
