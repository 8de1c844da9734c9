"""Gemini native wire: ``generateContent`` / ``streamGenerateContent?alt=sse`` (AI Studio and Vertex).

Pure translation between a ``ReplayPlan`` and Google's proto-JSON dialect. Facts it relies on
(from the Gemini API reference and observed exchanges):

* Gemini takes earlier thinking back as **signatures only** (``thoughtSignature``, a sibling of
  the part it rides on): each ``functionCall`` part carries its own, and a text turn's signature
  rides on its last text part. The planner already lifted them out of the private native record
  (``PlannedMessage.tool_signatures`` / ``thought_signature``) and dropped thought text; this
  module renders them byte-exact and never decides again.
* Responses mark thought summaries with ``thought: true``; streams repeat whole
  ``GenerateContentResponse`` objects per ``data:`` line, with no ``[DONE]``; the last chunk is
  often an empty text part that carries only a signature and the ``finishReason``.
* The request schema is strict proto-JSON (unknown names → 400), so tool parameters go in
  ``parametersJsonSchema`` (full JSON Schema) rather than the OpenAPI-subset ``parameters``.

Finish reasons: ``STOP`` → ``"stop"`` also for a turn with function calls — a stream sends the
calls in an earlier chunk than the ``STOP``, and one chunk cannot know what came before, so
``"tool_calls"`` could only be reported by the non-streaming parser and parse ≠ fold. Callers
look at ``message.tool_calls``. ``MAX_TOKENS`` → ``"length"``; safety-type reasons raise.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from ..core.attempt import Attempt, Carried, blocks, build, signed
from ..core.errors import StreamError, UnsupportedPart
from ..core.messages import Compaction, Reasoning, Text, ToolCall, ToolResult
from ..core.stream import (
    Delta,
    FinishDelta,
    NativeDelta,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
)
from ..replay import GEMINI_SKIP_SIGNATURE, PlannedMessage, ReplayPlan, Settings
from ..replay.gemini import plan_gemini
from ..replay.structure import Turns
from ..routing.models import Profile
from ..routing.resolve import Resolved
from ..routing.routes import deep_merge
from . import FunctionDecoder, ToolSpec

__all__ = [
    "BLOCKED_REASONS",
    "ITEMS",
    "PLANNER",
    "TURNS",
    "attempt",
    "decode_event",
    "decoder",
    "endpoint",
    "from_wire",
    "render_message",
    "thinking_config",
    "to_wire",
]

PLANNER = plan_gemini
TURNS: Turns | None = Turns("Gemini wants user and model turns to alternate", model="model")

ITEMS = "contents"  # see ``Wire.ITEMS``

render_message: Callable[..., Any] | None = None
"""This wire renders the whole plan in ``to_wire``; nothing per message to reuse."""

BLOCKED_REASONS = frozenset({"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
                             "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "LANGUAGE",
                             "MODEL_ARMOR"})
_FAILED_REASONS = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS",
                             "MISSING_THOUGHT_SIGNATURE", "MALFORMED_RESPONSE"})
_FINISH = {"STOP": "stop", "MAX_TOKENS": "length", "FINISH_REASON_UNSPECIFIED": "stop", "OTHER": "other"}
_REASONING = "reasoning"
_TEXT = "text"


# ----------------------------------------------------------------------------- endpoint


def endpoint(resolved: Resolved, *, stream: bool) -> tuple[str, dict[str, str]]:
    """(URL, extra headers). Auth headers come from ``keys.auth_headers`` (x-goog-api-key / Bearer).

    The row's ``variant`` picks the URL shape: Vertex puts the model under
    ``…/publishers/google``; the Gemini API puts it right under the base."""
    base = resolved.base_url.rstrip("/")
    model = resolved.model.removeprefix("models/")
    if resolved.route.variant == "vertex":
        prefix = base if base.endswith("/publishers/google") else f"{base}/publishers/google"
        url = f"{prefix}/models/{model}"
    else:
        url = f"{base}/models/{model}"
    url += ":streamGenerateContent?alt=sse" if stream else ":generateContent"
    return url, {"accept": "text/event-stream" if stream else "application/json", **resolved.route.headers}


# ----------------------------------------------------------------------------- request


def thinking_config(profile: Profile, settings: Settings, thinking: bool) -> dict[str, Any]:
    """``generationConfig.thinkingConfig`` from the model's profile; never both level and budget (400)."""
    kind = profile.thinking
    if not thinking:
        if profile.can_disable and kind == "budget":
            return {"includeThoughts": False, "thinkingBudget": 0}
        if kind == "level":  # cannot switch thinking off: ask for the least
            return {"includeThoughts": False, "thinkingLevel": profile.levels.get("low", "low")}
        return {"includeThoughts": False}
    out: dict[str, Any] = {"includeThoughts": True}
    effort = (settings.effort or "").lower()
    if effort and kind == "level":
        out["thinkingLevel"] = profile.levels.get(effort, "high")
    elif effort and kind == "budget" and effort in profile.budgets:
        out["thinkingBudget"] = max(profile.budgets[effort], profile.min_budget)
    return out


