"""An SSE body as the network delivers it: bytes cut anywhere (inside a UTF-8 character, a
``\\r\\n``, an event name, a JSON string), decoded to text chunks the way httpx's ``iter_text``
does, then folded through the product path (``sse_batches`` → ``Decoder.decode_events`` →
``Accumulator``) or event by event (``sse_events`` → ``decode_event``)."""

from __future__ import annotations

import codecs
import itertools
from collections.abc import Sequence

from hermes.agent.provider import sse_batches, sse_events
from hermes.core.messages import RouteKey
from hermes.core.stream import Accumulator, Response
from hermes.wire import Decoder

__all__ = ["fold_sse", "text_chunks"]


def text_chunks(body: bytes, cuts: Sequence[int]) -> list[str]:
    """``body`` cut at the byte offsets ``cuts`` (taken modulo its length + 1), each piece
    decoded by one incremental UTF-8 decoder (a character cut in two arrives whole, later)."""
    bounds = [0, *sorted({c % (len(body) + 1) for c in cuts}), len(body)]
    dec = codecs.getincrementaldecoder("utf-8")()
    out = [dec.decode(body[a:b]) for a, b in itertools.pairwise(bounds)]
    out.append(dec.decode(b"", final=True))
    return [c for c in out if c]


def fold_sse(body: bytes, cuts: Sequence[int], decoder: Decoder, origin: RouteKey, *, batched: bool = True) -> Response:
    acc = Accumulator(origin)
    if batched:
        for batch in sse_batches(text_chunks(body, cuts)):
            acc.feed_all(decoder.decode_events(batch))
    else:
        for event, data in sse_events(text_chunks(body, cuts)):
            acc.feed_all(decoder.decode_event(event, data))
    return acc.result()
