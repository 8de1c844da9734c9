"""Kept build results: a session's earlier messages kept already built, as runs
(``replay.runs``), so the first request of a new process (``hermes chat -q --resume``, a
gateway turn on a session this worker has not seen) splices them whole instead of planning
and rendering the whole history again.

Two side effects at the edges of a turn, around the pure build:

* ``restore`` — before a turn's first request: the store's runs for the request's context
  (``replay.memo.context``: route row, host, model, profile, lessons) go into the
  conversation's ``BuildMemo``. The planner uses them only as far as their digests match
  the stored history, so a run for other message values, another route, profile, model or
  lesson is never used.
* ``keep`` — after a turn committed: the messages before its open tool loop that no run holds
  yet are built (from the memo: nothing is planned twice) and kept as one run, merged with the
  runs before it while they are not larger (``replay.runs``).

Only wires that render message by message (``Wire.render_message``) keep runs. A failure to
read or write them never fails a turn: it costs a build of every message.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import orjson

from .errors import StoreError
from .estimate import plan_costs
from .history import open_loop_start
from .logs import Tally, log_event, tally
from .messages import Message
from .provider import build_body
from .replay import BuildMemo, Learned, Run, Settings, context, plan_replay
from .replay.memo import digests
from .replay.planner import tool_ids_ok
from .replay.runs import merged
from .replay.structure import turn_sides
from .resolve import Resolved
from .wire import get_wire

if TYPE_CHECKING:
    from .store import RunRow, SessionStore

__all__ = ["fill", "keep", "restore"]


def _keeps(target: Resolved) -> bool:
    return get_wire(target.route.wire).render_message is not None


def restore(memo: BuildMemo, store: SessionStore, session_id: str, target: Resolved, learned: Learned) -> int:
    """Load the session's kept runs for this request context into ``memo`` (once per session
    and context); returns how many messages they hold."""
    if not _keeps(target):
        return 0
    ctx = context(target, learned)
    if (session_id, ctx) in memo.restored:
        return 0
    memo.restored.add((session_id, ctx))
    try:
        rows = store.load_runs(session_id, ctx)
    except StoreError as e:
        log_event("kept_results_unreadable", session=session_id, error=str(e)[:200])
        return 0
    return fill(memo, target, learned, rows)


def fill(memo: BuildMemo, target: Resolved, learned: Learned, rows: list[RunRow]) -> int:
    """Put the chain of kept ``rows`` (``SessionStore.load_runs`` for this context) into
    ``memo``: from the window start on, as far as each row decodes and follows the one before;
    returns how many messages the chain holds."""
    chain: list[Run] = []
    for row in rows:
        run = _run(row)
        follows = run is not None and ((chain[-1].end, chain[-1].window) == (run.first, run.window) if chain
                                       else run.first == run.window)
        if run is None or not follows:
            break
        chain.append(run)
    memo.runs[context(target, learned)] = chain
    return sum(r.size for r in chain)


def _run(row: RunRow) -> Run | None:
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


def keep(memo: BuildMemo, store: SessionStore, session_id: str, target: Resolved, learned: Learned,
         history: list[Message]) -> int:
    """Keep the messages of the committed ``history`` before its open tool loop that the
    session's runs do not hold yet, as one run (built through ``memo``: what the turn's
    requests built is reused); returns how many messages it added."""
    if not _keeps(target):
        return 0
    ctx = context(target, learned)
    cut = open_loop_start(history)
    plan = plan_replay(history[:cut], target, learned, Settings(), cache=memo)
    new = plan.messages
    if not new or any(pm.key is None or len(pm.key) != 4 for pm in new):
        return 0  # nothing new, or a request-wide rule rewrote a message: its result is not its own
    wire = target.route.wire
    opens, closes = turn_sides(new, wire)
    if opens is not None and opens == (plan.kept[-1].closes if plan.kept else None):
        return 0  # its first turn would join the run before it
    first = new[0].index
    w = get_wire(wire)
    body = build_body(w, replace(plan, kept=()), memo=memo)
    t = tally(new, memo)
    t.kept = len(new)
    run = Run(first, cut, plan.first, b"".join(digests(history[first:cut])), orjson.dumps(body[w.ITEMS])[1:-1],
              str(body.get("system") or ""), sum(plan_costs(plan, memo)), t, opens, closes,
              tool_ids_ok(new, target.route.tool_ids))
    chain = list(plan.kept)
    while chain and chain[-1].size <= run.size:
        before = chain.pop()
        run = merged(before, run, Tally().extend(before.tally).extend(run.tally))
    state = orjson.dumps({"system": run.system, "tally": run.tally.to_json(), "opens": run.opens, "closes": run.closes,
                          "ids_ok": run.ids_ok}).decode()
    try:
        saved = store.save_run(session_id, ctx, (run.first, run.end, run.window, run.digests, run.body, run.cost,
                                                 state))
    except StoreError as e:
        log_event("kept_results_unwritten", session=session_id, error=str(e)[:200])
        return 0
    memo.runs[ctx] = [*chain, run]  # exact for this process either way
    memo.restored.add((session_id, ctx))
    return len(new) if saved else 0
