"""The proxy's side recorder reads a relayed stream exactly as ``hermes chat`` reads it.

It is fed the raw bytes the network delivered — cut anywhere, including inside a multi-byte
UTF-8 character or between ``\\r`` and ``\\n`` — and must fold the same turn as Hermes's own
client path (``sse_events`` over httpx's text chunks), because both use one splitter.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_stream_fold import Spec, fold_stream, specs, streamed

from hermes.messages import dumps
from hermes.proxy.recorder import Recorder
from hermes.resolve import resolve


def _cut(body: bytes, cuts: Sequence[int]) -> list[bytes]:
    bounds = [0, *sorted({c % (len(body) + 1) for c in cuts}), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), s=specs(), crlf=st.booleans(),
       cuts=st.lists(st.integers(0, 10**6), max_size=16))
def test_recorder_folds_the_turn_hermes_folds(data: st.DataObject, s: Spec, crlf: bool, cuts: list[int]) -> None:
    think = s.source == "think"
    lines = data.draw(streamed(s))
    expected = fold_stream(lines, think, [])
    target = resolve("nous" if think else "openrouter", "http://127.0.0.1:9", "m")
    assert target.route.think_tags is think
    rec = Recorder(target)
    end = "\r\n" if crlf else "\n"
    body = "".join(f"{line}{end}" for line in lines).encode()
    for chunk in _cut(body, cuts):
        rec.feed(chunk)
    got = rec.message()
    assert got is not None and rec.finished
    assert _without_origin(dumps(got)) == _without_origin(dumps(expected.message))


def _without_origin(text: bytes) -> str:
    """The stored turn with origins blanked (the recorder stamps the proxy target's route)."""
    def strip(x: object) -> object:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k != "origin"}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    return orjson.dumps(strip(orjson.loads(text))).decode()


def test_a_character_cut_between_chunks_is_joined_not_replaced() -> None:
    rec = Recorder(resolve("openrouter", "http://127.0.0.1:9", "m"))
    body = ('data: {"choices":[{"index":0,"delta":{"content":"思考"}}]}\n\n'
            'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n').encode()
    cut = body.index("思".encode()) + 1  # inside the first character's three bytes
    for piece in (body[:cut], body[cut:]):
        rec.feed(piece)
    msg = rec.message()
    assert msg is not None and msg.text == "思考"
