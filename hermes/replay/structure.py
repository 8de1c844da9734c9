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

from ..messages import Compaction, Text
from .cache import BuildCache
from .plan import Decision, PlannedMessage

__all__ = ["structure"]

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
    if wire == "anthropic":
        return all((isinstance(p, Text) and not p.text) or (isinstance(p, Compaction) and not p.summary)
                   for p in pm.parts)
    return all(isinstance(p, Text) and not p.text for p in pm.parts)


def _marked(pm: PlannedMessage, cache: BuildCache | None, *, joins: bool = False, placeholder: bool = False,
            decisions: tuple[Decision, ...]) -> PlannedMessage:
    """``pm`` with its structure marks; the same input gives the same object (render reuse)."""
    def make() -> PlannedMessage:
        return replace(pm, joins=joins, placeholder=placeholder, decisions=(*pm.decisions, *decisions))

    return make() if cache is None else cache.get(pm, ("structure", joins, placeholder), make)


def structure(planned: Sequence[PlannedMessage], wire: str,
              cache: BuildCache | None = None) -> tuple[list[PlannedMessage], bool]:
    """(planned messages with their structure marks, whether a placeholder user turn ends the
    request) for ``wire``."""
    out = list(planned)
    why = _WHY_ALTERNATE.get(wire)
    if why is None:
        return out, False
    prev: str | None = None  # side of the last turn opened so far
    last = -1  # position of the last non-system message (Bedrock)
    for i, pm in enumerate(out):
        if pm.role == "system":
            continue
        side = _side(pm)
        if wire == "bedrock":
            last = i
            if side == prev == "user":
                out[i] = _marked(pm, cache, joins=True, decisions=(
                    Decision(None, "merge", (), f"joins the previous user turn: {why}"),))
            elif side == "assistant" and prev in (None, "assistant"):
                where = "the conversation would start with the model" if prev is None else "two assistant turns in a row"
                out[i] = _marked(pm, cache, placeholder=True, decisions=(
                    Decision(None, "insert", ("before",), f"placeholder user turn first: {where}; {why}"),))
            prev = side
            continue
        if _renders_nothing(pm, wire):
            continue
        if side == prev:
            out[i] = _marked(pm, cache, joins=True, decisions=(
                Decision(None, "merge", (), f"joins the previous {'model' if wire == 'gemini' and side == 'assistant' else side} turn: {why}"),))
        prev = side
    if wire != "bedrock" or (last >= 0 and _side(out[last]) == "user"):
        return out, False
    if last >= 0:  # the closing placeholder is told on the message it follows
        pm = out[last]
        closing = Decision(None, "insert", ("after",),
                           f"placeholder user turn last: the request must not end on the model; {why}")
        out[last] = replace(pm, decisions=(*pm.decisions, closing))
    return out, True
