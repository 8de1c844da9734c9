"""Planning for native-block wires (Anthropic, Bedrock, Responses): reasoning stays a block.

Own signed blocks go back byte-exact in their stored order; the row's policy says what
happens to the rest (``unsigned``: readable text only before the open loop; ``strip``: earlier
turns lose reasoning; ``signed``: only signed blocks), and the model's prior-turn policy
whether earlier turns keep thinking at all; ``keep`` sends every turn's, the route's own blocks
byte-exact and the rest as readable text. A ``must_echo`` row's tool turns always carry a
thinking block (the ``" "`` pad when nothing readable is stored). An assistant turn left with reasoning only is not
sent as reasoning (newer Claude models read a trailing reasoning-only turn as prefill).
"""

from __future__ import annotations

from dataclasses import replace

from ..core.messages import Message, Part, Reasoning, Text, ToolCall
from ..routing.resolve import Resolved
from .plan import PAD, Decision, Learned, PlannedMessage
from .sendable import blob_allowed, same_origin

__all__ = ["plan_blocks"]


def plan_blocks(index: int, m: Message, target: Resolved, learned: Learned, in_loop: bool) -> PlannedMessage:
    """Anthropic, Bedrock and Responses: reasoning stays a block, in its original order."""
    route = target.route
    policy = route.policy
    keep_prior = route.prior_turns == "all" and policy != "strip"
    parts: list[Part] = []
    decisions: list[Decision] = []
    for i, p in enumerate(m.parts):
        if not isinstance(p, Reasoning):
            parts.append(p)
            continue
        refusal = blob_allowed(p, target, learned)
        own = same_origin(p.origin, target)
        if policy == "keep":
            _keep(i, p, refusal, parts, decisions)
        elif not in_loop and not keep_prior:
            decisions.append(Decision(i, "drop", (), f"turn before the open tool loop; {route.key} "
                                      f"{'strips earlier turns' if policy == 'strip' else 'keeps only loop thinking for this model'}"))
        elif refusal is None and (policy != "unsigned" or in_loop):
            parts.append(p)
            decisions.append(Decision(i, "native", (p.blob_kind or "",), "signed block from this route and model"))
        elif policy == "unsigned" or (policy == "strip" and own):
            if p.text.strip():
                parts.append(replace(p, blob=None, blob_kind=None, native=None))
                why = refusal or "earlier turn on an unsigned-policy model"
                decisions.append(Decision(i, "text", ("reasoningText",), f"readable text only: {why}"))
            else:
                decisions.append(Decision(i, "drop", (), f"no readable text; {refusal or 'earlier turn'}"))
        else:
            decisions.append(Decision(i, "drop", (), (refusal if p.blob is not None else None)
                                      or f"{route.key} takes only signed reasoning"))
    if route.must_echo and any(isinstance(x, ToolCall) for x in parts) and not any(isinstance(x, Reasoning)
                                                                                   for x in parts):
        parts.insert(0, Reasoning(PAD, target.key))  # the route's must-echo rule: a thinking block on every tool turn
        decisions.append(Decision(None, "pad", ("thinking",), f"{route.key} must echo: placeholder {PAD!r}"))
    kept = any(d.action in ("native", "text") for d in decisions) if decisions else False
    if kept and not any(isinstance(x, (Text, ToolCall)) and (not isinstance(x, Text) or x.text) for x in parts):
        # the reasoning-only rule: a turn of kept reasoning and nothing else
        parts = [x for x in parts if not isinstance(x, Reasoning)]
        decisions = [d if d.action not in ("native", "text") else
                     Decision(d.part, "drop", (), "reasoning-only assistant turn would be read as prefill")
                     for d in decisions]
    return PlannedMessage(index, m.role, tuple(parts), decisions=tuple(decisions))


def _keep(i: int, p: Reasoning, refusal: str | None, parts: list[Part], decisions: list[Decision]) -> None:
    """``keep`` policy: the route's own block as it came; any other reasoning as its readable
    text, unsigned (a foreign signature means nothing there); nothing readable, nothing."""
    if refusal is None:
        parts.append(p)
        decisions.append(Decision(i, "native", (p.blob_kind or "",), "this route's own block, as it came"))
    elif p.text.strip():
        parts.append(replace(p, blob=None, blob_kind=None, native=None))
        decisions.append(Decision(i, "text", ("thinking",), f"unsigned thinking block: {refusal}"))
    else:
        decisions.append(Decision(i, "drop", (), f"no readable text; {refusal}"))
