"""Kept runs: a stored session's earlier messages, already built, spliced into a request whole.

A new process that resumes a long session (``hermes chat -q --resume``, a gateway turn on a
session this worker has not seen) would otherwise plan and render every stored message
before its first request. Instead, after each turn the builder keeps (``Builder.keep``) the
request items of the messages before that turn's open tool loop as one *run*: their
serialised wire items in one piece, their summed token cost, their request-log tally, and the
digests of the messages they were built from. The next request — in any process — splices
the runs whose digests match the stored history, and plans and renders only what follows.

A run holds only what a per-message build would produce under rules that cannot change
without changing the request context (``memo.context``: route row, host, model, profile,
lessons, build format): its messages are before the open loop, no tool-call id of the
request is rewritten, thinking is on, and on a wire that merges same-side messages into one
turn the run starts a turn of its own. The builder uses runs only when the request it builds
meets the same conditions (``Builder.plan``); otherwise it plans every message, so a body
built from runs is always the body a build without them sends.

A failure to read or write runs never fails a turn: it costs a build of every message; a
stored row that does not decode is a miss (``run_of``).

Runs form one chain per session and context, from the window start (the latest compaction
checkpoint, or the first message) on. The chain is kept short by merging: a new run absorbs
the runs before it while they are not larger than it (the sizes then halve along the chain,
so a session of *n* turns holds about log₂ *n* runs, and each message is rewritten about as
many times over the session's life).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from ..replay import Run
from ..store.requestlog import Tally

if TYPE_CHECKING:
    from ..store import RunRow

__all__ = ["chain_of", "closing_side", "matching", "merged", "run_of", "state_of"]


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


def chain_of(rows: Sequence[RunRow]) -> list[Run]:
    """The chain of stored ``rows`` (``SessionStore.load_runs`` for one context): from the
    window start on, as far as each row decodes and follows the one before."""
    chain: list[Run] = []
    for row in rows:
        run = run_of(row)
        follows = run is not None and ((chain[-1].end, chain[-1].window) == (run.first, run.window) if chain
                                       else run.first == run.window)
        if run is None or not follows:
            break
        chain.append(run)
    return chain


def run_of(row: RunRow) -> Run | None:
    """A stored row as a run; None when its state does not decode (a miss, built again)."""
    first, end, window, ds, body, cost, state = row
    try:
        st = orjson.loads(state)
        t = Tally.from_json(st["tally"])
        system, opens, closes, ids_ok = st["system"], st["opens"], st["closes"], st["ids_ok"]
    except (orjson.JSONDecodeError, TypeError, ValueError, KeyError, AttributeError):
        return None
    if not (isinstance(system, str) and opens in (None, "user", "assistant") and closes in (None, "user", "assistant")
            and isinstance(ids_ok, bool)):
        return None
    return Run(first, end, window, ds, body, system, cost, t, opens, closes, ids_ok)


def state_of(run: Run) -> str:
    """What a stored row keeps of ``run`` beside its columns (the inverse of ``run_of``)."""
    return orjson.dumps({"system": run.system, "tally": run.tally.to_json(), "opens": run.opens,
                         "closes": run.closes, "ids_ok": run.ids_ok}).decode()
