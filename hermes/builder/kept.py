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
lessons, build format): its messages are before the open loop, thinking is on, and on a wire
that merges same-side messages into one turn the run starts a turn of its own. On a route that
rewrites tool-call ids (``routing.toolids``) a run also keeps the ids it was built with (stored
id → id sent): the request's mapping is that mapping grown by the ids after the runs, exactly
as the whole history's would be, unless a later id sent as it is equals one the runs renamed
(then the whole history steps around it, and the runs are not used). The builder uses runs only
when the request it builds meets these conditions (``Builder.plan``); otherwise it plans every
message, so a body built from runs is always the body a build without them sends.

A failure to read or write runs never fails a turn: it costs a build of every message; a
stored row that does not decode is a miss (``run_of``).

Runs form one chain per session and context, from the window start (the latest compaction
checkpoint, or the first message) on. The chain is kept short by merging: a new run absorbs
the runs before it while they are not larger than it (the sizes then halve along the chain,
so a session of *n* turns holds about log₂ *n* runs, and each message is rewritten about as
many times over the session's life).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from ..replay import Run
from ..store.requestlog import Tally

if TYPE_CHECKING:
    from ..store import RunRow

__all__ = ["chain_of", "closing_side", "id_state", "matching", "merged", "run_of", "state_of"]


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
               {**a.renamed, **b.renamed}, tuple(dict.fromkeys(a.as_is + b.as_is)))


def id_state(runs: Sequence[Run]) -> tuple[dict[str, str], set[str]]:
    """The tool-call id mapping the chain ``runs`` was built under, as ``toolids.extend_id_map``
    takes it: (stored id → id sent, for the ids it renamed; every id it sent)."""
    mapping: dict[str, str] = {}
    taken: set[str] = set()
    for r in runs:
        mapping.update(r.renamed)
        taken.update(r.as_is)
        taken.update(r.renamed.values())
    return mapping, taken


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
        system, opens, closes, renamed, as_is = st["system"], st["opens"], st["closes"], st["renamed"], st["as_is"]
    except (orjson.JSONDecodeError, TypeError, ValueError, KeyError, AttributeError):
        return None
    if not (isinstance(system, str) and opens in (None, "user", "assistant") and closes in (None, "user", "assistant")
            and type(renamed) is dict and _strings(renamed.values()) and type(as_is) is list and _strings(as_is)):
        return None
    return Run(first, end, window, ds, body, system, cost, t, opens, closes, renamed, tuple(as_is))


def _strings(values: Iterable[Any]) -> bool:
    return set(map(type, values)) <= {str}


def state_of(run: Run) -> str:
    """What a stored row keeps of ``run`` beside its columns (the inverse of ``run_of``)."""
    return orjson.dumps({"system": run.system, "tally": run.tally.to_json(), "opens": run.opens,
                         "closes": run.closes, "renamed": run.renamed, "as_is": run.as_is}).decode()
