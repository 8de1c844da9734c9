"""What a running turn tells its watchers: one small dataclass per kind of event.

The agent, the compactor and the MCP hub report progress through one callback, an
:data:`EventSink`. Each event is a frozen dataclass, so a consumer matches on the type and
mypy checks every field it reads; there is no ``(kind, payload)`` string protocol to drift.

The consumers are the CLI's printer (``hermes.cli.chat``: spinner, streamed text, tool lines,
notes) and the gateway's two streams, which take them as they are (``hermes.gateway.turns``
``SseEvents``, ``hermes.gateway.compat.Collector``). An event never carries a key
or anything the store would not already hold.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from .messages import ToolResult
from .stream import Delta

__all__ = [
    "AgentEvent",
    "Compacted",
    "Compacting",
    "EventSink",
    "LessonLearned",
    "McpFailed",
    "McpStarted",
    "McpStarting",
    "Requested",
    "Streamed",
    "ToolFinished",
    "Waiting",
]


@dataclass(frozen=True, slots=True)
class Waiting:
    """A model request is about to be sent (the CLI shows a spinner until the first byte)."""

    route: str
    model: str
    step: int


@dataclass(frozen=True, slots=True)
class Streamed:
    """One piece of the model's response as it arrives: reasoning, text or a tool-call fragment."""

    delta: Delta


@dataclass(frozen=True, slots=True)
class Requested:
    """The model's response is complete (so its tool calls are whole); ``summary`` says which
    reasoning fields the request carried (``hermes.store.requestlog.plan_summary``)."""

    summary: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToolFinished:
    """A tool call ran; its result is about to be stored with the step."""

    result: ToolResult


@dataclass(frozen=True, slots=True)
class LessonLearned:
    """A request was rejected for a replayed field and the lesson was stored (``rejections``)."""

    note: str

    def __str__(self) -> str:
        return self.note


@dataclass(frozen=True, slots=True)
class Compacting:
    """The next request would not fit: a summary request runs first."""

    estimate: int
    budget: int


@dataclass(frozen=True, slots=True)
class Compacted:
    """A compaction checkpoint was stored; ``line`` says what it replaced and kept."""

    line: str

    def __str__(self) -> str:
        return self.line


@dataclass(frozen=True, slots=True)
class McpStarting:
    """MCP servers are being started (the first request that lists tools waits for them)."""

    servers: tuple[str, ...]

    def __str__(self) -> str:
        return f"starting MCP server(s): {', '.join(self.servers)}…"


@dataclass(frozen=True, slots=True)
class McpStarted:
    servers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class McpFailed:
    """One MCP server did not start; its tools are missing from this session."""

    server: str
    error: str

    def __str__(self) -> str:
        return f"MCP server {self.server!r} failed to start: {self.error}"


AgentEvent: TypeAlias = (
    Waiting | Streamed | Requested | ToolFinished | LessonLearned | Compacting | Compacted
    | McpStarting | McpStarted | McpFailed
)
EventSink = Callable[[AgentEvent], None]
"""Called on the thread running the turn, in order."""
