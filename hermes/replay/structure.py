"""Turn structure: the repairs a wire's alternation rule needs, decided here and shown as decisions.

Stored history is a list of messages; some wires want strictly alternating user and model
turns and refuse anything else. Each wire module declares its rule (``TURNS``, a ``Turns``):

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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..wire import get_wire
from .plan import Decision, PlannedMessage

__all__ = ["Mark", "Turns", "close", "mark_from", "marked", "structure", "turn_sides"]

State = tuple[str | None, int]
"""(side of the last turn opened, position of the last non-system message) before a message."""
Mark = Callable[[PlannedMessage, bool, bool, tuple[Decision, ...]], PlannedMessage]
"""``pm`` with its structure marks (``marked``, or a caller's memoised form of it)."""

@dataclass(frozen=True, slots=True)
class Turns:
    """A wire's alternation rule, declared by the wire module (``TURNS``; None: messages go as
    they are) and followed here."""

    why: str
    """The rule, as the decisions quote it."""
    placeholders: bool = False
    """Converse: only user-side messages merge; a placeholder user turn goes where the model
    would speak first, twice in a row or last. Otherwise same-side messages merge."""
    model: str = "assistant"
    """What a decision calls the model's side."""
    empty_summary: bool = False
    """A compaction checkpoint with an empty summary renders nothing (opens no turn)."""


def _turns(wire: str) -> Turns | None:
    return get_wire(wire).TURNS


def _side(pm: PlannedMessage) -> str:
    return "assistant" if pm.role == "assistant" else "user"


def _renders_nothing(pm: PlannedMessage, turns: Turns) -> bool:
    """True when the wire has no block for any part (empty text; on some wires also an empty
    summary), so the message opens no turn and does not break a run of the other side."""
    for p in pm.parts:  # ``kind`` compares cheaper than isinstance; most messages stop at once
        k = p.kind
        if k == "text":
            if p.text:  # type: ignore[union-attr]
                return False
        elif k != "compaction" or not turns.empty_summary or p.summary:  # type: ignore[union-attr]
            return False
    return True


def marked(pm: PlannedMessage, joins: bool, placeholder: bool, decisions: tuple[Decision, ...]) -> PlannedMessage:
    """``pm`` with its structure marks. Marks change neither the message's own render (a wire
    reads them when it assembles turns), nor its cost, nor its log summary."""
    return replace(pm, joins=joins, placeholder=placeholder, decisions=(*pm.decisions, *decisions))


def turn_sides(planned: Sequence[PlannedMessage], wire: str) -> tuple[str | None, str | None]:
    """Sides of the first and the last turn ``planned`` opens on a wire that merges same-side
    messages (None: it opens none, or the wire takes messages as they are)."""
    turns = _turns(wire)
    if turns is None:
        return None, None
    sides = [_side(pm) for pm in planned
             if pm.role != "system" and (turns.placeholders or not _renders_nothing(pm, turns))]
    return (sides[0], sides[-1]) if sides else (None, None)


def structure(planned: Sequence[PlannedMessage], wire: str, *, after: str | None = None
              ) -> tuple[list[PlannedMessage], bool]:
    """(planned messages with their structure marks, whether a placeholder user turn ends the
    request) for ``wire``; ``after``: the side of the last turn sent before them (kept runs)."""
    out, state = mark_from(planned, wire, [], [], after, marked)
    return close(out, state, wire)


def mark_from(planned: Sequence[PlannedMessage], wire: str, out: list[PlannedMessage], state: list[State],
              after: str | None, mark: Mark) -> tuple[list[PlannedMessage], list[State]]:
    """The structure pass over ``planned[len(out):]``, continuing from ``out`` and ``state`` (the
    marked messages before and the state before each: a mark depends only on the messages
    before it, so a pass may resume where an earlier one agreed)."""
    turns = _turns(wire)
    if turns is None:
        return planned if isinstance(planned, list) else list(planned), []
    why = turns.why
    out, state = list(out), list(state)
    prev, last = state[-1] if state else (after, -1)
    for i in range(len(out), len(planned)):
        pm = planned[i]
        if pm.role != "system":
            side = _side(pm)
            if turns.placeholders:
                last = i
                if side == prev == "user":
                    pm = mark(pm, True, False, (Decision(None, "merge", (), f"joins the previous user turn: {why}"),))
                elif side == "assistant" and prev in (None, "assistant"):
                    where = ("the conversation would start with the model" if prev is None
                             else "two assistant turns in a row")
                    pm = mark(pm, False, True, (
                        Decision(None, "insert", ("before",), f"placeholder user turn first: {where}; {why}"),))
                prev = side
            elif not _renders_nothing(pm, turns):
                if side == prev:
                    said = turns.model if side == "assistant" else side
                    pm = mark(pm, True, False, (Decision(None, "merge", (), f"joins the previous {said} turn: {why}"),))
                prev = side
        out.append(pm)
        state.append((prev, last))
    return out, state


def close(out: list[PlannedMessage], state: Sequence[State], wire: str) -> tuple[list[PlannedMessage], bool]:
    """The marked messages with the closing placeholder where ``wire`` needs one (Converse must
    not end on the model), and whether it does."""
    last = state[-1][1] if state else -1
    turns = _turns(wire)
    if turns is None or not turns.placeholders or (last >= 0 and _side(out[last]) == "user"):
        return list(out), False
    out = list(out)  # the closing mark belongs to this request only: never into a reused prefix
    if last >= 0:  # the closing placeholder is told on the message it follows
        pm = out[last]
        closing = Decision(None, "insert", ("after",),
                           f"placeholder user turn last: the request must not end on the model; {turns.why}")
        out[last] = replace(pm, decisions=(*pm.decisions, closing), key=None)  # this request's only
    return out, True