def _args(call: ToolCall) -> dict[str, Any]:
    try:
        value = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError:
        raise UnsupportedPart(f"tool call {call.id!r} ({call.name}) has arguments that are not JSON; "
                              "Gemini functionCall.args must be an object") from None
    if not isinstance(value, dict):
        raise UnsupportedPart(f"tool call {call.id!r} ({call.name}) arguments are not a JSON object")
    return value


def _model_parts(m: PlannedMessage, ids: bool) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    last_text: dict[str, Any] | None = None
    for p in m.parts:
        match p:
            case Text():
                if p.text:
                    last_text = {"text": p.text}
                    parts.append(last_text)
            case ToolCall():
                fc: dict[str, Any] = {"name": p.name, "args": _args(p)}
                if ids:
                    fc["id"] = p.id
                part: dict[str, Any] = {"functionCall": fc}
                sig = m.tool_signatures.get(p.id)
                if sig:
                    part["thoughtSignature"] = sig
                parts.append(part)
            case Compaction():
                last_text = {"text": p.summary}
                parts.append(last_text)
            case Reasoning():
                raise UnsupportedPart("Gemini takes reasoning back only as signatures; the plan kept a reasoning part")
            case ToolResult():
                raise UnsupportedPart("a tool result inside an assistant message cannot go on the Gemini wire")
    if m.thought_signature and last_text is not None:
        last_text["thoughtSignature"] = m.thought_signature
    return parts


def _user_parts(m: PlannedMessage, names: Mapping[str, str], ids: bool) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for p in m.parts:
        match p:
            case Text():
                if p.text:
                    parts.append({"text": p.text})
            case Compaction():
                parts.append({"text": p.summary})
            case ToolResult():
                name = names.get(p.call_id) or p.name
                if not name:
                    raise UnsupportedPart(f"tool result for {p.call_id!r} has no matching call and no name; "
                                          "Gemini functionResponse needs the function name")
                fr: dict[str, Any] = {"name": name, "response": {"error" if p.is_error else "output": p.content}}
                if ids:
                    fr["id"] = p.call_id
                parts.append({"functionResponse": fr})
            case _:
                raise UnsupportedPart(f"a {p.kind} part cannot go in a Gemini {m.role} turn")
    return parts


_DEFAULT = Settings()


