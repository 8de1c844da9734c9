"""Kept build results: a session's per-message renders, costs and log summaries in the store,
so the first request of a new process (``hermes chat -q --resume``, a gateway turn on a
session this worker has not seen) splices bytes instead of planning and rendering the whole
history again.

Two side effects at the edges of a turn, around the pure build (``replay.memo``):

* ``restore`` — before a turn's first request: the store's rows for the request's context
  (``replay.memo.context``: route row, host, model, profile, lessons) go into the
  conversation's ``BuildMemo``. A row counts only under its message's digest, index and
  loop position, so a row for another message value, another route, profile, model or
  lesson is never found.
* ``keep`` — after a turn committed: the results the memo built for committed messages in
  that context are written (one context per session; ``store.renders``).

Only wires that render message by message (``Wire.render_message``) keep results. The
planner uses a kept result instead of planning a message before the open tool loop, unless a
request-wide rule must read its parts (a tool-id mapping, thinking off on a signed wire):
then those messages are planned again (``replay.planner``).
A failure to read or write kept results never fails a turn: it costs a cold build.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from .errors import StoreError
from .estimate import basis_for, message_cost
from .logs import hashed, log_event, message_summary
from .messages import Message, digest_of
from .replay import BuildMemo, Learned, context
from .replay.memo import render_context
from .resolve import Resolved
from .wire import get_wire

if TYPE_CHECKING:
    from .store import Built, SessionStore

__all__ = ["fill", "keep", "restore"]


def _keeps(target: Resolved) -> bool:
    return get_wire(target.route.wire).render_message is not None


def restore(memo: BuildMemo, store: SessionStore, session_id: str, target: Resolved, learned: Learned) -> int:
    """Load the session's kept results for this request context into ``memo`` (once per
    session and context); returns how many rows were loaded."""
    if not _keeps(target):
        return 0
    ctx = context(target, learned)
    if (session_id, ctx) in memo.restored:
        return 0
    memo.restored.add((session_id, ctx))
    try:
        rows = store.load_renders(session_id, ctx)
    except StoreError as e:
        log_event("kept_results_unreadable", session=session_id, error=str(e)[:200])
        return 0
    return fill(memo, target, learned, rows)


def fill(memo: BuildMemo, target: Resolved, learned: Learned, rows: list[Built]) -> int:
    """Put kept ``rows`` (``SessionStore.load_renders`` for this context) into ``memo``: each
    under its plan key, whole (the render, cost and summary are read from the row when used:
    a new process does one dictionary store per message here)."""
    ctx = context(target, learned)
    kept = memo.kept
    for row in rows:
        kept[(ctx, row[0], row[1], row[2])] = row
    return len(rows)


def keep(memo: BuildMemo, store: SessionStore, session_id: str, target: Resolved, learned: Learned,
         history: list[Message]) -> int:
    """Write the results ``memo`` built for the committed ``history`` in this request context
    that the store does not hold yet; returns how many rows were written."""
    if not _keeps(target):
        return 0
    ctx = context(target, learned)
    rctx = render_context(target.route)
    basis = basis_for(target)
    rows: list[Built] = []
    fresh: list[tuple[object, ...]] = []
    for key, pm in list(memo.plans.items()):
        if len(key) != 4 or key[0] != ctx or key in memo.kept or pm.kept:
            continue
        _, index, digest, loop = key
        if index >= len(history) or digest_of(history[index]) != digest:
            continue  # not a committed message (or not this session's): never kept
        body = memo.renders.get((key, rctx))
        if body is None:
            continue
        cost = memo.costs.get((key, basis.label))
        if cost is None:
            cost = memo.costs[(key, basis.label)] = message_cost(pm, basis)
        summary = memo.summaries.get(key)
        if summary is None:
            summary = memo.summaries[key] = message_summary(pm)
        rows.append((index, digest, loop, body, basis.label, cost, orjson.dumps(hashed(summary)).decode()))
        fresh.append(key)
    if not rows and (session_id, ctx) in memo.restored:
        return 0
    try:
        store.save_renders(session_id, ctx, rows)
    except StoreError as e:
        log_event("kept_results_unwritten", session=session_id, error=str(e)[:200])
        return 0
    memo.kept.update(dict.fromkeys(fresh))
    memo.restored.add((session_id, ctx))
    return len(rows)
