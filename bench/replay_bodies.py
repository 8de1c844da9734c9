"""Render a large matrix of request bodies to a directory, to prove a refactor changes no byte.

Every route of the table × one model per profile row (plus each route's own sample model) ×
effort × thinking on/off × learned lessons × stream flag × several histories (tool turns, every
blob kind and native record, own and foreign origins, compactions, system prompts, reasoning-only
and back-to-back assistant turns, ids some routes refuse). Each body is built three ways — fresh,
warm (a ``Builder`` grown message by message, as the agent does) and through the per-route
wire — and written as one line per case into ``DIR/<route>.jsonl``:

    python bench/replay_bodies.py DIR          # then, after a change: ... DIR2 && diff -r DIR DIR2

A warm body that differs from the fresh one is reported and the script exits 1.
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

import orjson

from hermes.agent.provider import build_body
from hermes.builder import Builder
from hermes.core.messages import (
    Compaction,
    Message,
    NativeRecord,
    Reasoning,
    RouteKey,
    Text,
    ToolCall,
    ToolResult,
)
from hermes.replay import Learned, Settings, plan_replay
from hermes.routing.models import PROFILES
from hermes.routing.resolve import Resolved, resolve
from hermes.routing.routes import ROUTES
from hermes.wire import ToolSpec, get_wire

EFFORTS: tuple[str | None, ...] = (None, "minimal", "low", "medium", "high", "max")
TOOLS = (ToolSpec("read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}),)
LESSONS = (Learned(), Learned(dropped=frozenset({"reasoning", "reasoning_details"})), Learned(echo=True),
           Learned(dropped=frozenset({"reasoning_content"}), suppressed=frozenset()))


def models() -> list[str]:
    """One model id per profile row (its first glob made concrete) and a few plain ids."""
    out = ["m-1", "anthropic.claude-sonnet-4-5-v1:0", "us.anthropic.claude-opus-4-6-v1:0", "deepseek.r1-v1:0",
           "amazon.nova-2-lite-v1:0", "openai.gpt-oss-120b-1:0", "gemini-3-pro-preview", "claude-opus-5"]
    for row in PROFILES:
        g = row.models[0].replace("[-.]", "-").replace("[0-5]", "5").replace("[6-9]", "6")
        g = g.replace("[1-9][0-9]", "10").replace("[1-9]", "1").replace("[a-z]", "sonnet").replace("[0-9]", "0")
        out.append(g.replace("*", "x").lstrip("x").lstrip(".") or "m")
    return list(dict.fromkeys(out))


def target(key: str, model: str) -> Resolved:
    row = next(r for r in ROUTES if r.key == key)
    return resolve(key, None if row.base_url else "http://127.0.0.1:9/v1", model)


def _blob(kind: str, n: int) -> str:
    if kind == "openrouter.details":
        return orjson.dumps([{"type": "reasoning.text", "text": f"t{n}", "signature": f"s{n}", "index": 0},
                             {"type": "reasoning.encrypted", "data": f"e{n}", "index": 0}]).decode()
    return base64.b64encode(f"{kind}-{n}".encode() * 3).decode()


def reasoning_parts(origin: RouteKey, n: int, call: str) -> list[Reasoning]:
    kinds = ["anthropic.signature", "anthropic.redacted", "openai.encrypted", "openrouter.details"]
    out = [Reasoning(f"thinking {n} about {kind}", origin, _blob(kind, n), kind, f"rs_{n}_{i}")
           for i, kind in enumerate(kinds)]
    out.append(Reasoning(f"plain thinking {n}", origin))
    out.append(Reasoning("  ", origin))
    out.append(Reasoning("", origin, native=NativeRecord(thought_signature=f"ts{n}", tool_signatures=((call, f"cs{n}"),),
                                                         reasoning_opaque=f"op{n}", reasoning_text=f"rt{n}")))
    out.append(Reasoning("", origin, native=NativeRecord(thought_signature=f"ts{n}b",
                                                         tool_signatures=((call, f"cs{n}b"),))))
    return out


def histories(t: Resolved) -> dict[str, list[Message]]:
    own = t.key
    foreign = RouteKey("other", "other.example", "other-model", "openai_chat")
    out: dict[str, list[Message]] = {}
    # one kind of carrier per assistant turn, own origin, closed loops then an open one
    h: list[Message] = [Message.system("be brief")]
    for n, r in enumerate(reasoning_parts(own, 0, "c0")):
        call = f"call_{n}.x"
        h += [Message.user(f"q{n}"), Message("assistant", (r, Text(f"looking {n}"), ToolCall(call, "read_file", '{"path":"a"}'))),
              Message("tool", (ToolResult(call, f"contents {n}"),)), Message("assistant", (r, Text(f"answer {n}")))]
    h += [Message.user("last"), Message("assistant", (*reasoning_parts(own, 9, "open_1"),
                                                      ToolCall("open_1", "read_file", '{"path":"b"}'))),
          Message("tool", (ToolResult("open_1", "b contents", is_error=True),))]
    out["own"] = h
    # foreign origins everywhere, a foreign open loop (signed wires turn thinking off)
    f: list[Message] = [Message.user("q")]
    for n, r in enumerate(reasoning_parts(foreign, 1, "fc")):
        f += [Message("assistant", (r, ToolCall(f"fc{n}", "read_file", "{}"))),
              Message("tool", (ToolResult(f"fc{n}", "ok"),))]
    out["foreign"] = f
    # structure: compaction, empty texts, reasoning-only and back-to-back turns, user runs
    s: list[Message] = [Message.user("old"), Message("assistant", (Text("old answer"),)),
                        Message("user", (Compaction("we talked", 2),)), Message.system("sys"), Message.user("a"),
                        Message.user("b"), Message("assistant", (reasoning_parts(own, 2, "x")[0],)),
                        Message("assistant", (Text(""),)), Message("assistant", (Text("one"),)),
                        Message("assistant", (reasoning_parts(own, 3, "s1")[4], Text(" "),
                                              ToolCall("s1", "read_file", "[1]" if t.route.wire == "bedrock" else "{}"))),
                        Message("tool", (ToolResult("s1", ""),)), Message.user("after tools"),
                        Message("assistant", (reasoning_parts(own, 4, "y")[1], Text("done")))]
    out["structure"] = s
    return out


def _default(o: Any) -> Any:
    if isinstance(o, bytes):
        return {"$bytes": base64.b64encode(o).decode()}
    raise TypeError(type(o))


def render(t: Resolved, history: list[Message], learned: Learned, settings: Settings, stream: bool,
           builder: Builder | None = None) -> bytes:
    wire = get_wire(t.route.wire)
    try:
        if builder is None:
            body = build_body(wire, plan_replay(history, t, learned, settings), tools=TOOLS, settings=settings,
                              stream=stream)
        else:
            body = builder.body(builder.plan(history, t, learned, settings), tools=TOOLS, settings=settings,
                                stream=stream)
    except Exception as e:  # an error is a result too: it must not change either
        return f"ERROR {type(e).__name__}: {e}".encode()
    return orjson.dumps(body, default=_default, option=orjson.OPT_PASSTHROUGH_DATACLASS)


def warm(t: Resolved, history: list[Message], learned: Learned, settings: Settings) -> bytes:
    """The body built as the agent builds it: one cache, the history growing a message at a time."""
    builder = Builder()
    for k in range(1, len(history)):
        render(t, history[:k], learned, settings, False, builder)
    return render(t, history, learned, settings, False, builder)


def main(out_dir: str) -> int:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    bad = total = 0
    for row in ROUTES:
        lines: list[bytes] = []
        for model in models():
            t = target(row.key, model)
            for hname, history in histories(t).items():
                cases = [(Learned(), Settings(thinking, effort), False) for thinking in (True, False) for effort in EFFORTS]
                cases += [(lesson, Settings(), stream) for lesson in LESSONS for stream in (False, True)]
                for learned, settings, stream in cases:
                    fresh = render(t, history, learned, settings, stream)
                    total += 1
                    if settings.effort is None and not stream and warm(t, history, learned, settings) != fresh:
                        bad += 1
                        print(f"warm != fresh: {row.key} {model} {hname} {learned} {settings} {stream}", file=sys.stderr)
                    head = f"{model}|{hname}|{sorted(learned.dropped)}|{learned.echo}|{settings.thinking}|{settings.effort}|{stream}"
                    lines.append(head.encode() + b"\t" + fresh)
        (out / f"{row.key}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    print(f"replay_bodies: {total} bodies written to {out}, warm != fresh: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:2] and sys.argv[1].startswith("-"):  # an option is not a folder to write into
        print(__doc__)
        sys.exit(0 if sys.argv[1] in ("-h", "--help") else 2)
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/replay-bodies"))
