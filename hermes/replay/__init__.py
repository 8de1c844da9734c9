"""Replay: one pure step that decides what every stored part becomes on a route.

``plan_replay(history, target, learned, settings)`` never modifies ``history``; it returns a
``ReplayPlan`` whose messages hold only what the wire must render, in neutral terms:

* chat-completions routes: reasoning leaves the parts and becomes message ``fields``
  (exactly the row's carriers, minus learned rejections; must-echo pads; owned native fields)
  — ``chat``;
* native-block wires (Anthropic, Bedrock, Responses): reasoning parts stay in order when
  their blob may go to this target, are reduced to readable text where the row's policy
  says so, and are dropped otherwise — ``blocks``;
* Gemini: signatures are lifted from the private record — ``gemini``;
* signatures are intents ("this signature goes with call X", "with this message's text"):
  each wire places them where its JSON wants them;
* turn structure (merged same-side turns, Bedrock's placeholder user turns) — ``structure``.

Every reasoning part and every structural repair gets a ``Decision`` with a reason, which
``hermes replay`` prints. Wire modules render the plan and never decide again.

Modules: ``plan`` (the types), ``sendable`` (may a blob go there), ``chat`` / ``blocks`` /
``gemini`` (per-message planning per wire family), ``structure``, ``planner`` (the request).
Every cache lives above this package, in ``hermes.builder``.
"""

from __future__ import annotations

from ..core.messages import blob_hash
from .plan import (
    GEMINI_SKIP_SIGNATURE,
    PAD,
    Decision,
    Learned,
    PlannedMessage,
    ReplayPlan,
    Run,
    Settings,
)
from .planner import effort_fields, plan_replay
from .sendable import blob_allowed

__all__ = [
    "GEMINI_SKIP_SIGNATURE",
    "PAD",
    "Decision",
    "Learned",
    "PlannedMessage",
    "ReplayPlan",
    "Run",
    "Settings",
    "blob_allowed",
    "blob_hash",
    "effort_fields",
    "plan_replay",
]
