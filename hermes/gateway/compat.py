"""The OpenAI-compatible agent facade: ``POST /v1/chat/completions`` and ``GET /v1/models``.

An existing OpenAI client keeps sending its whole ``messages`` list, but the session already
holds the history *and the reasoning* the client never saw, so only the **last user message**
is taken, as the new user turn (the server's history wins). Without ``X-Hermes-Session``, a
request that carries earlier assistant or tool messages is refused (400): that history would
be lost. Client ``tools`` are refused too: the server runs its own toolbox and returns no tool
calls (``hermes proxy`` is for client-side tool loops). The session is named by ``X-Hermes-Session``; without it a new session is
created on the server's default route (config.toml ``provider``/``model``, or the alias named
by ``model``) and its id comes back in the ``X-Hermes-Session`` response header. ``model`` is
echoed back; it never switches an existing session's route, and a client can never name a
base URL here.

Non-streaming returns a ``chat.completion`` with the turn's real ``usage`` (summed over its
model calls); ``stream: true`` returns ``chat.completion.chunk`` SSE lines ending with
``data: [DONE]``, with a final usage chunk when ``stream_options.include_usage`` is true.
Reasoning streams as ``delta.reasoning_content``; the final message carries it too. A turn of
several model calls (a tool step, then the answer) keeps each call's reasoning its own: a blank
line starts the next step's, in the stream and in the message, and ``hermes.reasoning_steps``
lists them one per step; streamed text of a new step starts after a blank line too.

Errors use OpenAI's shape. A response that must not be retried says ``x-should-retry: false``
(the SDKs honour it): a turn that failed after it stored a step would store the user message
twice if re-run. ``Idempotency-Key`` makes a repeat return the first outcome (``idempotency``).
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio.to_thread
import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from ..core.events import Requested, Streamed, ToolFinished
from ..core.stream import ReasoningDelta, TextDelta
from ..serving.http import ApiError, json_response, openai_error_response, read_json
from .failures import from_exception
from .turns import TurnDone, TurnEvent, TurnFailed, TurnRequest

if TYPE_CHECKING:
    from .app import GatewayState

__all__ = ["Collector", "Completion", "chat_completions", "completion", "last_user_text", "list_models"]

HEADER = "x-hermes-session"
STEP_BREAK = "\n\n"
"""Between two model calls' reasoning (or text) where a client sees them as one string."""
_DONE = object()


def last_user_text(messages: Any) -> str:
    """The text of the last ``user`` message (string content or text parts joined)."""
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "invalid_request", "'messages' must be a non-empty list")
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
            if isinstance(content, str) and content.strip():
                return content
            raise ApiError(400, "invalid_request", "the last user message has no text content")
    raise ApiError(400, "invalid_request", "'messages' has no user message")


