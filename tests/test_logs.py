"""The request log's summary of a plan: what each carrier field carried, counted exactly."""

from __future__ import annotations

import hashlib

import orjson

from hermes.core.messages import Message, Reasoning, RouteKey, Text, ToolCall, ToolResult
from hermes.replay import plan_replay
from hermes.routing.resolve import resolve
from hermes.store.requestlog import plan_summary

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


def test_the_log_file_rotates_by_its_size_on_disk_and_keeps_three_old_files(tmp_path) -> None:
    """Lines appended whole, rotated before a line would take the file past its size — the
    file's own, whatever wrote it (another process of one gateway): ``hermes.log`` → ``.1`` →
    ``.2`` → ``.3``, the oldest dropped; every file is readable by its owner only."""
    from hermes.store.requestlog import _append

    path = tmp_path / "hermes.log"
    path.write_bytes(b"")
    path.chmod(0o644)  # made by an older Hermes with a wider umask
    lines = [orjson.dumps({"n": i, "pad": "x" * 80}).decode() for i in range(60)]  # ~95 bytes each
    for line in lines:
        _append(path, line, max_bytes=1000)
    kept = [path.with_name(f"hermes.log.{k}") for k in (3, 2, 1)] + [path]
    assert all(p.exists() for p in kept) and not path.with_name("hermes.log.4").exists()
    got = [orjson.loads(ln)["n"] for p in kept for ln in p.read_bytes().splitlines()]  # whole lines
    assert got == list(range(60))[-len(got):] and 20 < len(got) < 60  # in order, only the oldest gone
    assert all(900 < p.stat().st_size <= 1000 for p in kept[:-1])  # rotated at the shared size
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in kept)
