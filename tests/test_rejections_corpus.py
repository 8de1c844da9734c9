"""The rejection corpus: real provider error bodies (as providers returned them) and adversarial
ones, each with the request shape that drew it and the lesson it must teach — often none.

Every fixture in tests/fixtures/rejections/ is checked for zero false learnings and zero missed
true ones, that a lesson is never taught twice (so a request is retried at most once), and,
for signature rejections, that the replay planner really stops sending the suppressed blobs.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from hermes.core.attempt import Attempt
from hermes.core.errors import ProviderHTTPError
from hermes.core.messages import Message, NativeRecord, Reasoning, Text, ToolCall, ToolResult
from hermes.rejections import RetryState, classify, learned_for, recover
from hermes.replay import Learned, blob_hash, plan_replay
from hermes.routing.resolve import Resolved, resolve
from hermes.store import Store
from hermes.wire import get_wire, openai_chat

FIXTURES = sorted((Path(__file__).parent / "fixtures" / "rejections").glob("*.json"))
CASES = [json.loads(p.read_text()) for p in FIXTURES]


def _target(case: Mapping[str, Any]) -> Resolved:
    route = case["route"]
    url = "http://127.0.0.1:9/v1" if route in ("local", "vllm", "lmstudio") else \
        "https://llm.example.com/v1" if route == "generic" else None
    return resolve(route, url, case["model"])


def sent_body(case: Mapping[str, Any]) -> dict[str, Any]:
    """The request shape: user at 0, assistants carrying the listed carriers at their indices."""
    assistants = {int(k): v for k, v in case["sent"]["assistant"].items()}
    n = max(assistants, default=0) + 2
    messages: list[dict[str, Any]] = []
    for i in range(n):
        if i in assistants:
            m: dict[str, Any] = {"role": "assistant", "content": "calling", "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]}
            for c in assistants[i]:
                m[c] = [{"type": "reasoning.text", "text": "t"}] if c == "reasoning_details" else "thought"
            messages.append(m)
        elif i and i - 1 in assistants:
            messages.append({"role": "tool", "tool_call_id": f"c{i - 1}", "content": "ok"})
        else:
            messages.append({"role": "user", "content": "go on"})
    return {"model": case["model"], "messages": messages, **case["sent"]["top"]}


def chat_attempt(case: Mapping[str, Any], target: Resolved) -> Attempt:
    """The chat wire's attempt record of the case's request shape."""
    return openai_chat.attempt(plan_replay([], target), sent_body(case))


def rendered(history: list[Message], target: Resolved, learned: Learned = Learned()) -> tuple[dict[str, Any], Attempt]:
    """(body, attempt) as the target's wire renders the planned history."""
    wire = get_wire(target.route.wire)
    plan = plan_replay(history, target, learned)
    body = wire.to_wire(plan)
    return body, wire.attempt(plan, body)


def strings(obj: Any) -> set[str]:
    """Every string value anywhere in a request body (bytes as the base64 they were stored as)."""
    if isinstance(obj, str):
        return {obj}
    if isinstance(obj, bytes):
        return {base64.b64encode(obj).decode()}
    if isinstance(obj, Mapping):
        return set().union(*(strings(v) for v in obj.values())) if obj else set()
    if isinstance(obj, list):
        return set().union(*(strings(v) for v in obj)) if obj else set()
    return set()


def signed_history(case: Mapping[str, Any], target: Resolved) -> list[Message]:
    """A stored open tool loop whose assistant turn holds one blob per listed kind, minted by
    ``target`` itself (so the planner would send every one of them)."""
    origin = target.key
    parts: list[Any] = []
    for n, kind in enumerate(case["blobs"]):
        if kind == "native":
            rec = (NativeRecord(reasoning_opaque=f"opaque-{n}", reasoning_text="why", tool_signatures=(("c1", f"ts-{n}"),))
                   if target.route.key == "copilot"
                   else NativeRecord(thought_signature=f"sig-{n}", tool_signatures=(("c1", f"ts-{n}"),)))
            parts.append(Reasoning("why", origin, native=rec))
        elif kind == "openrouter.details":
            blob = json.dumps([{"type": "reasoning.text", "text": "why", "signature": f"Es{n}", "format": "anthropic-claude-v1"}])
            parts.append(Reasoning("why", origin, blob=blob, blob_kind=kind))
        elif kind == "anthropic.redacted":  # stored as the base64 the providers send
            parts.append(Reasoning("", origin, blob=base64.b64encode(f"{kind}-{n}".encode()).decode(), blob_kind=kind))
        else:
            parts.append(Reasoning("why", origin, blob=f"{kind}-{n}", blob_kind=kind, item_id=f"rs_{n}"))
    parts += [Text("let me look"), ToolCall("c1", "read_file", '{"path": "a"}')]
    return [Message.user("read a"), Message("assistant", tuple(parts)),
            Message("tool", (ToolResult("c1", "contents", "read_file"),))]


