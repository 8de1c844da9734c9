"""The rejection path runs forward: the attempt record and the pure classifier.

* For every route family (chat, Anthropic, Bedrock, Gemini, Responses) a request that the
  emulator refuses over real HTTP raises a ``ProviderHTTPError`` whose attempt record matches,
  field by field and hash by hash, the body the emulator received (read here with this test's
  own walk of each dialect's JSON); ``recover`` learns from it with a real store and the one
  retry goes through.
* ``classify`` is a pure function of (error, attempt): a hypothesis property over generated
  attempts and error bodies (real corpus bodies and generated ones), with no store anywhere;
  its modules import nothing that reads a store or a wire.
"""

from __future__ import annotations

import ast
import base64
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import hermes.rejections.classifier as classify_module
import hermes.rejections.vocabulary as mentions_module
from hermes.agent.provider import complete
from hermes.core.attempt import Attempt, Carried
from hermes.core.errors import ProviderHTTPError
from hermes.core.messages import (
    Message,
    NativeRecord,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    blob_hash,
)
from hermes.emulate import Emulator
from hermes.rejections import CARRIERS, RetryState, classify, learned_for, recover
from hermes.routing.resolve import Resolved, resolve
from hermes.store import Store
from hermes.wire import ToolSpec

TOOL = ToolSpec("read_file", "read a file", {"type": "object", "properties": {"path": {"type": "string"}}})
LEAVES = frozenset({"signature", "data", "redactedContent", "thoughtSignature", "encrypted_content", "reasoning_content",
                    "reasoning", "reasoning_details", "reasoning_opaque", "reasoning_text", "thought_signature"})
"""Keys that hold replayed reasoning in some dialect (this test's own list, not the product's)."""
LISTS = ("messages", "contents", "input")


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    """Our own emulator: the drift control below must not leak into other tests."""
    with Emulator(["openrouter", "gemini-openai", "anthropic", "bedrock", "gemini", "openai-responses"]) as e:
        yield e


# ----------------------------------------------------------------------------- the wire side


def on_wire(body: Mapping[str, Any]) -> tuple[set[tuple[int, str]], dict[tuple[int, str], Any], set[int]]:
    """((message, path) of every reasoning value, their values, positions of tool-calling turns)
    in a request body as the emulator received it."""
    name = next(k for k in LISTS if isinstance(body.get(k), list))
    found: dict[tuple[int, str], Any] = {}
    turns: set[int] = set()

    def walk(i: int, obj: Any, path: str) -> None:
        if isinstance(obj, Mapping):
            if obj.get("type") in ("tool_use", "function_call") or {"tool_calls", "toolUse", "functionCall"} & set(obj):
                turns.add(i)
            for k, v in obj.items():
                at = f"{path}.{k}" if path else k
                if k in LEAVES and not isinstance(v, Mapping):
                    found[(i, at)] = v
                else:
                    walk(i, v, at)
        elif isinstance(obj, list):
            for j, v in enumerate(obj):
                walk(i, v, f"{path}.{j}")

    for i, m in enumerate(body[name]):
        if m.get("role") in ("assistant", "model") or m.get("type") in ("reasoning", "function_call"):
            walk(i, m, "")
    return set(found), found, turns


def forged_history(target: Resolved, family: str) -> list[Message]:
    """An open tool loop whose assistant turn carries reasoning minted (supposedly) by
    ``target`` itself, with signatures the emulator never minted."""
    o = target.key
    if family == "anthropic" or family == "bedrock":
        parts: tuple[Any, ...] = (
            Reasoning("I should read it.", o, blob="EsFORGED" + "A" * 40, blob_kind="anthropic.signature"),
            Reasoning("", o, blob=base64.b64encode(b"forged redacted").decode(), blob_kind="anthropic.redacted"))
    elif family == "gemini":
        parts = (Reasoning("I should read it.", o, native=NativeRecord(thought_signature="Q0ZPUkdFRA==",
                                                                       tool_signatures=(("c1", "Q0ZPUkdFRDI="),))),)
    elif family == "responses":
        parts = (Reasoning("I should read it.", o, blob="gAAAAABforged", blob_kind="openai.encrypted", item_id="rs_1"),)
    elif family == "gemini-chat":
        parts = (Reasoning("I should read it.", o, native=NativeRecord(tool_signatures=(("c1", "Q0ZPUkdFRDM="),))),)
    else:  # openrouter: readable text and two details blobs merged into one list
        parts = tuple(Reasoning(f"step {n}", o, blob=json.dumps([{"type": "reasoning.text", "text": f"step {n}",
                                                                 "signature": f"EsD{n}", "index": n}]),
                                blob_kind="openrouter.details") for n in (0, 1))
    return [Message.user("read a"),
            Message("assistant", (*parts, Text("let me look"), ToolCall("c1", "read_file", '{"path": "a"}'))),
            Message("tool", (ToolResult("c1", "contents of a", "read_file"),))]


