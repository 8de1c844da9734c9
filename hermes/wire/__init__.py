"""Wire protocols: pure translation between a ``ReplayPlan`` and one provider JSON dialect.

Every module in this package is a :class:`Wire` (``get_wire(name)`` returns it; mypy checks
each module against the protocol in ``provider``) and does no I/O:

* ``to_wire(plan, *, tools, settings, stream, rendered) -> dict`` — the request body (Bedrock:
  the Converse keyword arguments). It renders the plan and never re-decides what is replayed.
* ``render_message(pm, route)`` — one planned message's part of the body, pure, so the
  builder (``hermes.builder``) memoises it by the planned message's key and passes the
  results to ``to_wire`` as ``rendered``; ``None`` on a wire that renders only whole plans.
  ``ITEMS`` names the body field that holds those parts (``messages``, ``input``, ``contents``).
* ``decoder(resolved) -> Decoder`` — a fresh decoder for one response: ``decode_event(event,
  data)`` for each streamed event (``decode_events`` for the events of one network read), ``from_wire(payload)`` for a whole response, which yields
  the very deltas its stream would, so both fold to the same stored turn.
* ``endpoint(resolved, *, stream) -> (url, headers)`` — where the request goes; extra headers
  come from the route row, auth from ``keys``.
* ``PLANNER`` — what one stored message becomes on this wire (``replay.chat`` / ``blocks`` /
  ``gemini``); ``TURNS`` — its turn-alternation rule (``replay.structure.Turns``, or None).
* ``attempt(plan, body) -> Attempt`` — what the rendered body carried back (field, message
  position, blob hash), the record a rejection is classified against (``hermes.core.attempt``).

``UnsupportedPart`` is raised for a part a wire cannot carry; nothing is skipped silently.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from ..core.attempt import Attempt
    from ..core.messages import Message
    from ..core.stream import Delta
    from ..replay import Learned, PlannedMessage, ReplayPlan, Settings
    from ..replay.structure import Turns
    from ..routing.resolve import Resolved
    from ..routing.routes import Route

__all__ = ["Decoder", "FunctionDecoder", "ToolSpec", "Wire", "get_wire"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model: name, description and JSON-schema parameters."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


class Decoder(Protocol):
    """Turns one response into deltas: event by event (a stream) or whole (a JSON body)."""

    def decode_event(self, event: str, data: Any) -> list[Delta]: ...

    def decode_events(self, events: Sequence[tuple[str, Any]]) -> list[Delta]:
        """The events one network read completed, in order: what ``decode_event`` on each gives."""
        ...

    def from_wire(self, payload: Any) -> list[Delta]: ...


@dataclass(frozen=True, slots=True)
class FunctionDecoder:
    """A :class:`Decoder` made of two functions (a wire whose events need no memory, or one
    whose stream memory lives in a fresh callable per response)."""

    decode_event: Callable[[str, Any], list[Delta]]
    from_wire: Callable[[Any], list[Delta]]

    def decode_events(self, events: Sequence[tuple[str, Any]]) -> list[Delta]:
        decode = self.decode_event
        return [d for event, data in events for d in decode(event, data)]


class Wire(Protocol):
    """What every module of this package provides (see the module docstring)."""

    @property
    def PLANNER(self) -> Callable[[int, Message, Resolved, Learned, bool], PlannedMessage]: ...

    @property
    def TURNS(self) -> Turns | None: ...

    def to_wire(self, plan: ReplayPlan, *, tools: Sequence[ToolSpec] = ..., settings: Settings = ...,
                stream: bool = ..., rendered: Any = ...) -> dict[str, Any]: ...

    @property
    def render_message(self) -> Callable[[PlannedMessage, Route], Any] | None: ...

    @property
    def ITEMS(self) -> str: ...

    def decoder(self, resolved: Resolved) -> Decoder: ...

    def endpoint(self, resolved: Resolved, *, stream: bool) -> tuple[str, dict[str, str]]: ...

    def attempt(self, plan: ReplayPlan, body: Mapping[str, Any]) -> Attempt: ...


def get_wire(name: str) -> Wire:
    """The wire module named by a route row's ``wire`` (imported on first use)."""
    return cast(Wire, importlib.import_module(f"hermes.wire.{name}"))
