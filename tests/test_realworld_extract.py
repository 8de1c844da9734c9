"""The selection rule of tests/realworld/extract.py, on cassettes written here.

The real cassettes are not in this repository (docs/realworld.md), so the rule that picks cases
from them is checked on small cassettes of our own, in both projects' formats: a step is a case
only when its response succeeded and holds reasoning and/or tool calls and nothing else our wires
do not read, and the next request — accepted — sends that turn back with all its tool calls.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

_spec = importlib.util.spec_from_file_location("extract", Path(__file__).parent / "realworld" / "extract.py")
assert _spec and _spec.loader
extract = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(extract)

URI = "https://api.anthropic.com/v1/messages"
THINKING = {"type": "thinking", "thinking": "Look first.", "signature": "EsigA"}
CALL = {"type": "tool_use", "id": "toolu_01", "name": "ls", "input": {"path": "."}}
ASK = {"role": "user", "content": "What is here?"}
STREAM_THEN_ERROR = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in [
    {"type": "content_block_start", "index": 0, "content_block": {**THINKING, "thinking": "", "signature": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Look first."}},
    {"type": "content_block_start", "index": 1, "content_block": {**CALL, "input": {}}},
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
])


def step(response: dict[str, Any], *, status: int = 200) -> dict[str, Any]:
    """One pydantic-ai interaction (request body, parsed response)."""
    return {"request": {"uri": URI, "parsed_body": {"model": "claude-sonnet-4-5", "messages": [ASK]}},
            "response": {"status": {"code": status}, "parsed_body": response}}


def replay(*assistant: dict[str, Any], status: int = 200) -> dict[str, Any]:
    """The next interaction: the client sends the turn back with its tool results."""
    results = [{"type": "tool_result", "tool_use_id": b["id"], "content": "a"} for b in assistant
               if b["type"] == "tool_use"]
    msgs = [ASK, {"role": "assistant", "content": list(assistant)}, {"role": "user", "content": results}]
    return {"request": {"uri": URI, "parsed_body": {"model": "claude-sonnet-4-5", "messages": msgs}},
            "response": {"status": {"code": status}, "parsed_body": {"content": [{"type": "text", "text": "a"}]}}}


def cases(*interactions: dict[str, Any]) -> list[dict[str, Any]]:
    text = yaml.safe_dump({"interactions": list(interactions)})
    return list(extract.cases_in("pydantic-ai", "tests/models/cassettes/test_x/test_case.yaml", text))


def test_a_replayed_thinking_and_tool_turn_is_a_case_kept_exactly() -> None:
    response = {"content": [THINKING, CALL], "stop_reason": "tool_use"}
    [case] = cases(step(response), replay(THINKING, CALL))
    assert case["id"] == "anthropic/case" and case["route"] == "anthropic" and case["model"] == "claude-sonnet-4-5"
    assert case["response"] == response  # as recorded
    assert case["next_request"]["messages"][1]["content"] == [THINKING, CALL]
    assert case["source"]["interactions"] == [0, 1] and case["source"]["licence"] == "MIT"


@pytest.mark.parametrize(("first", "then"), [
    (step({"content": [{"type": "text", "text": "hi"}]}), replay(THINKING, CALL)),         # nothing to replay
    (step({"content": [THINKING, CALL]}, status=400), replay(THINKING, CALL)),            # failed response
    (step({"content": [THINKING, CALL]}), replay(THINKING, CALL, status=400)),            # replay refused
    (step({"content": [THINKING, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                                  "input": {}}]}), replay(THINKING, CALL)),                # not ours to replay
    (step({"content": [THINKING, CALL]}),                                                  # client rewrote the call
     replay({**CALL, "id": "auto_load_1", "name": "search_tools"})),
    ({**step({}), "response": {"status": {"code": 200}, "body": {"string": STREAM_THEN_ERROR}}},  # died midway
     replay(THINKING, CALL)),
], ids=["text-only", "failed", "refused", "server-tool", "rewritten", "stream-error"])
def test_steps_that_are_not_replays_of_a_reasoning_or_tool_turn_are_left_out(
        first: dict[str, Any], then: dict[str, Any]) -> None:
    assert cases(first, then) == []


def test_a_failed_gemini_generation_is_not_a_case() -> None:
    uri = "https://generativelanguage.googleapis.com/v1beta/models/gemini-3-pro-preview:generateContent"
    call = {"functionCall": {"name": "ls", "args": {}}, "thoughtSignature": "CsigA"}
    back = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": [call]}]}

    def interaction(finish: str) -> list[dict[str, Any]]:
        answer = {"candidates": [{"content": {"role": "model", "parts": [call]}, "finishReason": finish}]}
        return [{"request": {"uri": uri, "parsed_body": {"contents": back["contents"][:1]}},
                 "response": {"status": {"code": 200}, "parsed_body": answer}},
                {"request": {"uri": uri, "parsed_body": back},
                 "response": {"status": {"code": 200}, "parsed_body": {}}}]

    assert [c["model"] for c in cases(*interaction("STOP"))] == ["gemini-3-pro-preview"]
    assert cases(*interaction("UNEXPECTED_TOOL_CALL")) == []


def test_a_fantasy_stream_is_kept_as_sse_text_and_read_at_the_pinned_commit(tmp_path: Path) -> None:
    """go-vcr cassettes (raw string bodies, ``url``, ``code``) in a clone: read through git at
    the pinned commit, whatever is checked out afterwards."""
    sse = "".join(f"data: {json.dumps(c)}\n\n" for c in [
        {"choices": [{"delta": {"reasoning_content": "Think."}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                "function": {"name": "ls", "arguments": "{}"}}]}}]},
    ]) + "data: [DONE]\n\n"
    url = "https://api.z.ai/api/paas/v4/chat/completions"
    back = {"model": "glm-4.7", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "reasoning_content": "Think.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a"}]}
    cassette = {"interactions": [
        {"request": {"url": url, "body": json.dumps({"model": "glm-4.7", "messages": back["messages"][:1]})},
         "response": {"code": 200, "body": sse}},
        {"request": {"url": url, "body": json.dumps(back)}, "response": {"code": 200, "body": "{}"}},
    ]}
    repo = tmp_path / "fantasy"
    path = repo / "providertests/testdata/TestZai/glm/tool_streaming.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(cassette))

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                              text=True).stdout.strip()

    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c", "--allow-empty")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "cassette")
    pinned = git("rev-parse", "HEAD")
    path.write_text("interactions: []\n")  # a later checkout changed the file: the pinned one counts
    got = list(extract.cassettes(repo, pinned, "providertests/testdata"))
    assert [p for p, _ in got] == ["providertests/testdata/TestZai/glm/tool_streaming.yaml"]
    [case] = list(extract.cases_in("fantasy", *got[0]))
    assert case["id"] == "glm/Zai_glm_tool_streaming" and case["sse"] == sse
    assert case["next_request"] == {"messages": back["messages"]}
