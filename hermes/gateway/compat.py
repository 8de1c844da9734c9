"""``POST /v1/chat/completions``: an OpenAI-compatible face on a Hermes session.

An existing OpenAI client keeps sending its whole ``messages`` list, but the session named by
``X-Hermes-Session`` already holds the history *and the reasoning* the client never saw, so
only the **last user message** is taken, as the new user turn; everything else in the request
is ignored (the server's history wins). ``model`` is echoed back and does not switch the
session's route (use ``POST /v1/sessions/{id}/messages`` with ``provider``/``model`` for that).

Non-streaming returns a ``chat.completion``; ``stream: true`` returns ``chat.completion.chunk``
SSE lines ending with ``data: [DONE]``. Reasoning streams as ``delta.reasoning_content`` (the
field most OpenAI-compatible clients already display); the final message carries it too.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from .http import ApiError, json_response, read_json
from .turns import TurnRequest

__all__ = ["chat_completions", "last_user_text"]

HEADER = "x-hermes-session"


def last_user_text(messages: Any) -> str:
    """The text of the last ``user`` message (string content or text parts joined)."""
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "invalid_request", "'messages' must be a non-empty list")
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                texts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
                if texts:
                    return "".join(texts)
            raise ApiError(400, "invalid_request", "the last user message has no text content")
    raise ApiError(400, "invalid_request", "'messages' has no user message")


def _chunk(cid: str, created: int, model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


async def chat_completions(state: Any, request: Request) -> Response:
    from .app import error_payload, sse

    body = await read_json(request, state.options.max_body, timeout_s=state.options.body_timeout_s)
    sid = request.headers.get(HEADER)
    if not sid:
        raise ApiError(400, "invalid_request", "name the session in the X-Hermes-Session header "
                                               "(create one with POST /v1/sessions)")
    text = last_user_text(body.get("messages"))
    stream = body.get("stream") is True
    import anyio.to_thread

    await anyio.to_thread.run_sync(state.require_session, sid)
    req = TurnRequest(sid, text)
    cid = "chatcmpl-" + secrets.token_hex(12)
    created = int(time.time())
    if not stream:
        reasoning: list[str] = []
        events = await state.turn_events(req)
        result: dict[str, Any] = {}
        async for event, data in events:
            if event == "reasoning":
                reasoning.append(data["text"])
            elif event == "error":
                raise data["exception"]
            elif event == "done":
                result = data
        model = body.get("model") or result.get("model", "")
        message: dict[str, Any] = {"role": "assistant", "content": result.get("answer", "")}
        if reasoning:
            message["reasoning_content"] = "".join(reasoning)
        return json_response({
            "id": cid, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "stop" if result.get("stopped") == "answer" else "length"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            "hermes": {"session_id": sid, "steps": result.get("steps"), "route": result.get("route")},
        })
    events = await state.turn_events(req)
    model = body.get("model") or ""

    async def body_iter() -> AsyncIterator[bytes]:
        yield sse(None, _chunk(cid, created, model, {"role": "assistant", "content": ""}))
        async for event, data in events:
            if event == "reasoning":
                yield sse(None, _chunk(cid, created, model, {"reasoning_content": data["text"]}))
            elif event == "text":
                yield sse(None, _chunk(cid, created, model, {"content": data["text"]}))
            elif event == "error":
                yield sse(None, error_payload(data["exception"]))
            elif event == "done":
                finish = "stop" if data.get("stopped") == "answer" else "length"
                yield sse(None, _chunk(cid, created, model, {}, finish))
        yield b"data: [DONE]\n\n"

    return StreamingResponse(body_iter(), media_type="text/event-stream", headers={"cache-control": "no-cache"})