def native_values(n: NativeRecord) -> tuple[str | None, ...]:
    return (n.thought_signature, n.reasoning_opaque, *(sig for _, sig in n.tool_signatures))


FAMILIES = [  # (family, route, model, how the emulator is made to refuse)
    ("chat", "openrouter", "anthropic/claude-sonnet-4.5", "drift"),
    ("gemini-chat", "gemini-openai", "gemini-3-pro-preview", "signature"),
    ("anthropic", "anthropic", "claude-sonnet-4-5", "signature"),
    ("bedrock", "bedrock", "us.anthropic.claude-opus-4-5-20251101-v1:0", "signature"),
    ("gemini", "gemini", "gemini-3-pro-preview", "signature"),
    ("responses", "openai-responses", "gpt-5.1", "signature"),
]


@pytest.mark.parametrize(("family", "route", "model", "how"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_attempt_matches_the_wire_and_the_one_retry_goes_through(
        emu: Emulator, aws_env: None, tmp_path: Path, family: str, route: str, model: str, how: str) -> None:
    target = resolve(route, emu.url(route), model)
    history = forged_history(target, "openrouter" if family == "chat" else family)
    if how == "drift":
        emu.state.set_control(route, reject_fields=["reasoning_details"])
    try:
        start = len(emu.requests(route))
        with pytest.raises(ProviderHTTPError) as caught:
            complete(target, history, tools=(TOOL,), api_key="test-key")
        err = caught.value
        sent = emu.requests(route)[start:]
        assert len(sent) == 1 and 400 <= err.status < 500, err.body
        attempt = err.attempt
        assert attempt is not None and attempt.must_echo == target.route.must_echo
        where, values, turns = on_wire(sent[0]["body"])

        # the record is what went on the wire: the same places, the same tool turns …
        assert {(c.message, c.path) for c in attempt.carried} == where
        assert attempt.tool_turns == turns and turns
        if route != "bedrock":  # Converse puts the model id in the URL, not the JSON
            assert attempt.top == set(sent[0]["body"])
        # … and each signed value by the hash of the stored blob it came from
        stored = {blob_hash(v) for m in history for p in m.parts if isinstance(p, Reasoning)
                  for v in (p.blob, *(native_values(p.native) if p.native else ())) if v}
        for c in attempt.carried:
            if c.blob is None:
                continue
            assert c.blob in stored
            value = values[(c.message, c.path)]
            if c.field == "reasoning_details":  # one list merged from stored blobs: each one is in it
                blob = next(p.blob for m in history for p in m.parts if isinstance(p, Reasoning)
                            and p.blob and blob_hash(p.blob) == c.blob)
                assert all(entry in value for entry in json.loads(blob or "[]"))
            else:
                assert blob_hash(value) == c.blob
        assert attempt.blobs() or how == "drift"

        # learning from it at the edge, then exactly one retry that the emulator accepts
        with Store(tmp_path / "state.db") as store:
            retry = RetryState()
            note = recover(store, None, target, err, retry)
            assert note is not None and retry.retried
            assert recover(store, None, target, err, retry) is None, "one retry per request"
            learned = learned_for(store, None, target)
            if how == "drift":
                assert learned.dropped == {"reasoning", "reasoning_details"} and not learned.suppressed
            else:
                assert learned.suppressed == frozenset(attempt.blobs()) and not learned.dropped
            again = complete(target, history, tools=(TOOL,), api_key="test-key", learned=learned)
            assert again.response.message.parts
            _, values_after, _ = on_wire(emu.requests(route)[-1]["body"])
            assert not {blob_hash(v) for v in values_after.values() if isinstance(v, str)} & set(attempt.blobs())
    finally:
        emu.state.set_control(route, reject_fields=[], fault=None)


# ----------------------------------------------------------------------------- the pure classifier

CORPUS = [json.loads(p.read_text())["body"]
          for p in sorted((Path(__file__).parent / "fixtures" / "rejections").glob("*.json"))]
KINDS = ("anthropic.signature", "anthropic.redacted", "openai.encrypted", "openrouter.details", "native")
PATHS = (*CARRIERS, "reasoning_opaque", "content.0.signature", "parts.0.thoughtSignature", "encrypted_content")


@st.composite
def attempts(draw: st.DrawFn) -> Attempt:
    carried = draw(st.lists(st.builds(
        Carried, st.integers(0, 6), st.sampled_from(PATHS),
        st.one_of(st.none(), st.text("abcdef0123456789", min_size=8, max_size=8)), st.sampled_from(KINDS)),
        max_size=8))
    return Attempt(draw(st.sampled_from(["openai_chat", "anthropic", "bedrock", "gemini", "openai_responses"])),
                   tuple(carried), frozenset(draw(st.sets(st.sampled_from(["model", "messages", "reasoning", "tools"])))),
                   frozenset(draw(st.sets(st.integers(0, 6), max_size=3))), draw(st.booleans()))


def _generated(field: str, index: int, shape: int) -> str:
    return [
        f'{{"error": {{"message": "messages.{index}.{field}: Extra inputs are not permitted"}}}}',
        f'{{"error": {{"message": "Unrecognized request argument supplied: {field}"}}}}',
        f"messages[{index}]: unknown field `{field}`",
        f'{{"detail": [{{"type": "extra_forbidden", "loc": ["body", "messages", {index}, "{field}"]}}]}}',
        f"The `{field}` in the thinking mode must be passed back to the API.",
        "messages.1.content.0: Invalid `signature` in `thinking` block",
        f"{field} is missing in assistant tool call message at index {index}",
    ][shape]


@st.composite
def cases(draw: st.DrawFn) -> tuple[int, str, Attempt]:
    """(status, error body, attempt): a corpus body, or a generated one naming a carrier —
    often one the attempt really carried, at its real position."""
    attempt = draw(attempts())
    if draw(st.booleans()):
        return draw(st.sampled_from([400, 404, 422, 401, 403, 413, 429, 500, 502])), draw(st.sampled_from(CORPUS)), attempt
    sent = [(c.field, c.message) for c in attempt.carried if c.field in CARRIERS]
    field, index = draw(st.sampled_from(sent)) if sent and draw(st.booleans()) else \
        (draw(st.sampled_from(CARRIERS)), draw(st.integers(0, 6)))
    body = _generated(field, index, draw(st.integers(0, 6)))
    return draw(st.sampled_from([400, 400, 422, 429, 500])), body, attempt


@settings(max_examples=500, deadline=None)
@given(case=cases())
def test_classify_is_a_pure_function_of_the_error_and_the_attempt(case: tuple[int, str, Attempt]) -> None:
    status, body, attempt = case
    event("dropped" if (taught := classify(status, body, attempt)).dropped else "suppressed" if taught.suppressed
          else "echo" if taught.echo else "nothing")
    lesson = classify(status, body, attempt)
    assert lesson == classify(status, body, attempt), "same inputs, same lesson"
    # it teaches only about what the attempt carried …
    sent = {c.field for c in attempt.carried} & set(CARRIERS)
    assert lesson.dropped <= sent
    assert lesson.suppressed <= set(attempt.blobs())
    assert not lesson.echo or (attempt.tool_turns and attempt.wire == "openai_chat")
    # … never drops reasoning_content where the route must echo it, never teaches echo there
    if attempt.must_echo:
        assert "reasoning_content" not in lesson.dropped and not lesson.echo
    # … and nothing from auth, money, size, rate or server errors
    if status >= 500 or status in (401, 402, 403, 407, 408, 413, 429):
        assert not lesson
    # one kind of lesson per error
    assert sum(map(bool, (lesson.dropped, lesson.suppressed, lesson.echo))) <= 1


def test_a_must_echo_refusal_wrapped_by_a_gateway_teaches_the_pad() -> None:
    """OpenRouter passes DeepSeek's must-echo 400 through in ``metadata.raw``: padding is learned
    for an attempt with a tool turn, never a drop — and nothing when the route already echoes."""
    raw = orjson.dumps({"error": {"message": "The `reasoning_content` in the thinking mode must be passed back "
                                             "to the API.", "type": "invalid_request_error"}}).decode()
    body = orjson.dumps({"error": {"code": 400, "message": "Provider returned error",
                                   "metadata": {"raw": raw, "provider_name": "DeepSeek"}}}).decode()
    att = Attempt("openai_chat", (Carried(1, "reasoning"),), frozenset({"messages"}), frozenset({1}))
    lesson = classify(400, body, att)
    assert lesson.echo and not lesson.dropped
    assert not classify(400, body, Attempt("openai_chat", att.carried, att.top, att.tool_turns, must_echo=True))


def test_the_classifier_reads_no_store_and_no_wire() -> None:
    """Its modules import the attempt record and the vocabulary, nothing that reads a store, a
    wire's JSON or the planner (``Learned`` only as a type, for ``Lesson.without``)."""
    for module in (classify_module, mentions_module):
        tree = ast.parse(Path(module.__file__ or "").read_text())
        runtime = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        names = {(n.module or "") if isinstance(n, ast.ImportFrom) else a.name
                 for n in runtime for a in getattr(n, "names", [])}
        assert not {n for n in names if any(bad in n for bad in ("store", "wire", "replay", "provider", "history"))}, \
            names
