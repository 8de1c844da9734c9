"""The proxy's side recorder reads a relayed stream exactly as ``hermes chat`` reads it.

It is fed the raw bytes the network delivered — cut anywhere, including inside a multi-byte
UTF-8 character or between ``\\r`` and ``\\n`` — and must fold the same turn as Hermes's own
client path (``sse_events`` over httpx's text chunks), because both use one splitter.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_stream_fold import Spec, specs, streamed

from hermes.agent.provider import sse_events
from hermes.core.messages import dumps
from hermes.core.stream import Accumulator
from hermes.proxy.recorder import Recorder
from hermes.routing.resolve import resolve
from hermes.wire.chat_decode import decoder

ROWS = {False: ("openrouter", "copilot", "gemini-openai", "deepseek"), True: ("nous", "minimax")}
"""Rows whose responses the strategies can speak: each reads signatures at its own paths."""


def _cut(body: bytes, cuts: Sequence[int]) -> list[bytes]:
    bounds = [0, *sorted({c % (len(body) + 1) for c in cuts}), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), s=specs(), crlf=st.booleans(),
       cuts=st.lists(st.integers(0, 10**6), max_size=16))
def test_recorder_folds_the_turn_hermes_folds(data: st.DataObject, s: Spec, crlf: bool, cuts: list[int]) -> None:
    think = s.source == "think"
    lines = data.draw(streamed(s))
    target = resolve(data.draw(st.sampled_from(ROWS[think])), "http://127.0.0.1:9", "m")
    assert target.route.think_tags is think
    end = "\r\n" if crlf else "\n"
    text = "".join(f"{line}{end}" for line in lines)
    dec, acc = decoder(target), Accumulator(target.key)  # hermes chat's own path
    for event, payload in sse_events([text]):
        acc.feed_all(dec.decode_event(event, payload))
    expected = acc.result()
    rec = Recorder(target)
    body = text.encode()
    for chunk in _cut(body, cuts):
        rec.feed(chunk)
    got = rec.message()
    assert got is not None and rec.finished
    assert dumps(got) == dumps(expected.message)


def test_a_character_cut_between_chunks_is_joined_not_replaced() -> None:
    rec = Recorder(resolve("openrouter", "http://127.0.0.1:9", "m"))
    body = ('data: {"choices":[{"index":0,"delta":{"content":"思考"}}]}\n\n'
            'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n').encode()
    cut = body.index("思".encode()) + 1  # inside the first character's three bytes
    for piece in (body[:cut], body[cut:]):
        rec.feed(piece)
    msg = rec.message()
    assert msg is not None and msg.text == "思考"