@dataclass
class Completion:
    """One facade turn's outcome: rendered as JSON or chunks, and kept for an Idempotency-Key."""

    id: str
    created: int
    model: str
    session_id: str
    reasoning: list[str] = field(default_factory=list)
    """One entry per model call that reasoned, in order."""
    answer: str = ""
    finish: str = "stop"
    usage: dict[str, int] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)

    def chunk(self, delta: dict[str, Any], finish: str | None = None, *, usage: bool = False) -> bytes:
        data: dict[str, Any] = {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                                "model": self.model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        if usage:
            data["usage"] = None
        return _sse(data)

    def usage_chunk(self) -> bytes:
        return _sse({"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                     "choices": [], "usage": self.usage})

    def as_json(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.answer}
        if self.reasoning:
            message["reasoning_content"] = STEP_BREAK.join(self.reasoning)
        return {"id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "message": message, "finish_reason": self.finish}], "usage": self.usage,
                "hermes": {"session_id": self.session_id, "steps": self.result.get("steps"),
                           "route": self.result.get("route"), "reasoning_steps": list(self.reasoning)}}

    def replay(self, include_usage: bool) -> list[bytes]:
        """The whole stream of a finished completion (for a repeated streaming request)."""
        out = [self.chunk({"role": "assistant", "content": ""}, usage=include_usage)]
        if self.reasoning:
            out.append(self.chunk({"reasoning_content": STEP_BREAK.join(self.reasoning)}, usage=include_usage))
        out += [self.chunk({"content": self.answer}, usage=include_usage),
                self.chunk({}, self.finish, usage=include_usage)]
        return [*out, self.usage_chunk()] if include_usage else out


def _sse(data: Any) -> bytes:
    return b"data: " + orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS) + b"\n\n"


def _finish(result: dict[str, Any]) -> str:
    return "stop" if result.get("stopped") == "answer" else "length"


async def list_models(state: GatewayState, request: Request) -> Response:
    """``hermes`` (the session's own route), the config default model and every alias."""
    ids = ["hermes", *([state.config.model] if state.config.model else []), *sorted(state.config.aliases)]
    data = [{"id": i, "object": "model", "created": 0, "owned_by": "hermes"} for i in dict.fromkeys(ids)]
    return json_response({"object": "list", "data": data})


def _first_use_session(state: GatewayState, model: str | None) -> str:
    """A new session on the server's default route (or the alias ``model`` names)."""
    name = model if model and model != "hermes" else None
    try:
        resolved = state.runtime.route(model=name)
    except Exception as e:
        err = from_exception(e)
        raise ApiError(400, "invalid_request", f"no X-Hermes-Session header and no default route to start a "
                                               f"session on: {err.message}; name a session (POST /v1/sessions) "
                                               "or set provider and model in the server's config.toml") from None
    state.runtime.key(resolved)  # no session is created for a route this server cannot call
    return state.runtime.create(resolved, title="openai facade")


def refuse_client_loop(body: dict[str, Any], sid: str) -> None:
    """400 for what the facade would otherwise drop in silence: a client's own ``tools`` (the
    server runs its own toolbox), or history without a session to hold it."""
    if body.get("tools") or body.get("functions"):
        raise ApiError(400, "invalid_request", "this facade runs the server's own tools and cannot return tool "
                                               "calls to the client: drop 'tools', or use `hermes proxy` for a "
                                               "client-side tool loop")
    messages = body.get("messages")
    if not sid and isinstance(messages, list) and any(
            isinstance(m, dict) and m.get("role") in ("assistant", "tool", "function") for m in messages):
        raise ApiError(400, "invalid_request", "the messages carry earlier turns but no X-Hermes-Session header "
                                               "names their session, so that history would be lost: send the "
                                               "X-Hermes-Session the first answer returned (or create one with "
                                               "POST /v1/sessions), or use `hermes proxy` for a client that keeps "
                                               "its own history")


async def chat_completions(state: GatewayState, request: Request) -> Response:
    body = await read_json(request, state.options.max_body, timeout_s=state.options.body_timeout_s)
    refuse_client_loop(body, request.headers.get(HEADER) or "")
    text = last_user_text(body.get("messages"))
    stream = body.get("stream") is True
    options = body.get("stream_options")
    include_usage = stream and isinstance(options, dict) and options.get("include_usage") is True
    model = str(body["model"]) if isinstance(body.get("model"), str) else ""
    sid = request.headers.get(HEADER) or ""
    key = request.headers.get("idempotency-key")
    if key is not None:
        # streaming or not is how the outcome is rendered, not a different request
        what = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
        digest = hashlib.sha256(sid.encode() + b"\0" + orjson.dumps(what, option=orjson.OPT_SORT_KEYS)).hexdigest()
        future, first = state.idempotency.begin(key, digest)
        if not first:
            outcome = await asyncio.shield(future)
            return _render_done(outcome, stream, include_usage, replayed=True)
    try:
        if not sid:  # a named session is checked by the turn itself, before its lease
            sid = await anyio.to_thread.run_sync(_first_use_session, state, model)
        events = await state.turn_events(TurnRequest(sid, text))
    except Exception as e:  # refused before the turn began: nothing stored, a retry is safe
        err = from_exception(e)
        if sid:
            err.headers.setdefault("x-hermes-session", sid)
        if key is not None:
            state.idempotency.forget(key, err)
        raise err from None
    done = completion(model, sid)
    queue: asyncio.Queue[Any] = asyncio.Queue()
    collector = asyncio.create_task(_collect(state, events, done, queue, key))
    headers = {"x-hermes-session": sid}
    if not stream:
        outcome = await asyncio.shield(collector)
        return _render_done(outcome, False, False, headers=headers)

    async def body_iter() -> AsyncIterator[bytes]:
        yield done.chunk({"role": "assistant", "content": ""}, usage=include_usage)
        while (item := await queue.get()) is not _DONE:
            kind, data = item
            if kind == "reasoning":
                yield done.chunk({"reasoning_content": data}, usage=include_usage)
            elif kind == "text":
                yield done.chunk({"content": data}, usage=include_usage)
            elif kind == "error":
                yield _sse(orjson.loads(openai_error_response(data).body))
        outcome = collector.result()
        if isinstance(outcome, Completion):
            yield done.chunk({}, outcome.finish, usage=include_usage)
            if include_usage:
                yield done.usage_chunk()
        yield b"data: [DONE]\n\n"

    return StreamingResponse(body_iter(), media_type="text/event-stream",
                             headers={"cache-control": "no-cache", **headers})


@dataclass
class Collector:
    """A facade turn's typed events (``turns.TurnEvent``) folded into its outcome: the reasoning
    text of each model call, whether a step was stored, and the completion or the error."""

    done: Completion
    committed: bool = False
    """A step with tool calls was stored: re-running the request would store the user message twice."""
    outcome: Completion | ApiError | None = None

    reasoned: bool = False
    """This call has streamed reasoning (its entry in ``done.reasoning`` is open)."""
    texted: bool = False
    """Some call of the turn has streamed text."""
    text_step: bool = False
    """This call has streamed text."""

    def take(self, event: TurnEvent) -> tuple[str, Any] | None:
        """Fold one event; what a stream shows of it, if anything."""
        done = self.done
        if isinstance(event, Streamed):
            d = event.delta
            if isinstance(d, ReasoningDelta) and d.text:
                if self.reasoned:
                    done.reasoning[-1] += d.text
                    return "reasoning", d.text
                self.reasoned = True
                done.reasoning.append(d.text)
                return "reasoning", (STEP_BREAK + d.text) if len(done.reasoning) > 1 else d.text
            if isinstance(d, TextDelta) and d.text:
                text = d.text
                if not self.text_step:
                    self.text_step = True
                    text, self.texted = (STEP_BREAK + text) if self.texted else text, True
                return "text", text
        elif isinstance(event, Requested):
            self.reasoned, self.text_step = False, False  # the model's call ended: the next is another's
        elif isinstance(event, ToolFinished):
            self.committed = True
        elif isinstance(event, TurnDone):
            data = event.result
            done.result, done.answer, done.finish = data, data.get("answer", ""), _finish(data)
            done.usage = data.get("usage") or {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
            done.model = done.model or data.get("model", "")
            self.outcome = done
        elif isinstance(event, TurnFailed):
            err = from_exception(event.exception)
            err.headers["x-hermes-session"] = done.session_id
            if self.committed:
                err.headers["x-should-retry"] = "false"
            self.outcome = err
            return "error", err
        return None


def completion(model: str, sid: str) -> Completion:
    return Completion("chatcmpl-" + secrets.token_hex(12), int(time.time()), model, sid)


async def _collect(state: GatewayState, events: AsyncIterator[TurnEvent], done: Completion,
                   queue: asyncio.Queue[Any], key: str | None) -> Completion | ApiError:
    """Consume the turn's events whether or not the client is still there; settle the
    idempotency entry with the outcome."""
    c = Collector(done)
    async for event in events:
        if (shown := c.take(event)) is not None:
            queue.put_nowait(shown)
    queue.put_nowait(_DONE)
    outcome = c.outcome or done
    if key is not None:
        if isinstance(outcome, ApiError) and not c.committed:
            state.idempotency.forget(key, outcome)
        else:
            state.idempotency.finish(key, outcome)
    return outcome


def _render_done(outcome: Completion | ApiError, stream: bool, include_usage: bool, *, replayed: bool = False,
                 headers: dict[str, str] | None = None) -> Response:
    if isinstance(outcome, ApiError):
        raise outcome
    extra = {"x-hermes-session": outcome.session_id, **(headers or {})}
    if replayed:
        extra["idempotent-replayed"] = "true"
    if not stream:
        return json_response(outcome.as_json(), headers=extra)
    chunks = [*outcome.replay(include_usage), b"data: [DONE]\n\n"]

    async def again() -> AsyncIterator[bytes]:
        for c in chunks:
            yield c

    return StreamingResponse(again(), media_type="text/event-stream", headers={"cache-control": "no-cache", **extra})
