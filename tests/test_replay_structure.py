"""Structural repairs are the planner's decisions: `hermes replay` shows each one, and the wires
that follow them always produce the alternation their API demands."""

from __future__ import annotations

import os
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.agent.provider import get_wire
from hermes.core.messages import Compaction, Message, Reasoning, Text, ToolCall, ToolResult, dumps
from hermes.replay import plan_replay
from hermes.routing.resolve import resolve

BEDROCK_MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"
ANTHROPIC_MODEL = "claude-opus-5"


def run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HERMES_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=env, timeout=60)


def history(provider: str, model: str) -> list[Message]:
    """Two user messages in a row, a reasoning-only assistant turn (signed, from the target
    itself), two more assistant turns in a row, a tool result answered by a user message, and
    a last word from the model."""
    own = resolve(provider, None, model).key
    return [Message.user("hi"), Message.user("and also this"),
            Message("assistant", (Reasoning("thinking only", own, "EsSIG", "anthropic.signature"),)),
            Message("assistant", (Text("first"),)),
            Message("assistant", (ToolCall("c1", "ls", "{}"),)),
            Message("tool", (ToolResult("c1", "a.py"),)),
            Message.user("thanks"),
            Message("assistant", (Text("bye"),))]


def write(tmp_path: Path, msgs: list[Message]) -> Path:
    f = tmp_path / "h.jsonl"
    f.write_bytes(b"\n".join(dumps(m) for m in msgs) + b"\n")
    return f


def test_hermes_replay_shows_every_bedrock_repair(tmp_path, hermes_home):
    f = write(tmp_path, history("bedrock", BEDROCK_MODEL))
    r = run("replay", str(f), "-p", "bedrock", "-m", BEDROCK_MODEL, home=hermes_home)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "#1 user\n  message: merge: joins the previous user turn: Converse wants user and assistant turns" in out
    assert "part 0: drop: reasoning-only assistant turn would be read as prefill" in out
    assert "#3 assistant\n  (no reasoning carried)\n  message: insert -> before: placeholder user turn first: " \
           "two assistant turns in a row" in out
    assert "#6 user\n  message: merge: joins the previous user turn" in out
    assert "message: insert -> after: placeholder user turn last: the request must not end on the model" in out
    report = orjson.loads(run("replay", str(f), "-p", "bedrock", "-m", BEDROCK_MODEL, "--json", home=hermes_home).stdout)
    actions = {(m["index"], d["action"]) for m in report["messages"] for d in m["decisions"] if d["part"] is None}
    assert actions == {(1, "merge"), (3, "insert"), (4, "insert"), (6, "merge"), (7, "insert")}
    # ... and the body the wire sends is exactly what the decisions say
    body = orjson.loads(run("replay", str(f), "-p", "bedrock", "-m", BEDROCK_MODEL, "--body", home=hermes_home).stdout)
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant", "user", "assistant", "user"]
    texts = [b.get("text") for m in body["messages"] for b in m["content"]]
    assert texts.count("(continue)") == 3
    assert body["messages"][0]["content"] == [{"text": "hi"}, {"text": "and also this"}]
    assert "reasoningContent" not in orjson.dumps(body).decode()


def test_hermes_replay_shows_anthropic_merges_and_the_reasoning_only_rule(tmp_path, hermes_home):
    f = write(tmp_path, history("anthropic", ANTHROPIC_MODEL))
    r = run("replay", str(f), "-p", "anthropic", "-m", ANTHROPIC_MODEL, home=hermes_home)
    assert r.returncode == 0, r.stderr
    assert "part 0: drop: reasoning-only assistant turn would be read as prefill" in r.stdout
    assert "the Messages API wants user and assistant turns to alternate" in r.stdout
    report = orjson.loads(run("replay", str(f), "-p", "anthropic", "-m", ANTHROPIC_MODEL, "--json",
                              home=hermes_home).stdout)
    merged = {m["index"] for m in report["messages"] for d in m["decisions"] if d["action"] == "merge"}
    assert merged == {1, 4, 6}  # #2 renders nothing (its only part was dropped), so #3 opens the turn
    body = orjson.loads(run("replay", str(f), "-p", "anthropic", "-m", ANTHROPIC_MODEL, "--body",
                            home=hermes_home).stdout)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user", "assistant"]
    assert [b["type"] for b in body["messages"][1]["content"]] == ["text", "tool_use"]
    assert [b["type"] for b in body["messages"][2]["content"]] == ["tool_result", "text"]


# ----------------------------------------------------------------------------- property

ROLES = st.sampled_from(["user", "assistant", "tool", "system"])


@st.composite
def shaped_histories(draw) -> list[Message]:
    """Any order of roles, empty texts and compactions included: the shapes that need repairs."""
    out: list[Message] = []
    calls = 0
    for role in draw(st.lists(ROLES, max_size=10)):
        text = draw(st.sampled_from(["", "x", " "]))
        if role == "assistant":
            parts: list = [Text(text)] if draw(st.booleans()) else []
            if draw(st.booleans()) or not parts:
                calls += 1
                parts.append(ToolCall(f"c{calls}", "ls", "{}"))
            out.append(Message("assistant", tuple(parts)))
        elif role == "tool":
            out.append(Message("tool", (ToolResult(f"c{max(calls, 1)}", "ok", name="ls"),)))
        elif role == "user" and draw(st.integers(0, 5)) == 0:
            out.append(Message("user", (Compaction("summary", 1),)))
        else:
            out.append(Message(role, (Text(text),)))  # type: ignore[arg-type]
    return out


TARGETS = st.sampled_from([("anthropic", ANTHROPIC_MODEL), ("bedrock", BEDROCK_MODEL),
                           ("gemini", "gemini-3-pro-preview")])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shaped_histories(), TARGETS)
def test_following_the_plans_structure_gives_the_alternation_each_api_demands(msgs, target_id):
    """Every merge and placeholder the plan decides is needed and enough: the rendered turns
    alternate (Bedrock: and start and end on the user), and a merge decision marks exactly the
    messages that did not open a turn of their own."""
    target = resolve(target_id[0], None, target_id[1])
    plan = plan_replay(msgs, target)
    body = get_wire(target.route.wire).to_wire(plan)
    turns = body["contents"] if target.route.wire == "gemini" else body["messages"]
    roles = [t["role"] for t in turns]
    assert all(a != b for a, b in pairwise(roles)), roles
    if target.route.wire == "bedrock":
        assert roles[0] == "user" and roles[-1] == "user"
        inserted = sum(1 for m in plan.messages if m.placeholder) + plan.placeholder_after
        opened = sum(1 for m in plan.messages if m.role != "system" and not m.joins)
        assert len(roles) == opened + inserted
    for m in plan.messages:
        said = {d.action for d in m.decisions if d.part is None}
        assert ("merge" in said) == m.joins
        assert ("insert" in said) == (m.placeholder or (plan.placeholder_after and m is _last_turn(plan)))


def _last_turn(plan):
    return next((m for m in reversed(plan.messages) if m.role != "system"), None)
