"""Wire protocols: pure translation between a ``ReplayPlan`` and one provider JSON dialect.

Each module in this package exposes the same verbs and does no I/O:

* ``to_wire(plan, *, tools, settings, stream) -> dict`` — the request body (Bedrock: the
  Converse keyword arguments). It renders the plan and never re-decides what is replayed.
* ``from_wire(payload) -> list[Delta]`` — a whole non-streaming response as deltas, so it
  folds through the same ``stream.Accumulator`` as the streamed one.
* ``decode_event(event, data) -> list[Delta]`` — one streamed event.

``UnsupportedPart`` is raised for a part a wire cannot carry; nothing is skipped silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ToolSpec"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model: name, description and JSON-schema parameters."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
