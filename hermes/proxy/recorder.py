"""The side decoder: what a response thought, read next to the bytes relayed to the client.

The relay never waits for it: each raw chunk is handed to the client unchanged, and a copy is
fed here. The recorder decodes the bytes as UTF-8 incrementally (a character cut between two
chunks is joined, as httpx does for ``hermes chat``), splits events with the same
``provider.SSESplitter`` Hermes's own client uses, decodes each with the route's
``ChatDecoder`` (a native-wire route's answer, to a front door: that wire's own decoder) and folds the deltas with the same ``Accumulator`` — so the proxy stores exactly
the turn Hermes itself would have stored. A response it cannot read (malformed, truncated, an
error) records nothing and changes nothing for the client.
"""

from __future__ import annotations

import codecs

import orjson

from ..agent.provider import SSESplitter
from ..core.errors import HermesError
from ..core.messages import Message
from ..core.stream import Accumulator, Delta, Response
from ..routing.resolve import Resolved
from ..wire import Decoder, get_wire
from ..wire.chat_decode import decoder

__all__ = ["Recorder"]


class Recorder:
    """Fold one response (streamed or whole) into the assistant turn it carried."""

    __slots__ = ("_acc", "_dec", "_split", "_text", "failed", "prefix", "recorded", "route")

    def __init__(self, target: Resolved, prefix: str = "") -> None:
        self.route = target.route.key
        self.prefix = prefix
        """The conversation the turn follows (``Rewrite.prefix``): part of its memory key."""
        self.recorded = False
        wire = target.route.wire
        self._dec: Decoder = decoder(target) if wire == "openai_chat" else get_wire(wire).decoder(target)
        self._acc = Accumulator(target.key)
        self._text = codecs.getincrementaldecoder("utf-8")("replace")
        self._split = SSESplitter()
        self.failed = False

    # --- streamed -----------------------------------------------------------------------
    def feed(self, chunk: bytes) -> list[Delta]:
        """Raw SSE bytes as they arrived: the deltas they completed (a front door renders
        them for its client). Never raises: a bad stream records nothing, and yields nothing more."""
        if self.failed:
            return []
        out: list[Delta] = []
        try:
            for event, data in self._split.feed(self._text.decode(chunk)):
                for d in self._dec.decode_event(event, data):
                    self._acc.feed(d)
                    out.append(d)
        except (HermesError, TypeError, ValueError):
            self.failed = True
        return out

    # --- whole --------------------------------------------------------------------------
    def whole(self, content: bytes) -> None:
        try:
            for d in self._dec.from_wire(orjson.loads(content)):
                self._acc.feed(d)
        except (HermesError, TypeError, ValueError):
            self.failed = True

    def snapshot(self) -> Message | None:
        """The turn as folded so far (a door seals the reasoning known mid-stream); None when
        the stream failed or what it holds is malformed."""
        if self.failed:
            return None
        try:
            return self._acc.snapshot()
        except HermesError:
            return None

    def result(self) -> Response | None:
        """The finished turn with its finish reason and usage; None as for ``message``."""
        if not self.finished:
            return None
        try:
            return self._acc.result()
        except HermesError:
            return None

    @property
    def finished(self) -> bool:
        """The finish arrived: the turn is complete (usage may still follow)."""
        return not self.failed and self._acc.finished

    def message(self) -> Message | None:
        """The finished turn, or None when the response did not finish cleanly."""
        if not self.finished:
            return None
        try:
            return self._acc.result().message
        except HermesError:
            return None