def to_wire(plan: ReplayPlan, *, tools: Sequence[ToolSpec] = (), settings: Settings = _DEFAULT,
            stream: bool = False, rendered: object = None) -> dict[str, Any]:
    """The ``GenerateContentRequest`` body. ``stream`` changes only the URL, not the body."""
    ids = plan.target.profile.call_ids
    names = {p.id: p.name for m in plan.messages for p in m.parts if isinstance(p, ToolCall)}
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    for m in plan.messages:
        if m.role == "system":
            system += [{"text": p.text} for p in m.parts if isinstance(p, Text) and p.text]
            system += [{"text": p.summary} for p in m.parts if isinstance(p, Compaction)]
            continue
        role = "model" if m.role == "assistant" else "user"
        parts = _model_parts(m, ids) if role == "model" else _user_parts(m, names, ids)
        if not parts:
            continue
        if m.joins and contents:  # the plan's structure decision (replay.structure)
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": system}
    if tools:
        body["tools"] = [{"functionDeclarations": [
            {"name": t.name, "description": t.description, "parametersJsonSchema": dict(t.parameters)}
            for t in tools]}]
    body["generationConfig"] = {"thinkingConfig": thinking_config(plan.target.profile, settings, plan.thinking)}
    if plan.request_fields:
        body = deep_merge(body, plan.request_fields)
    return body


# ----------------------------------------------------------------------------- response


def _usage(meta: Any) -> list[Delta]:
    if not isinstance(meta, Mapping):
        return []
    usage: dict[str, Any] = {}
    for src, dst in (("promptTokenCount", "input_tokens"), ("candidatesTokenCount", "output_tokens"),
                     ("thoughtsTokenCount", "reasoning_tokens"), ("cachedContentTokenCount", "cached_tokens"),
                     ("totalTokenCount", "total_tokens")):
        if isinstance(meta.get(src), int):
            usage[dst] = meta[src]
    return [UsageDelta(usage)] if usage else []


def _call_key(fc: Mapping[str, Any], pos: int, args: str) -> str:
    """Delta key of a function call: its id, else a digest (streams send each call whole, once)."""
    if isinstance(fc.get("id"), str) and fc["id"]:
        return f"fc:{fc['id']}"
    digest = hashlib.sha256(f"{fc.get('name')}\0{args}".encode()).hexdigest()[:12]
    return f"fc#{pos}:{digest}"


def _part_deltas(part: Any, pos: int) -> list[Delta]:
    if not isinstance(part, Mapping):
        raise StreamError(f"gemini: a content part is not an object: {part!r:.80}")
    sig = part.get("thoughtSignature", part.get("thought_signature"))
    if sig is not None and not isinstance(sig, str):
        raise StreamError("gemini: thoughtSignature is not a string")
    fc = part.get("functionCall", part.get("function_call"))
    if fc is not None:
        if not isinstance(fc, Mapping) or not isinstance(fc.get("name"), str):
            raise StreamError(f"gemini: functionCall without a name: {fc!r:.80}")
        raw_args = fc.get("args") or {}
        if not isinstance(raw_args, Mapping):
            raise StreamError(f"gemini: functionCall.args is not an object: {raw_args!r:.80}")
        args = orjson.dumps(raw_args).decode()
        key = _call_key(fc, pos, args)
        out: list[Delta] = [ToolCallDelta(key, fc.get("id") or None, fc["name"], args)]
        if sig:
            out.append(NativeDelta(_REASONING, tool_signature=(key, sig)))
        return out
    text = part.get("text")
    if text is not None and not isinstance(text, str):
        raise StreamError("gemini: part text is not a string")
    out = []
    if part.get("thought") is True:
        if text:
            out.append(ReasoningDelta(_REASONING, text=text))
    elif text:
        out.append(TextDelta(_TEXT, text))
    if sig:
        out.append(NativeDelta(_REASONING, thought_signature=sig))
    return out


def _blocked(what: str, detail: str = "") -> StreamError:
    more = f": {detail}" if detail else ""
    return StreamError(f"gemini: response blocked ({what}){more}; nothing was stored",
                       hint="rephrase the request; the provider's safety filter refused it")