def expected_hashes(history: list[Message], kinds: list[str], body: Mapping[str, Any]) -> set[str]:
    """Hashes of the stored blobs of ``kinds`` that went out in ``body`` (a private record's
    values each as placed; ``reasoning_details`` merged into one list, so by stored blob)."""
    sent = strings(body)
    out: set[str] = set()
    for m in history:
        for p in m.parts:
            if not isinstance(p, Reasoning):
                continue
            if p.blob and p.blob_kind in kinds and (p.blob in sent or p.blob_kind == "openrouter.details"):
                out.add(blob_hash(p.blob))
            if p.native and "native" in kinds:
                n = p.native
                out |= {blob_hash(v) for v in (n.thought_signature, n.reasoning_opaque, *(s for _, s in n.tool_signatures))
                        if v and v in sent}
    return out


def test_corpus_is_big_enough_and_balanced() -> None:
    assert len(CASES) >= 50
    teaching = [c for c in CASES if c["expect"]["dropped"] or c["expect"]["suppressed_kinds"]]
    assert len(teaching) >= 15 and len(CASES) - len(teaching) >= 30
    assert len({c["id"] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_corpus_case(case: dict[str, Any]) -> None:
    target = _target(case)
    if "blobs" in case:
        history = signed_history(case, target)
        body, attempt = rendered(history, target)
        lesson = classify(case["status"], case["body"], attempt)
        want = expected_hashes(history, case["expect"]["suppressed_kinds"], body)
        assert not lesson.dropped
        assert set(lesson.suppressed) == want, "false or missed suppression"
        if want:
            # the planner honours it: none of those blobs is sent again, whatever their kind
            known = Learned(suppressed=lesson.suppressed)
            again_body, again = rendered(history, target, known)
            assert not set(again.blobs()) & want
            assert not {blob_hash(v) for v in strings(again_body)} & want
            assert not classify(case["status"], case["body"], again), "nothing left to suppress"
            assert not lesson.without(known), "the same lesson must never be taught twice"
        return
    attempt = chat_attempt(case, target)
    lesson = classify(case["status"], case["body"], attempt)
    assert not lesson.suppressed
    assert sorted(lesson.dropped) == case["expect"]["dropped"], "false or missed learning"
    assert lesson.echo == case["expect"].get("echo", False), "a must-echo refusal teaches padding, nothing else"
    if lesson:
        assert not lesson.without(Learned(dropped=lesson.dropped, echo=lesson.echo)), \
            "the same lesson must never be taught twice"


@pytest.mark.parametrize("case", [c for c in CASES if "sent" in c], ids=lambda c: c["id"])
def test_recover_retries_at_most_once(case: dict[str, Any], tmp_path: Path) -> None:
    """Through ``recover`` with a real store: one retry per request; the second rejection of the
    same request is reported; a new request after learning is not retried for the same lesson."""
    target = _target(case)
    with Store(tmp_path / "state.db") as store:
        sid = store.create_session(provider=target.route.key, model=target.model)
        err = ProviderHTTPError("rejected", status=case["status"], body=case["body"], route=target.route.key,
                                attempt=chat_attempt(case, target))
        retry = RetryState()
        first = recover(store, sid, target, err, retry)
        assert (first is not None) == bool(case["expect"]["dropped"] or case["expect"].get("echo"))
        assert recover(store, sid, target, err, retry) is None
        assert recover(store, sid, target, err, RetryState()) is None  # already known → reported
        learned = learned_for(store, sid, target)
        assert sorted(learned.dropped) == case["expect"]["dropped"]
        assert learned.echo == case["expect"].get("echo", False)
        if target.route.must_echo:
            assert "reasoning_content" not in learned.dropped
