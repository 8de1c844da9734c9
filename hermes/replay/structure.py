"""Turn structure: the repairs a wire's alternation rule needs, decided here and shown as decisions.

Stored history is a list of messages; some wires want strictly alternating user and model
turns and refuse anything else:

* **Anthropic Messages** and **Gemini** merge consecutive same-side messages into one turn
  (tool results are user-side; a message that renders nothing — empty text only — is skipped
  and does not break a run);
* **Bedrock Converse** merges consecutive user-side messages, and where the model would speak
  first, twice in a row or last, inserts a placeholder user turn (Converse wants a user turn
  first and last).

The planner marks each such message (``PlannedMessage.joins`` / ``.placeholder``, and
``ReplayPlan.placeholder_after``) with a ``Decision`` that says why, so ``hermes replay`` shows
every repair; the wire only follows the marks. Chat-completions and Responses take the
messages as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .memo import BuildMemo, shared_prefix
from .plan import Decision, PlannedMessage

__all__ = ["structure", "turn_sides"]

_WHY_ALTERNATE = {
    "anthropic": "the Messages API wants user and assistant turns to alternate",
    "gemini": "Gemini wants user and model turns to alternate",
    "bedrock": "Converse wants user and assistant turns to alternate",
}


def _side(pm: PlannedMessage) -> str:
    return "assistant" if pm.role == "assistant" else "user"


def _renders_nothing(pm: PlannedMessage, wire: str) -> bool:
    """True when the wire has no block for any part (empty text; on Anthropic also an empty
    summary), so the message opens no turn and does not break a run of the other side."""
    for p in pm.parts:  # ``kind`` compares cheaper than isinstance; most messages stop at once
        k = p.kind
        if k == "text":
            if p.text:  # type: ignore[union-attr]
                return False
        elif k != "compaction" or wire != "anthropic" or p.summary:  # type: ignore[union-attr]
            return False
    return True


def _marked(pm: PlannedMessage, cache: BuildMemo | None, *, joins: bool = False, placeholder: bool = False,
            decisions: tuple[Decision, ...]) -> PlannedMessage:
    """``pm`` with its structure marks (memoised under them: the same input, the same result).

    The result keeps ``pm``'s key: marks change neither the message's own render (a wire
    reads them when it assembles turns), nor its cost, nor its log summary (structure
    decisions are not summarised), so those results — kept ones too — are shared."""
    if cache is None or pm.key is None:
        return replace(pm, joins=joins, placeholder=placeholder, decisions=(*pm.decisions, *decisions))
    k = (*pm.key, ("structure", joins, placeholder))
    out = cache.plans.get(k)
    if out is None:
        out = replace(pm, joins=joins, placeholder=placeholder, decisions=(*pm.decisions, *decisions))
        cache.plans[k] = out  # ``out.key`` stays ``pm.key`` (copied by ``replace``)
    return out


def turn_sides(planned: Sequence[PlannedMessage], wire: str) -> tuple[str | None, str | None]:
    """Sides of the first and the last turn ``planned`` opens on a wire that merges same-side
    messages (None: it opens none, or the wire takes messages as they are)."""
    if wire not in _WHY_ALTERNATE:
        return None, None
    sides = [_side(pm) for pm in planned
             if pm.role != "system" and (wire == "bedrock" or not _renders_nothing(pm, wire))]
    return (sides[0], sides[-1]) if sides else (None, None)


def structure(planned: Sequence[PlannedMessage], wire: str, cache: BuildMemo | None = None, *,
              after: str | None = None) -> tuple[list[PlannedMessage], bool]:
    """(planned messages with their structure marks, whether a placeholder user turn ends the
    request) for ``wire``; ``after``: the side of the last turn sent before them (kept runs,
    ``replay.runs``). With a ``cache``, the previous request's marks are reused up to the
    first planned message whose key changed (a mark depends only on the messages before it)."""
    why = _WHY_ALTERNATE.get(wire)
    if why is None:
        return planned if isinstance(planned, list) else list(planned), False
    out: list[PlannedMessage] = []
    state: list[tuple[str | None, int]] = []  # (side of the last turn opened, last non-system) before each
    prev: str | None = after
    last = -1
    keys = [pm.key for pm in planned] if cache is not None else []
    if cache is not None and cache.last_structure is not None and cache.last_structure[0] == (wire, after):
        _, prev_in, prev_out, prev_state = cache.last_structure
        k = shared_prefix(prev_in, keys)
        if None in keys[:k]:  # an unkeyed planned message is never reused
            k = keys.index(None)
        if k:
            out, state = prev_out[:k], prev_state[:k]
            prev, last = prev_state[k - 1]
    for i in range(len(out), len(planned)):
        pm = planned[i]
        if pm.role != "system":
            side = _side(pm)
            if wire == "bedrock":
                last = i
                if side == prev == "user":
                    pm = _marked(pm, cache, joins=True, decisions=(
                        Decision(None, "merge", (), f"joins the previous user turn: {why}"),))
                elif side == "assistant" and prev in (None, "assistant"):
                    where = ("the conversation would start with the model" if prev is None
                             else "two assistant turns in a row")
                    pm = _marked(pm, cache, placeholder=True, decisions=(
                        Decision(None, "insert", ("before",), f"placeholder user turn first: {where}; {why}"),))
                prev = side
            elif not _renders_nothing(pm, wire):
                if side == prev:
                    said = "model" if wire == "gemini" and side == "assistant" else side
                    pm = _marked(pm, cache, joins=True, decisions=(
                        Decision(None, "merge", (), f"joins the previous {said} turn: {why}"),))
                prev = side
        out.append(pm)
        state.append((prev, last))
    if cache is not None:
        cache.last_structure = ((wire, after), keys, out, state)
    if wire != "bedrock" or (last >= 0 and _side(out[last]) == "user"):
        return list(out), False
    out = list(out)  # the closing mark belongs to this request only: never into the reused prefix
    if last >= 0:  # the closing placeholder is told on the message it follows
        pm = out[last]
        closing = Decision(None, "insert", ("after",),
                           f"placeholder user turn last: the request must not end on the model; {why}")
        out[last] = replace(pm, decisions=(*pm.decisions, closing), key=None)  # this request's only
    return out, True
