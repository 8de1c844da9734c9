"""Kept runs: a stored session's earlier messages, already built, spliced into a request whole.

A new process that resumes a long session (``hermes chat -q --resume``, a gateway turn on a
session this worker has not seen) would otherwise plan and render every stored message
before its first request. Instead, after each turn the builder keeps (``hermes.kept``) the
request items of the messages before that turn's open tool loop as one *run*: their
serialised wire items in one piece, their summed token cost, their request-log tally, and the
digests of the messages they were built from. The next request — in any process — splices
the runs whose digests match the stored history, and plans and renders only what follows.

A run holds only what a per-message build would produce under rules that cannot change
without changing the request context (``memo.context``: route row, host, model, profile,
lessons, build format): its messages are before the open loop, no tool-call id of the
request is rewritten, thinking is on, and on a wire that merges same-side messages into one
turn the run starts a turn of its own. The planner uses runs only when the request it builds
meets the same conditions (``planner``); otherwise it plans every message, so a body built
from runs is always the body a build without them sends.

Runs form one chain per session and context, from the window start (the latest compaction
checkpoint, or the first message) on. The chain is kept short by merging: a new run absorbs
the runs before it while they are not larger than it (the sizes then halve along the chain,
so a session of *n* turns holds about log₂ *n* runs, and each message is rewritten about as
many times over the session's life).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Run", "closing_side", "matching", "merged"]


@dataclass(frozen=True, slots=True)
class Run:
    """Stored messages ``first`` … ``end - 1`` as one request would carry them."""

    first: int
    end: int
    window: int
    """The window start the chain begins at (a run is only used after the runs before it)."""
    digests: bytes
    """The messages' digests (``Message.digest``, 16 bytes each), concatenated: the run is used
    only for exactly these message values."""
    body: bytes
    """The wire's request items for these messages (chat messages, or Anthropic turns),
    serialised and comma-separated; ``b""`` when they render nothing."""
    system: str
    """System text these messages add (a wire that sends system text beside the messages)."""
    cost: int
    """Summed raw token cost (``estimate.message_cost``) on the context's pricing basis."""
    tally: Any
    """The request-log tally of these messages (a ``logs.Tally``, read-only: read back and
    checked once, when the run is restored)."""
    opens: str | None
    """Side of the first turn the run opens (``"user"``/``"assistant"``), None if it opens none."""
    closes: str | None
    """Side of the last turn the run opens, None if it opens none."""
    ids_ok: bool
    """Every tool-call id in the run is one the route accepts as it is."""

    @property
    def size(self) -> int:
        return self.end - self.first


def closing_side(runs: Sequence[Run]) -> str | None:
    """Side of the last turn the chain ``runs`` opens (what a following message may not join)."""
    for r in reversed(runs):
        if r.closes is not None:
            return r.closes
    return None


def matching(runs: Sequence[Run], digests: Sequence[bytes], limit: int) -> tuple[Run, ...]:
    """The leading runs of the chain whose messages are the history's (by digest) and end at or
    before ``limit`` (the open loop's start); the chain must begin at its window start."""
    out: list[Run] = []
    if not runs or runs[0].first != runs[0].window:
        return ()
    pos, window = runs[0].first, runs[0].window
    joined = b"".join
    for r in runs:
        if r.first != pos or r.window != window or r.end > limit or r.end > len(digests):
            break
        if joined(digests[r.first:r.end]) != r.digests:
            break
        out.append(r)
        pos = r.end
    return tuple(out)


def merged(a: Run, b: Run, tally: Any) -> Run:
    """Run ``a`` followed by run ``b`` as one run (``tally``: their tallies merged, by the log)."""
    return Run(a.first, b.end, a.window, a.digests + b.digests,
               a.body + b"," + b.body if a.body and b.body else a.body or b.body,
               "\n\n".join(s for s in (a.system, b.system) if s), a.cost + b.cost, tally,
               a.opens if a.opens is not None else b.opens, b.closes if b.closes is not None else a.closes,
               a.ids_ok and b.ids_ok)
