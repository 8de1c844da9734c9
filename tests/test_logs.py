"""The request log's summary of a plan: what each carrier field carried, counted exactly."""

from __future__ import annotations

import hashlib

import orjson

from hermes.logs import plan_summary
from hermes.messages import Message, Reasoning, RouteKey, Text, ToolCall, ToolResult
from hermes.replay import plan_replay
from hermes.resolve import resolve

DS = RouteKey("deepseek", "api.deepseek.com", "deepseek-v4", "openai_chat")


def short(s: str) -> str:
    return hashlib.sha256(s.encode()).hexdigest()[:10]


def test_carried_fields_pads_and_drops_are_counted_per_message() -> None:
    history: list[Message] = []
    for i in range(10):
        history += [Message.user(f"q{i}"),
                    Message("assistant", (Reasoning(f"think {i}", DS), ToolCall(f"c{i}", "f", "{}"))),
                    Message("tool", (ToolResult(f"c{i}", "r"),)),
                    Message("assistant", (ToolCall(f"d{i}", "f", "{}"),)),  # no reasoning: must-echo pads it
                    Message("tool", (ToolResult(f"d{i}", "r"),)),
                    Message("assistant", (Text(f"a{i}"),))]  # the loop's answer: padded too
    rec = plan_summary(plan_replay(history, resolve("deepseek", None, "deepseek-v4")))
    assert rec["fields"]["reasoning_content"]["messages"] == 10 + 20  # ten carried, twenty placeholders
    assert rec["fields"]["reasoning_content"]["chars"] == sum(len(f"think {i}") for i in range(10)) + 20
    assert rec["pads"] == 20 and "dropped_parts" not in rec["fields"]
    assert rec["turns"] == [r for i in range(10) for r in ([6 * i + 1, 6 * i + 1, 0], [6 * i + 3, 6 * i + 5, 1])]
    strict = plan_summary(plan_replay(history, resolve("mistral", None, "mistral-medium-latest")))
    assert strict["fields"] == {"dropped_parts": {"messages": 10, "chars": 0, "hashes": []}}


def test_opaque_fields_keep_the_first_eight_hashes_never_the_value() -> None:
    origin = resolve("openrouter", None, "anthropic/claude-sonnet-4.5").key
    blobs = [orjson.dumps([{"type": "reasoning.text", "text": f"t{i}", "signature": f"sig{i}" * 20,
                            "format": "anthropic-claude-v1", "index": 0}]).decode() for i in range(12)]
    history = [m for i in range(12) for m in (
        Message.user(f"q{i}"),
        Message("assistant", (Reasoning(f"t{i}", origin, blobs[i], "openrouter.details"), Text(f"a{i}"))))]
    rec = plan_summary(plan_replay(history, resolve("openrouter", None, "anthropic/claude-sonnet-4.5")))
    details = rec["fields"]["reasoning_details"]
    assert details["messages"] == 12 and len(details["hashes"]) == 8
    assert details["hashes"][0] in {short(blobs[0]), short(orjson.dumps(orjson.loads(blobs[0])).decode())}
    assert "sig0" not in orjson.dumps(rec).decode()
