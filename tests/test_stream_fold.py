"""Invariant 10 as a property: a chat response parsed whole and the same response streamed
(cut at arbitrary points, channels interleaved) fold into byte-identical stored turns.

The generator produces what the chat-completions providers really send: ``reasoning_content``
/ ``reasoning`` text, OpenRouter ``reasoning_details`` (text with late signatures, summaries,
encrypted entries first streamed as ``[REDACTED]``), Copilot ``reasoning_text`` +
``reasoning_opaque`` (an early opaque superseded by the final one), Gemini-compat message and
per-call signatures, ``<think>`` tags and Mistral thinking lists in ``content``, parallel tool
calls, usage with reasoning tokens.
"""

from __future__ import annotations

import itertools
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sse_cuts import fold_sse

from hermes.agent.provider import sse_events
from hermes.core.errors import StreamError
from hermes.core.messages import Reasoning, RouteKey, Text, ToolCall, dumps
from hermes.core.stream import Accumulator, Response
from hermes.wire.openai_chat import ChatDecoder

ORIGIN = RouteKey("openrouter", "openrouter.ai", "m", "openai_chat")
_txt = st.text(alphabet=string.ascii_letters + " .,\n<>/é思", min_size=0, max_size=40)
_word = st.text(alphabet=string.ascii_letters + string.digits + "+/=", min_size=4, max_size=24)


@dataclass
class Spec:
    source: str  # where readable reasoning comes from
    reasoning: str
    content: str
    details: list[dict[str, Any]] = field(default_factory=list)
    copilot_opaque: str | None = None
    copilot_decoy: str | None = None
    msg_sig: str | None = None
    calls: list[tuple[str, str, str, str, str]] = field(default_factory=list)
    """(id, name, arguments, sig style none/copilot/gemini, signature)."""
    usage: dict[str, Any] | None = None
    finish: str = "stop"


@st.composite
def details_entries(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["text", "summary", "encrypted"]))
        e: dict[str, Any] = {"type": f"reasoning.{kind}"}
        if kind == "text":
            e["text"] = draw(_txt)
            e["signature"] = draw(st.one_of(st.none(), _word))
        elif kind == "summary":
            e["summary"] = draw(_txt)
        else:
            e["data"] = draw(_word)
        if draw(st.booleans()):
            e["id"] = f"rs_{i}"
        e["format"] = draw(st.sampled_from(["anthropic-claude-v1", "google-gemini-v1", "openai-responses-v1"]))
        # gateways give a readable and an encrypted entry the same index: share one when the
        # type differs (a stream joins fragments within one index *and* type)
        shared = out[-1]["index"] if out and draw(st.booleans()) else i
        e["index"] = shared if not any(o["index"] == shared and o["type"] == e["type"] for o in out) else i + 10
        out.append(e)
    return out


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    source = draw(st.sampled_from(["reasoning_content", "reasoning", "both", "copilot", "think", "mistral", "none"]))
    reasoning = draw(_txt) if source != "none" else ""
    if source in ("both", "reasoning_content", "reasoning") and not reasoning:
        reasoning = "r"
    content = draw(_txt)
    calls = []
    for i in range(draw(st.integers(0, 3))):
        style = draw(st.sampled_from(["none", "copilot", "gemini"]))
        args = orjson.dumps({"path": draw(_txt), "n": i}).decode()
        calls.append((f"call_{i}_{draw(_word)}", f"tool_{i}", args, style, draw(_word)))
    usage = None
    if draw(st.booleans()):
        usage = {"prompt_tokens": 11, "completion_tokens": 40,
                 "completion_tokens_details": {"reasoning_tokens": draw(st.integers(0, 30))}, "total_tokens": 51}
    opaque = draw(st.one_of(st.none(), _word))
    return Spec(
        source=source,
        reasoning=reasoning,
        content=content,
        details=draw(details_entries()),
        copilot_opaque=opaque,
        copilot_decoy=draw(st.one_of(st.none(), _word)) if opaque else None,
        msg_sig=draw(st.one_of(st.none(), _word)),
        calls=calls,
        usage=usage,
        finish="tool_calls" if calls else "stop",
    )


def _full_content(s: Spec) -> Any:
    if s.source == "think":
        return f" <think>{s.reasoning}</think>\n\n{s.content}"
    if s.source == "mistral":
        items: list[Any] = [{"type": "thinking", "thinking": [{"type": "text", "text": s.reasoning}]}]
        if s.content:
            items.append({"type": "text", "text": s.content})
        return items
    return s.content or None


