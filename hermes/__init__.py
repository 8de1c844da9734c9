"""Hermes: an agent runtime for reasoning models that never loses what the model thought.

The public names below load lazily so that ``hermes --help`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "Agent",
    "Learned",
    "Message",
    "Reasoning",
    "RouteKey",
    "Settings",
    "Store",
    "Text",
    "ToolCall",
    "ToolResult",
    "complete",
    "plan_replay",
    "resolve",
]

_WHERE = {
    "Agent": "hermes.agent.loop", "Learned": "hermes.replay", "Message": "hermes.core.messages",
    "Reasoning": "hermes.core.messages", "RouteKey": "hermes.core.messages", "Settings": "hermes.replay",
    "Store": "hermes.store", "Text": "hermes.core.messages", "ToolCall": "hermes.core.messages",
    "ToolResult": "hermes.core.messages", "complete": "hermes.agent.provider", "plan_replay": "hermes.replay",
    "resolve": "hermes.routing.resolve",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'hermes' has no attribute {name!r}")
