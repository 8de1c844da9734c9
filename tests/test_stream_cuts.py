"""Invariant 10 across wires: the SSE body of a response, cut into network reads at any byte
(inside a UTF-8 character, between ``\\r`` and ``\\n``, inside an event name or a JSON
string), folds through the product path — ``sse_batches`` → ``decode_events`` → fold — into
exactly the turn its whole (non-streamed) response gives. The chat wire's version, with every
reasoning shape of that wire, is in ``test_stream_fold.py``; the response generators here are
the ones each wire's own tests use."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sse_cuts import fold_sse
from test_anthropic import _blocks
from test_anthropic import _events as anthropic_events
from test_gemini import _part
from test_responses import _responses

from hermes.core.stream import fold
from hermes.emulate.openai_responses import stream_events
from hermes.routing.resolve import resolve
from hermes.wire import anthropic, gemini, openai_responses

_cuts = st.lists(st.integers(0, 10**6), max_size=12)


def _body(events: list[tuple[str, str]], end: str = "\n") -> bytes:
    return "".join(f"event: {e}{end}data: {d}{end}{end}" for e, d in events).encode()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks=_blocks, data=st.data(), cuts=_cuts)
def test_anthropic_stream_cut_at_any_byte_folds_to_the_whole(blocks: list[dict[str, Any]], data: st.DataObject,
                                                            cuts: list[int]) -> None:
    target = resolve("anthropic", None, "claude-opus-4-6")
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-6", "content": blocks,
           "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 5}}
    whole = fold(target.key, anthropic.from_wire(orjson.loads(orjson.dumps(msg))))
    body = _body(anthropic_events(msg, data))
    assert fold_sse(body, cuts, anthropic.decoder(target), target.key) == whole


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(resp=_responses(), cuts=_cuts, crlf=st.booleans())
def test_responses_stream_cut_at_any_byte_folds_to_the_whole(resp: dict[str, Any], cuts: list[int],
                                                            crlf: bool) -> None:
    target = resolve("openai-responses", "http://127.0.0.1:1/v1", "gpt-5")
    whole = fold(target.key, openai_responses.from_wire(resp))
    events = [(e, orjson.dumps(d).decode()) for e, d in stream_events(resp)]
    body = _body(events, "\r\n" if crlf else "\n")
    assert fold_sse(body, cuts, openai_responses.decoder(target), target.key) == whole


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(_part, min_size=1, max_size=6), groups=st.lists(st.integers(1, 3), min_size=1, max_size=4),
       cuts=_cuts)
def test_gemini_stream_cut_at_any_byte_folds_to_the_whole(parts: list[dict[str, Any]], groups: list[int],
                                                         cuts: list[int]) -> None:
    calls = [p["functionCall"] for p in parts if "functionCall" in p]
    ids = [c.get("id") for c in calls if c.get("id")]
    anon = [orjson.dumps(c, option=orjson.OPT_SORT_KEYS) for c in calls if not c.get("id")]
    if len(set(ids)) != len(ids) or len(set(anon)) != len(anon):
        return  # call ids are unique within a turn; id-less calls are told apart by content
    target = resolve("gemini", None, "gemini-3-pro-preview")
    usage = {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5}
    payload = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
               "usageMetadata": usage}
    whole = fold(target.key, gemini.from_wire(payload))
    chunks, at, n = [], 0, 0
    while at < len(parts):  # the parts in chunks of the sizes ``groups``, then the finish
        size = groups[n % len(groups)]
        chunks.append({"candidates": [{"content": {"role": "model", "parts": parts[at:at + size]}, "index": 0}],
                       "usageMetadata": usage})
        at, n = at + size, n + 1
    chunks.append({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP",
                                   "index": 0}], "usageMetadata": usage})
    body = b"".join(b"data: " + orjson.dumps(c) + b"\r\n\r\n" for c in chunks)  # as the service sends it
    assert fold_sse(body, cuts, gemini.decoder(target), target.key) == whole
