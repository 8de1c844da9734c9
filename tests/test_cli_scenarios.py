"""The CLI as a user runs it, in fresh processes, against the emulators over loopback.

For each route: turn 1 calls a tool; `--resume` in a new process sends turn 2, whose request
must carry turn 1's reasoning exactly as the route takes it (checked against what state.db
stored); `sessions branch` and a turn on the branch carry it the same way. Streaming and not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest
from _cli import CANARY, cli

from hermes.core.messages import Message, Reasoning
from hermes.store import Store


def reasoning_of(m: Message) -> list[Reasoning]:
    return [p for p in m.parts if isinstance(p, Reasoning)]


def assistant_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    if "messages" in body:
        return [m for m in body["messages"] if m.get("role") in ("assistant", "model")]
    if "contents" in body:
        return [c for c in body["contents"] if c.get("role") == "model"]
    return []


# --- per-route expectations: what turn 1's stored reasoning must look like on the wire -------


def chat_fields(fields: set[str]) -> Callable[[dict[str, Any], Message], None]:
    def check(sent: dict[str, Any], stored: Message) -> None:
        text = "".join(p.text for p in reasoning_of(stored))
        present = {k for k in ("reasoning_content", "reasoning", "reasoning_details") if k in sent}
        assert present == fields
        for f in fields & {"reasoning_content", "reasoning"}:
            assert sent[f] == text
        if "reasoning_details" in fields:
            blob = next(p.blob for p in reasoning_of(stored) if p.blob_kind == "openrouter.details")
            assert sent["reasoning_details"] == orjson.loads(blob)
    return check


def anthropic_blocks(sent: dict[str, Any], stored: Message) -> None:
    blocks = [b for b in sent["content"] if b["type"] in ("thinking", "redacted_thinking")]
    want = [(p.text, p.blob) for p in reasoning_of(stored)]
    got = [(b.get("thinking", ""), b.get("signature", b.get("data"))) for b in blocks]
    assert got == want and want


def bedrock_blocks(sent: dict[str, Any], stored: Message) -> None:
    got = [b["reasoningContent"]["reasoningText"] for b in sent["content"] if "reasoningContent" in b]
    want = [{"text": p.text, "signature": p.blob} for p in reasoning_of(stored)]
    assert got == want and want


def gemini_signatures(sent: dict[str, Any], stored: Message) -> None:
    native = next(p.native for p in reasoning_of(stored) if p.native)
    calls = [p for p in sent["parts"] if "functionCall" in p]
    assert [c["thoughtSignature"] for c in calls] == [sig for _, sig in native.tool_signatures]


def copilot_fields(sent: dict[str, Any], stored: Message) -> None:
    native = next(p.native for p in reasoning_of(stored) if p.native)
    assert sent["reasoning_opaque"] == native.reasoning_opaque
    assert "reasoning_content" not in sent and "reasoning" not in sent


ROUTES: dict[str, tuple[list[str], str, Callable[[dict[str, Any], Message], None]]] = {
    "deepseek": (["-p", "deepseek", "-m", "deepseek-v4"], "deepseek", chat_fields({"reasoning_content"})),
    "mistral": (["-p", "mistral", "-m", "mistral-medium-latest"], "mistral", chat_fields(set())),
    "openrouter": (["-p", "openrouter", "-m", "anthropic/claude-sonnet-4.5"], "openrouter",
                   chat_fields({"reasoning_content", "reasoning", "reasoning_details"})),
    "local": (["-m", "qwen3-32b"], "local", chat_fields({"reasoning_content", "reasoning"})),
    "anthropic": (["-p", "anthropic", "-m", "claude-opus-5"], "anthropic", anthropic_blocks),
    "bedrock": (["-p", "bedrock", "-m", "anthropic.claude-opus-4-5-v1:0"], "bedrock", bedrock_blocks),
    "gemini": (["-p", "gemini", "-m", "gemini-3-pro-preview"], "gemini", gemini_signatures),
    "copilot": (["-p", "copilot", "-m", "claude-sonnet-4.5"], "copilot", copilot_fields),
}


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
@pytest.mark.parametrize("route", list(ROUTES))
def test_resume_and_branch_replay_turn_one_reasoning(route, stream, emulator, hermes_home, tmp_path):
    flags, personality, check = ROUTES[route]
    (tmp_path / "notes.txt").write_text("hello\n")
    url = ["-u", emulator.url(personality)]
    out = orjson.loads(cli(hermes_home, "chat", "-q", "What is here?", *flags, *url, stream, "--json",
                           cwd=tmp_path).stdout)
    sid = out["session_id"]
    assert out["stopped"] == "answer" and out["steps"] >= 2
    stored = Store(hermes_home / "state.db").load(sid)
    tool_turn = next(m for m in stored if m.role == "assistant" and m.tool_calls)
    if route != "mistral":  # Mistral's emulator, like chat-completions Mistral, returns no reasoning field
        assert reasoning_of(tool_turn), "turn 1 stored no reasoning"

    def next_request_carries_turn_one(session: str) -> None:
        before = len(emulator.requests(personality))
        cli(hermes_home, "chat", "--resume", session, "-q", "And then?", stream, "--json", cwd=tmp_path)
        first = emulator.requests(personality)[before]["body"]
        sent = assistant_messages(first)[0]
        check(sent, tool_turn)

    next_request_carries_turn_one(sid)
    branch = orjson.loads(cli(hermes_home, "sessions", "branch", sid, "--json").stdout)["id"]
    next_request_carries_turn_one(branch)
    show = orjson.loads(cli(hermes_home, "sessions", "show", branch, "--json").stdout)
    assert show["session"]["parent_id"] == sid and len(show["messages"]) > len(stored)


def test_canary_key_never_reaches_disk_or_output(emulator, hermes_home, tmp_path):
    runs = [cli(hermes_home, "chat", "-q", "hi", "-p", "deepseek", "-m", "deepseek-v4", "-u",
                emulator.url("deepseek"), "--json", cwd=tmp_path)]
    sid = orjson.loads(runs[0].stdout)["session_id"]
    runs.append(cli(hermes_home, "sessions", "export", sid))
    runs.append(cli(hermes_home, "sessions", "show", sid, "--reasoning"))
    runs.append(cli(hermes_home, "logs", "--json"))
    emulator.state.set_control("deepseek", fault="500", times=5)
    runs.append(cli(hermes_home, "chat", "--resume", sid, "-q", "again", "--json", check=False))
    assert runs[-1].returncode == 1 and "HTTP 500" in runs[-1].stderr
    runs.append(cli(hermes_home, "chat", "-q", "x", "-p", "deepseek", "-m", "m", "-u", "http://127.0.0.1:9/v1",
                    check=False))
    assert runs[-1].returncode == 1
    for r in runs:
        assert CANARY not in r.stdout and CANARY not in r.stderr
    for f in hermes_home.rglob("*"):
        if f.is_file():
            assert CANARY.encode() not in f.read_bytes(), f
            assert f.stat().st_mode & 0o077 == 0, f"{f} is readable by others"