def whole_payload(s: Spec) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": _full_content(s)}
    if s.source in ("reasoning_content", "both"):
        msg["reasoning_content"] = s.reasoning
    if s.source in ("reasoning", "both"):
        msg["reasoning"] = s.reasoning
    if s.source == "copilot" and s.reasoning:
        msg["reasoning_text"] = s.reasoning
    if s.copilot_opaque:
        msg["reasoning_opaque"] = s.copilot_opaque
    if s.details:
        msg["reasoning_details"] = s.details
    if s.msg_sig:
        msg["extra_content"] = {"google": {"thought_signature": s.msg_sig}}
    if s.calls:
        msg["tool_calls"] = []
        for cid, name, args, style, sig in s.calls:
            fn: dict[str, Any] = {"name": name, "arguments": args}
            call: dict[str, Any] = {"id": cid, "type": "function", "function": fn}
            if style == "copilot":
                fn["thought_signature"] = sig
            elif style == "gemini":
                call["extra_content"] = {"google": {"thought_signature": sig}}
            msg["tool_calls"].append(call)
    payload: dict[str, Any] = {"id": "gen-1", "object": "chat.completion",
                               "choices": [{"index": 0, "message": msg, "finish_reason": s.finish}]}
    if s.usage:
        payload["usage"] = s.usage
    return payload


