"""One gateway turn: lock the session, run ``Agent.run_turn`` in a worker thread, report events.

One worker-thread call per turn does the checks, takes the lease, runs the turn and releases
the lease (``SessionLocks.run``): the event loop only parses HTTP and waits.

A streamed turn is a ``TurnJob``, an asyncio task of its own, not part of the HTTP response: if
the client goes away mid-stream (Starlette then cancels the response), the turn still runs to
its end and commits, and the lock is still released. A JSON turn needs no task of its own
(``GatewayState.turn_json``).
The agent commits each step in one transaction, and the worker thread cannot be cancelled,
so a turn is never cut between its store writes by anything short of a killed process.

Agent events (typed, ``hermes.core.events``; called on the worker thread) go to an asyncio
queue as they are, followed by :class:`TurnDone` (the final JSON) or :class:`TurnFailed`: the
REST stream (:class:`SseEvents`) and the OpenAI facade (``compat.Collector``) each fold those
typed events once into what their clients see. The REST stream's SSE events: ``reasoning`` /
``text`` deltas, ``tool_call`` (whole, once the model's response is complete), ``tool_result``,
``learned``, then ``done`` with the final JSON or ``error``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar

import anyio

from ..builder.estimate import prompt_tokens
from ..core.events import AgentEvent, EventSink, LessonLearned, Requested, Streamed, ToolFinished
from ..core.stream import ReasoningDelta, TextDelta, ToolCallDelta
from ..routing.resolve import Resolved
from ..serving.http import ApiError
from ..serving.http import field as body_field
from ..store import SessionInfo
from ..store.lease import Lease
from .failures import error_payload
from .locks import SessionLocks, Take

__all__ = ["SseEvents", "TurnDone", "TurnEvent", "TurnFailed", "TurnJob", "TurnRequest", "describe", "loop_sink",
           "openai_usage", "turn_request"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TurnDone:
    """The turn ran to its end and committed: ``result`` is the JSON a non-streamed turn answers."""

    result: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TurnFailed:
    """The turn stopped with ``exception`` after its lease was held (before, the request fails)."""

    exception: BaseException


TurnEvent: TypeAlias = AgentEvent | TurnDone | TurnFailed
"""What a streamed turn's queue carries: the agent's events, then how the turn ended."""


@dataclass(frozen=True, slots=True)
class TurnRequest:
    session_id: str
    content: str
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    wait_s: float | None = None
    """How long to wait for a busy session before 409 (capped by the server's --lock-wait)."""
    system: str | None = None
    """The session's system prompt, kept from this turn on (as ``hermes chat --system``)."""


def turn_request(sid: str, body: dict[str, Any], lock_wait_s: float) -> tuple[TurnRequest, bool]:
    """A turn's JSON body read into its request, and whether it asks for a stream; 400 naming
    what is wrong."""
    content = body_field(body, "content", required=True)
    if not content.strip():
        raise ApiError(400, "invalid_request", "'content' is empty: a turn needs some text")
    stream = body_field(body, "stream", kind=bool) or False
    wait = body.get("wait_s")
    if wait is not None and (isinstance(wait, bool) or not isinstance(wait, int | float) or wait < 0):
        raise ApiError(400, "invalid_request", "'wait_s' must be a number of seconds >= 0")
    system = body_field(body, "system")
    if system is not None and not system.strip():
        raise ApiError(400, "invalid_request", "'system' is empty: leave it out to keep the session's prompt")
    req = TurnRequest(sid, content, body_field(body, "provider"), body_field(body, "model"), body_field(body, "base_url"),
                      None if wait is None else min(float(wait), lock_wait_s), system)
    return req, stream


class SseEvents:
    """The REST stream's fold: each typed event of a turn as the ``(SSE event name, JSON data)``
    pairs the client is sent, if any. Tool-call fragments are gathered until the model's
    response is complete, then sent whole."""

    def __init__(self) -> None:
        self.calls: dict[str, dict[str, Any]] = {}

    def take(self, event: TurnEvent) -> list[tuple[str, dict[str, Any]]]:
        if isinstance(event, Streamed):
            d = event.delta
            if isinstance(d, ReasoningDelta) and d.text:
                return [("reasoning", {"text": d.text})]
            if isinstance(d, TextDelta) and d.text:
                return [("text", {"text": d.text})]
            if isinstance(d, ToolCallDelta):
                c = self.calls.setdefault(d.key, {"id": None, "name": None, "arguments": ""})
                c["id"] = d.id or c["id"]
                c["name"] = d.name or c["name"]
                c["arguments"] += d.arguments
        elif isinstance(event, Requested):  # the model's response is complete: its tool calls are whole
            calls = [("tool_call", c) for c in self.calls.values()]
            self.calls = {}
            return calls
        elif isinstance(event, ToolFinished):
            r = event.result
            return [("tool_result", {"call_id": r.call_id, "name": r.name, "is_error": r.is_error,
                                     "chars": len(r.content), "content": r.content[:2000]})]
        elif isinstance(event, LessonLearned):
            return [("learned", {"note": event.note})]
        elif isinstance(event, TurnDone):
            return [("done", event.result)]
        elif isinstance(event, TurnFailed):
            return [("error", error_payload(event.exception))]
        return []


def loop_sink(loop: asyncio.AbstractEventLoop, put: Callable[[T], None]) -> Callable[[T], None]:
    """A sink for a worker thread that hands events to ``put`` on ``loop``, waking the loop once
    per batch rather than once per event: a streamed turn's deltas arrive faster than the loop
    takes them, and each wake-up is a ``call_soon_threadsafe`` (a write to the loop's wake-up
    pipe) and a GIL hand-over. Events are appended under a lock; only the append that finds
    the batch empty posts a callback, which passes the whole batch on in order. Order against
    the worker's other callbacks is kept: a batch's callback is posted before anything the
    worker posts after its events."""
    pending: list[T] = []
    lock = threading.Lock()

    def flush() -> None:
        with lock:
            batch = pending.copy()
            pending.clear()
        for item in batch:
            put(item)

    def sink(event: T) -> None:
        with lock:
            pending.append(event)
            first = len(pending) == 1
        if first:
            loop.call_soon_threadsafe(flush)

    return sink


@dataclass
class TurnJob:
    """A streamed turn: runs ``work(on_event, take)`` in one worker-thread call under the
    session's lease (``SessionLocks.run``): ``work`` does its checks, calls ``take()`` for the
    lease and runs the turn. ``locked`` resolves once the lease is held — or fails with what
    refused the turn before it, so the response can still answer with an HTTP error. The
    turn's events are queued for the response as they happen, then how it ended."""

    locks: SessionLocks
    request: TurnRequest
    work: Callable[[EventSink, Take], dict[str, Any]]
    limiter: anyio.CapacityLimiter
    queue: asyncio.Queue[TurnEvent] = field(default_factory=asyncio.Queue)
    locked: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    wait_s: float | None = None
    held: bool = False
    """Set on the worker thread once the lease is held; read on the loop after the call returns."""

    def _locked(self) -> None:
        if not self.locked.done():
            self.locked.set_result(None)

    async def run(self) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        on_event: EventSink = loop_sink(loop, self.queue.put_nowait)

        def attempt(take: Take) -> dict[str, Any]:
            def taking() -> tuple[Lease, SessionInfo]:
                got = take()
                self.held = True
                loop.call_soon_threadsafe(self._locked)  # queued before any event of the turn: the order is kept
                return got

            return self.work(on_event, taking)

        try:
            result = await self.locks.run(self.request.session_id, attempt, limiter=self.limiter, wait_s=self.wait_s)
        except BaseException as e:
            if not self.held and not self.locked.done():
                self.locked.set_exception(e)
                self.locked.exception()  # marks it retrieved: the task's own exception is the report
            else:
                self.queue.put_nowait(TurnFailed(e))
            raise
        self._locked()
        # the sink's call_soon_threadsafe callbacks run before this one: order is kept
        loop.call_soon(self.queue.put_nowait, TurnDone(result))
        return result


def describe(resolved: Resolved) -> dict[str, str]:
    return {"route": resolved.route.key, "model": resolved.model, "host": resolved.host}


def openai_usage(steps: list[dict[str, Any]]) -> dict[str, int]:
    """A turn's token usage in OpenAI's spelling, summed over its model calls (every call is
    billed, so a two-step tool turn reports both prompts), whatever each provider called it."""
    prompt = completion = 0
    for usage in steps:
        prompt += prompt_tokens(usage) or 0
        for key in ("completion_tokens", "output_tokens", "outputTokens", "candidatesTokenCount"):
            v = usage.get(key)
            if isinstance(v, int) and not isinstance(v, bool):
                completion += v
                break
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
