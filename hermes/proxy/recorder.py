"""The side decoder: what a response thought, read next to the bytes relayed to the client.

The relay never waits for it. Each chunk goes to the client first and is fed here after;
the recorder splits SSE events out of raw bytes however the network cut them, decodes each
with the route's ``ChatDecoder`` and folds the deltas with the same ``Accumulator`` as
``hermes chat`` — so the proxy stores exactly the turn Hermes itself would have stored. A
response it cannot read (malformed, truncated, an error) records nothing and changes nothing
for the client.
"""

from __future__ import annotations

import orjson

from ..errors import HermesError
from ..messages import Message
from ..resolve import Resolved
from ..stream import Accumulator
from ..wire.chat_decode import decoder

__all__ = ["Recorder"]


class Recorder:
    """Fold one response (streamed or whole) into the assistant turn it carried."""

    __slots__ = ("_acc", "_buf", "_data", "_dec", "failed", "recorded", "route")

    def __init__(self, target: Resolved) -> None:
        self.route = target.route.key
        self.recorded = False
        self._dec = decoder(target)
        self._acc = Accumulator(target.key)
        self._buf = b""
        self._data: list[bytes] = []
        self.failed = False

    # --- streamed -----------------------------------------------------------------------
    def feed(self, chunk: bytes) -> None:
        """Raw SSE bytes as they arrived; never raises (a bad stream just records nothing)."""
        if self.failed:
            return
        buf = self._buf + chunk if self._buf else chunk
        lines = buf.split(b"\n")
        self._buf = lines.pop()
        try:
            for line in lines:
                self._line(line[:-1] if line.endswith(b"\r") else line)
        except (HermesError, TypeError, ValueError, UnicodeDecodeError):
            self.failed = True

    def _line(self, line: bytes) -> None:
        if line.startswith(b"data:"):
            self._data.append(line[6:] if line[5:6] == b" " else line[5:])
        elif not line and self._data:
            data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
            self._data = []
            for d in self._dec.decode_event("message", data.decode()):
                self._acc.feed(d)

    # --- whole --------------------------------------------------------------------------
    def whole(self, content: bytes) -> None:
        try:
            for d in self._dec.from_wire(orjson.loads(content)):
                self._acc.feed(d)
        except (HermesError, TypeError, ValueError):
            self.failed = True

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