def _cut(draw: st.DrawFn, text: str) -> list[str]:
    if not text:
        return []
    points = sorted(set(draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=6))))
    bounds = [0, *[p for p in points if p < len(text)], len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def _detail_fragments(draw: st.DrawFn, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    frags: list[dict[str, Any]] = []
    for e in entries:
        kind = e["type"]
        if kind == "reasoning.encrypted":
            if draw(st.booleans()):
                frags.append({**e, "data": "[REDACTED]"})
                frags.append({"type": kind, "data": e["data"], "index": e["index"]})
            else:
                frags.append(dict(e))
            continue
        key = "text" if kind == "reasoning.text" else "summary"
        pieces = _cut(draw, e[key]) or [""]
        first = dict(e)
        first[key] = pieces[0]
        late_sig = kind == "reasoning.text" and bool(e.get("signature"))
        if late_sig:
            first["signature"] = ""
        frags.append(first)
        frags += [{"type": kind, key: p, "index": e["index"]} for p in pieces[1:]]
        if late_sig:
            frags.append({"type": kind, key: "", "signature": e["signature"], "index": e["index"]})
    return [{"reasoning_details": [f]} for f in frags]


def _call_fragments(draw: st.DrawFn, s: Spec) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, (cid, name, args, style, sig) in enumerate(s.calls):
        pieces = _cut(draw, args) or [""]
        frags: list[dict[str, Any]] = [{"index": i, "id": cid, "type": "function",
                                        "function": {"name": name, "arguments": pieces[0]}}]
        frags += [{"index": i, "function": {"arguments": p}} for p in pieces[1:]]
        if style != "none":
            at = draw(st.integers(0, len(frags) - 1))
            if style == "copilot":
                frags[at]["function"]["thought_signature"] = sig
            else:
                frags[at]["extra_content"] = {"google": {"thought_signature": sig}}
        out += [{"tool_calls": [f]} for f in frags]
    return out


def _content_deltas(draw: st.DrawFn, s: Spec) -> list[dict[str, Any]]:
    full = _full_content(s)
    if isinstance(full, list):
        out: list[dict[str, Any]] = [
            {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": p}]}]}
            for p in _cut(draw, s.reasoning)
        ]
        return out + [{"content": [{"type": "text", "text": p}]} for p in _cut(draw, s.content)]
    return [{"content": p} for p in _cut(draw, full or "")]


def _interleave(draw: st.DrawFn, channels: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Merge channels in a random order, keeping each channel's own order."""
    queues = [list(c) for c in channels if c]
    out = []
    while queues:
        q = queues[draw(st.integers(0, len(queues) - 1))]
        out.append(q.pop(0))
        queues = [x for x in queues if x]
    return out


@st.composite
def streamed(draw: st.DrawFn, s: Spec) -> list[str]:
    """SSE lines for the same response as ``whole_payload(s)``."""
    reasoning: list[dict[str, Any]] = []
    for p in _cut(draw, s.reasoning):
        if s.source == "both":
            reasoning.append({"reasoning_content": p, "reasoning": p})
        elif s.source in ("reasoning_content", "reasoning"):
            reasoning.append({s.source: p})
        elif s.source == "copilot":
            reasoning.append({"reasoning_text": p})
    opaque = []
    if s.copilot_decoy:
        opaque.append({"reasoning_opaque": s.copilot_decoy})
    if s.copilot_opaque:
        opaque.append({"reasoning_opaque": s.copilot_opaque})
    sig = [{"extra_content": {"google": {"thought_signature": s.msg_sig}}}] if s.msg_sig else []
    # text must open before the first tool call (chat order), so content + calls is one channel
    body = _content_deltas(draw, s) + _call_fragments(draw, s)
    deltas = _interleave(draw, [reasoning, _detail_fragments(draw, s.details), opaque, sig, body])
    chunks: list[dict[str, Any]] = [{"id": "gen-1", "object": "chat.completion.chunk",
                                     "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    chunks += [{"id": "gen-1", "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({"id": "gen-1", "choices": [{"index": 0, "delta": {}, "finish_reason": s.finish}]})
    if s.usage:
        chunks.append({"id": "gen-1", "choices": [], "usage": s.usage})
    lines = [": OPENROUTER PROCESSING", ""]
    for c in chunks:
        lines += [f"data: {orjson.dumps(c).decode()}", ""]
    return [*lines, "data: [DONE]", ""]


def fold_stream(lines: list[str], think_tags: bool, cuts: Sequence[int] = (), *, batched: bool = True) -> Response:
    """Fold the SSE body of ``lines`` as it would arrive cut into chunks at byte offsets
    ``cuts``: through the product path (a batch of events per chunk) or event by event."""
    body = "".join(f"{line}\n" for line in lines).encode()
    return fold_sse(body, cuts, ChatDecoder(think_tags=think_tags), ORIGIN, batched=batched)


def _chunks(body: str, cuts: Sequence[int]) -> list[str]:
    bounds = [0, *sorted({c % (len(body) + 1) for c in cuts}), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


def fold_whole(payload: dict[str, Any], think_tags: bool) -> Response:
    return Accumulator(ORIGIN).feed_all(ChatDecoder(think_tags=think_tags).from_wire(payload)).result()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), s=specs())
def test_stream_and_whole_fold_to_the_same_turn(data: st.DataObject, s: Spec) -> None:
    think = s.source == "think"
    whole = fold_whole(whole_payload(s), think)
    lines = data.draw(streamed(s))
    cuts = data.draw(st.lists(st.integers(0, 10**6), max_size=12), label="cuts")
    for batched in (True, False):
        stream = fold_stream(lines, think, cuts, batched=batched)
        assert dumps(stream.message) == dumps(whole.message)
        assert (stream.finish_reason, dict(stream.usage)) == (whole.finish_reason, dict(whole.usage))
    _check_meaning(whole, s)


def _check_meaning(r: Response, s: Spec) -> None:
    """The shared result is also the right one (both paths could agree on a wrong answer)."""
    parts = r.message.parts
    reasoning = [p for p in parts if isinstance(p, Reasoning)]
    expect_text = s.reasoning
    native = bool(s.copilot_opaque or s.msg_sig or any(c[3] != "none" for c in s.calls)
                  or (s.source == "copilot" and s.reasoning))
    if expect_text or s.details or native:
        assert len(reasoning) == 1 and parts[0] is reasoning[0]
        rp = reasoning[0]
        assert rp.text == expect_text
        assert rp.origin == ORIGIN
        if s.details:
            assert rp.blob_kind == "openrouter.details"
            assert rp.blob == orjson.dumps(s.details).decode()  # same entries, keys and bytes
        if native:
            assert rp.native is not None
            assert rp.native.reasoning_opaque == s.copilot_opaque
            assert rp.native.thought_signature == s.msg_sig
            assert rp.native.tool_signatures == tuple((c[0], c[4]) for c in s.calls if c[3] != "none")
            if s.source == "copilot" and s.reasoning:
                assert rp.native.reasoning_text == s.reasoning
    else:
        assert not reasoning
    texts = [p for p in parts if isinstance(p, Text)]
    # after </think> leading whitespace is dropped (split_think's documented rule)
    assert "".join(t.text for t in texts) == (s.content.lstrip() if s.source == "think" else s.content)
    calls = [p for p in parts if isinstance(p, ToolCall)]
    assert [(c.id, c.name, c.arguments) for c in calls] == [(c[0], c[1], c[2]) for c in s.calls]
    if s.usage:
        assert r.usage["completion_tokens_details"]["reasoning_tokens"] == s.usage["completion_tokens_details"]["reasoning_tokens"]


@settings(max_examples=60, deadline=None)
@given(data=st.data(), s=specs())
def test_stream_without_finish_is_truncated(data: st.DataObject, s: Spec) -> None:
    lines = data.draw(streamed(s))
    cut = next(i for i, line in enumerate(lines) if '"finish_reason":"' in line)
    with pytest.raises(StreamError, match="truncated"):
        fold_stream(lines[:cut], s.source == "think")


@pytest.mark.parametrize(
    ("content", "reasoning", "text"),
    [
        ("<think>a</think>b", "a", "b"),
        ("\n <think>a\nb</think>\n\n c", "a\nb", "c"),
        ("<think>unclosed", "unclosed", ""),
        ("plain <think>x</think>", "", "plain <think>x</think>"),
        ("<thin", "", "<thin"),
        ("   ", "", "   "),
        ("<think></think>", "", ""),
    ],
)
def test_think_tags_split_the_same_way_in_every_cut(content: str, reasoning: str, text: str) -> None:
    whole = {"choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}
    want = fold_whole(whole, True)
    assert want.message.text == text
    assert "".join(p.text for p in want.message.reasoning) == reasoning
    for size in range(1, len(content) + 1):
        pieces = [content[i:i + size] for i in range(0, len(content), size)]
        lines = []
        for p in pieces:
            lines += [f"data: {orjson.dumps({'choices': [{'delta': {'content': p}}]}).decode()}", ""]
        lines += ['data: {"choices":[{"delta":{},"finish_reason":"stop"}]}', ""]
        assert dumps(fold_stream(lines, True).message) == dumps(want.message), size


def test_think_tags_are_text_on_routes_without_them() -> None:
    whole = {"choices": [{"message": {"role": "assistant", "content": "<think>a</think>b"}, "finish_reason": "stop"}]}
    r = fold_whole(whole, False)
    assert r.message.text == "<think>a</think>b" and not r.message.reasoning


def _spec_events(lines: list[str]) -> list[tuple[str, str]]:
    """The SSE rules line by line, as the HTML standard states them (the oracle for ``sse_events``):
    a blank line dispatches, ``:`` starts a comment, one space after the colon is dropped,
    ``data`` lines join with newlines, an event without data is not dispatched; a body's last
    event is dispatched even without its blank line (some servers close right after it)."""
    out, event, data = [], "", []
    for line in [*lines, ""]:
        if not line:
            if data:
                out.append((event or "message", "\n".join(data)))
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
    return out


_sse_line = st.one_of(
    st.builds(lambda v: f"data: {v}", _txt.filter(lambda t: "\n" not in t and "\r" not in t)),
    st.builds(lambda v: f"data:{v}", st.sampled_from(["", "x", " two spaces", "{}"])),
    st.sampled_from(["", "", "", "event: message_start", "event:delta", ": keep-alive", ":", "id: 7", "retry: 10",
                     "data", "event", "data: [DONE]"]),
)


@settings(max_examples=400, deadline=None)
@given(lines=st.lists(_sse_line, max_size=30), ends=st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=1),
       cuts=st.lists(st.integers(0, 10**6), max_size=10), last_end=st.booleans())
def test_sse_events_follow_the_line_rules_however_the_body_is_cut(
        lines: list[str], ends: list[str], cuts: list[int], last_end: bool) -> None:
    body = "".join(line + ends[i % len(ends)] for i, line in enumerate(lines))
    if lines and not last_end:  # the connection closed right after the last line
        body = body[: -len(ends[(len(lines) - 1) % len(ends)])]
    # "\r" then an empty line's "\n" is one CRLF: the body, not ``lines``, says where lines end
    assert list(sse_events(_chunks(body, cuts))) == _spec_events(re.split("\r\n|\r|\n", body))


def test_sse_events_keep_a_split_crlf_as_one_line_end() -> None:
    body = "data: a\r\n\r\ndata: b\r\n\r\n"
    for at in range(len(body) + 1):
        assert list(sse_events([body[:at], body[at:]])) == [("message", "a"), ("message", "b")], at


# ----------------------------------------------------------------------------- a row's own paths

def _fold(datas: list[str]) -> tuple[str, Any]:
    """The stored turn (or the error) from ``datas`` on a row whose signature paths are its
    own, not the built-in table's."""
    dec, acc = ChatDecoder(call_signature="meta.sig", text_signature="sig.text"), Accumulator(ORIGIN)
    try:
        r = acc.feed_all(dec.decode_events([("message", d) for d in datas])).result()
    except StreamError as e:
        return "error", str(e)
    return "turn", (dumps(r.message), r.finish_reason, dict(r.usage))


def test_signatures_are_read_at_the_rows_own_paths() -> None:
    """A row with its own signature paths: the text and call signatures are read there."""
    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return orjson.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).decode()

    datas = [chunk({"content": "a"}), chunk({"content": "b", "sig": {"text": "S"}}),
             chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "ls", "arguments": ""}}]}),
             chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
             chunk({"tool_calls": [{"index": 0, "function": {"arguments": ""}, "meta": {"sig": "T"}}]}),
             chunk({}, "tool_calls")]
    folded = _fold(datas)
    assert folded[0] == "turn"
    turn = orjson.loads(folded[1][0])
    assert turn["parts"][0]["native"]["thought_signature"] == "S"
    assert turn["parts"][0]["native"]["tool_signatures"] == [["c1", "T"]]