def _deltas(payload: Any) -> list[Delta]:
    if not isinstance(payload, Mapping):
        raise StreamError(f"gemini: response is not a JSON object: {payload!r:.80}")
    err = payload.get("error")
    if err is not None:
        msg = err.get("message", err) if isinstance(err, Mapping) else err
        status = err.get("status", "") if isinstance(err, Mapping) else ""
        raise StreamError(f"gemini: error in response{f' ({status})' if status else ''}: {str(msg)[:300]}")
    feedback = payload.get("promptFeedback")
    if isinstance(feedback, Mapping) and feedback.get("blockReason"):
        raise _blocked(f"prompt blockReason {feedback['blockReason']}", str(feedback.get("blockReasonMessage", "")))
    out: list[Delta] = []
    candidates = payload.get("candidates") or []
    if not isinstance(candidates, list):
        raise StreamError("gemini: 'candidates' is not a list")
    if candidates:
        cand = candidates[0]
        if not isinstance(cand, Mapping):
            raise StreamError("gemini: a candidate is not an object")
        finish = cand.get("finishReason")
        if finish is not None and not isinstance(finish, str):
            raise StreamError(f"gemini: finishReason is not a string: {finish!r:.60}")
        content = cand.get("content")
        parts = content.get("parts") if isinstance(content, Mapping) else None
        if finish in BLOCKED_REASONS:
            raise _blocked(f"finishReason {finish}", str(cand.get("finishMessage", "")))
        if finish in _FAILED_REASONS:
            raise StreamError(f"gemini: generation failed ({finish}): {str(cand.get('finishMessage', ''))[:200]}; "
                              "nothing was stored")
        if not parts and not finish:
            raise StreamError("gemini: candidate has no content parts and no finishReason; nothing was stored")
        if parts is not None and not isinstance(parts, list):
            raise StreamError("gemini: content.parts is not a list")
        for pos, part in enumerate(parts or ()):
            out += _part_deltas(part, pos)
    out += _usage(payload.get("usageMetadata"))
    if candidates:
        finish = candidates[0].get("finishReason")
        if finish:
            out.append(FinishDelta(_FINISH.get(str(finish), str(finish).lower())))
    return out


def from_wire(payload: Any) -> list[Delta]:
    """A whole ``GenerateContentResponse`` as deltas (same fold as the stream)."""
    if isinstance(payload, Mapping) and not payload.get("candidates") and not payload.get("error") \
            and not (isinstance(payload.get("promptFeedback"), Mapping) and payload["promptFeedback"].get("blockReason")):
        raise StreamError("gemini: response has no candidates; nothing was stored")
    return _deltas(payload)


def decode_event(event: str, data: str) -> list[Delta]:
    """One SSE ``data:`` chunk: a whole ``GenerateContentResponse`` (no ``[DONE]`` sentinel)."""
    if not data.strip():
        return []
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise StreamError(f"gemini: stream chunk is not JSON: {data[:120]!r}") from None
    if isinstance(payload, list):  # a JSON-array stream (no alt=sse) delivered whole
        return [d for item in payload for d in _deltas(item)]
    return _deltas(payload)


_DECODER = FunctionDecoder(decode_event, from_wire)


def decoder(resolved: Resolved) -> FunctionDecoder:
    """Gemini's events are whole responses: one stateless decoder serves every request."""
    return _DECODER


# ----------------------------------------------------------------------------- attempt


def attempt(plan: ReplayPlan, body: Mapping[str, Any]) -> Attempt:
    """What ``contents`` carried back: each ``thoughtSignature`` (the documented validator
    skip is a placeholder, not a signed value) and the model turns holding a ``functionCall``."""
    carried: list[Carried] = []
    turns: list[int] = []
    for i, k, part in blocks(body, "contents", "parts"):
        if "functionCall" in part:
            turns.append(i)
        if "thoughtSignature" in part:
            sig = part["thoughtSignature"]
            carried.append(Carried(i, f"parts.{k}.thoughtSignature", *signed(sig, "native", skip=GEMINI_SKIP_SIGNATURE)))
    return build("gemini", plan.target.route.must_echo, body, carried, turns)
