"""A tool loop killed before its answer, then a new user message, on a loop-only Claude model.

Claude Sonnet 4.0 (on Anthropic and on Bedrock) sees only the open tool loop's thinking: earlier
turns' thinking is dropped, so Hermes sends it only for the loop in flight. When a run is killed
after a tool result and before the model answered, the stored history ends ``assistant(thinking,
tool_use) → tool(result)``; the next user message is then rendered into the *same* API user turn
as that result (both wires merge consecutive user-side messages). To the provider the unanswered
loop is still the latest one, and the real API refuses it without its thinking block:

    messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`.
    When `thinking` is enabled, a final `assistant` message must start with a thinking block …

(a crash-loop run against real Bedrock got exactly this 400). ``hermes.core.history.open_loop_start``
therefore keeps such a loop open across the next user message. Over real HTTP against the
emulators, which enforce that rule with that body: the emulator refuses the request without the
loop's thinking, and Hermes sends it with the thinking, signature byte-identical.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import anthropic
import boto3
import pytest
from botocore.exceptions import ClientError

from hermes.agent import provider
from hermes.core.messages import Message, Reasoning, ToolResult
from hermes.routing.resolve import Resolved, resolve
from hermes.wire import ToolSpec

TOOLS = (ToolSpec("ls", "List files", {"type": "object", "properties": {"path": {"type": "string"}},
                                       "required": ["path"]}),)
CASES = [("anthropic", "claude-sonnet-4-20250514"), ("bedrock", "us.anthropic.claude-sonnet-4-20250514-v1:0")]
REFUSAL = "Expected `thinking` or `redacted_thinking`, but found"


@pytest.fixture(autouse=True)
def _aws(aws_env: None) -> None:
    """Fake AWS credentials: botocore signs the Bedrock requests to the emulator."""


def killed_loop(emulator: Any, r: Resolved, *, stream: bool) -> tuple[list[Message], Message]:
    """A question, the model's thinking + tool call, the tool's result — and no answer: the run
    was killed there. Then the user asks something new."""
    history = [Message.system("You are terse."), Message.user("What is in the workspace?")]
    turn = provider.complete(r, history, tools=TOOLS, stream=stream, api_key="test-key").response.message
    assert turn.tool_calls and any(isinstance(p, Reasoning) and p.blob for p in turn.parts), \
        "the emulator's Claude answers with signed thinking and a tool call"
    results = Message("tool", tuple(ToolResult(c.id, "a.txt b.txt", c.name) for c in turn.tool_calls))
    return [*history, turn, results, Message.user("Never mind. What time is it?")], turn


def _sent_blocks(key: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The content of the last assistant message of a logged request body."""
    return [m for m in body["messages"] if m["role"] == "assistant"][-1]["content"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize(("key", "model"), CASES, ids=[k for k, _ in CASES])
def test_the_killed_loops_thinking_goes_back_with_the_next_user_message(
        emulator: Any, key: str, model: str, stream: bool) -> None:
    r = resolve(key, emulator.url(key), model)
    assert r.profile.prior_turns == "loop", "the case under test: a model that sees only the open loop's thinking"
    history, turn = killed_loop(emulator, r, stream=stream)

    before = len(emulator.requests(key))
    answer = provider.complete(r, history, tools=TOOLS, stream=stream, api_key="test-key")  # a 400 raises
    assert answer.response.message.parts
    body = emulator.requests(key)[before]["body"]
    first = _sent_blocks(key, body)[0]
    signed = next(p for p in turn.parts if isinstance(p, Reasoning) and p.blob)
    if key == "anthropic":
        assert first["type"] == "thinking" and first["signature"] == signed.blob
    else:
        assert first["reasoningContent"]["reasoningText"]["signature"] == signed.blob
    # and the new question went out in the same user turn as the tool result, after it
    last_user = body["messages"][-1]["content"]
    assert [b.get("type") or next(iter(b)) for b in last_user][-1] == "text"


@pytest.mark.parametrize(("key", "model"), CASES, ids=[k for k, _ in CASES])
def test_the_emulator_refuses_the_killed_loop_without_its_thinking(emulator: Any, key: str, model: str) -> None:
    """The rule the test above relies on, with the real body: the request Hermes sends, less the
    loop's thinking block (what it sent before the fix, thinking still on), sent by the official
    SDK, is refused."""
    r = resolve(key, emulator.url(key), model)
    history, _ = killed_loop(emulator, r, stream=False)
    before = len(emulator.requests(key))
    provider.complete(r, history, tools=TOOLS, stream=False, api_key="test-key")
    body = copy.deepcopy(emulator.requests(key)[before]["body"])
    blocks = _sent_blocks(key, body)
    del blocks[0]  # the thinking block
    assert blocks and all("thinking" not in json.dumps(b) and "reasoningContent" not in b for b in blocks)
    if key == "anthropic":
        client = anthropic.Anthropic(api_key="test-key", base_url=emulator.url(key), max_retries=0)
        with pytest.raises(anthropic.BadRequestError) as refused:
            client.messages.create(**body)
        assert REFUSAL in str(refused.value.body)
    else:
        bedrock = boto3.client("bedrock-runtime", endpoint_url=emulator.url(key), region_name="us-west-2")
        with pytest.raises(ClientError) as failed:
            bedrock.converse(modelId=model, **body)
        assert failed.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        assert REFUSAL in failed.value.response["Error"]["Message"]
