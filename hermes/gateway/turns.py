"""One gateway turn: lock the session, run ``Agent.run_turn`` in a worker thread, report events.

One worker-thread call per turn does the checks, takes the lease, runs the turn and releases
the lease (``SessionLocks.run``): the event loop only parses HTTP and waits.

A streamed turn is a ``TurnJob``, an asyncio task of its own, not part of the HTTP response: if
the client goes away mid-stream (Starlette then cancels the response), the turn still runs to
its end and commits, and the lock is still released. A JSON turn needs no task of its own
(``GatewayState.turn_json``).
The agent commits each step in one transaction, and the worker thread cannot be cancelled,
so a turn is never cut between its store writes by anything short of a killed process.

Agent events (typed, ``hermes.core.events``; called on the worker thread) become ``(event, data)`` pairs on an asyncio
queue: ``reasoning`` / ``text`` deltas, ``tool_call`` (whole, once the model's response is
complete), ``tool_result``, ``learned``, then ``done`` with the final JSON or ``error``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..builder.estimate import prompt_tokens
from ..core.events import AgentEvent, EventSink, LessonLearned, Requested, Streamed, ToolFinished
from ..core.stream import ReasoningDelta, TextDelta, ToolCallDelta
from ..routing.resolve import Resolved
from ..serving.http import ApiError
from ..serving.http import field as body_field
from ..store import SessionInfo
from ..store.lease import Lease
from .locks import SessionLocks, Take

__all__ = ["GatewaySink", "TurnJob", "TurnRequest", "describe", "event_mapper", "loop_sink", "openai_usage",
           "turn_request"]

GatewaySink = Callable[[str, dict[str, Any]], None]
"""Where gateway events go: ``(SSE event name, JSON data)``."""


@dataclass(frozen=True, slots=True)
class TurnRequest:
    session_id: str
    content: str
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    wait_s: float | None = None
    """How long to wait for a busy session before 409 (capped by the server's --lock-wait)."""


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
    req = TurnRequest(sid, content, body_field(body, "provider"), body_field(body, "model"), body_field(body, "base_url"),
                      None if wait is None else min(float(wait), lock_wait_s))
    return req, stream


def event_mapper(sink: GatewaySink) -> EventSink:
    """An ``Agent.on_event`` that translates agent events into gateway events for ``sink``."""
    calls: dict[str, dict[str, Any]] = {}

    def on_event(event: AgentEvent) -> None:
        if isinstance(event, Streamed):
            d = event.delta
            if isinstance(d, ReasoningDelta) and d.text:
                sink("reasoning", {"text": d.text})
            elif isinstance(d, TextDelta) and d.text:
                sink("text", {"text": d.text})
            elif isinstance(d, ToolCallDelta):
                c = calls.setdefault(d.key, {"id": None, "name": None, "arguments": ""})
                c["id"] = d.id or c["id"]
                c["name"] = d.name or c["name"]
                c["arguments"] += d.arguments
        elif isinstance(event, Requested):  # the model's response is complete: its tool calls are whole
            for c in calls.values():
                sink("tool_call", dict(c))
            calls.clear()
        elif isinstance(event, ToolFinished):
            r = event.result
            sink("tool_result", {"call_id": r.call_id, "name": r.name, "is_error": r.is_error,
                                 "chars": len(r.content), "content": r.content[:2000]})
        elif isinstance(event, LessonLearned):
            sink("learned", {"note": event.note})

    return on_event


def loop_sink(loop: asyncio.AbstractEventLoop, put: Callable[[tuple[str, dict[str, Any]]], None]) -> GatewaySink:
    """A sink for a worker thread that hands events to ``put`` on ``loop``, waking the loop once
    per batch rather than once per event: a streamed turn's deltas arrive faster than the loop
    takes them, and each wake-up is a ``call_soon_threadsafe`` (a write to the loop's wake-up
    pipe) and a GIL hand-over. Events are appended under a lock; only the append that finds
    the batch empty posts a callback, which passes the whole batch on in order. Order against
    the worker's other callbacks is kept: a batch's callback is posted before anything the
    worker posts after its events."""
    pending: list[tuple[str, dict[str, Any]]] = []
    lock = threading.Lock()

    def flush() -> None:
        with lock:
            batch = pending.copy()
            pending.clear()
        for item in batch:
            put(item)

    def sink(event: str, data: dict[str, Any]) -> None:
        with lock:
            pending.append((event, data))
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
    turn's events are mapped and queued for the response as they happen."""

    locks: SessionLocks
    request: TurnRequest
    work: Callable[[EventSink, Take], dict[str, Any]]
    limiter: anyio.CapacityLimiter
    queue: asyncio.Queue[tuple[str, dict[str, Any]]] = field(default_factory=asyncio.Queue)
    locked: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    wait_s: float | None = None
    held: bool = False
    """Set on the worker thread once the lease is held; read on the loop after the call returns."""

    def _locked(self) -> None:
        if not self.locked.done():
            self.locked.set_result(None)

    async def run(self) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        on_event = event_mapper(loop_sink(loop, self.queue.put_nowait))

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
                self.queue.put_nowait(("error", {"exception": e}))
            raise
        self._locked()
        # the sink's call_soon_threadsafe callbacks run before this one: order is kept
        loop.call_soon(self.queue.put_nowait, ("done", result))
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
