"""Rejection memory: learn from a 4xx that names a replayed field, retry once, never pay twice.

``classify`` is pure. It teaches something only when all of these hold:

1. the status is 4xx;
2. the error says a field is unknown / not permitted / unsupported — read from structured
   error data first (``param``, Pydantic ``loc`` paths, ``messages.N.x`` / ``messages[N].x``
   paths, Gemini ``Unknown name "x"``, Groq ``property 'x' is unsupported``), the phrase list
   only as a fallback;
3. it names a carrier field that this request actually sent on an assistant message;
4. it is not the opposite signal ("must be passed back", "missing", "must not be empty"),
   which never teaches a drop.

Naming ``reasoning_content`` drops every carrier the request sent (strict schemas report one
key per error); naming ``reasoning`` or ``reasoning_details`` drops those two. Must-echo
routes never learn to drop ``reasoning_content``. Signature rejections (Anthropic, Bedrock,
Responses, Gemini, Copilot) suppress the blobs the request carried, by content hash.

What is learned is stored per (provider, host, model) in the session's ``model_config`` (so
``--resume``, branches and gateway turns keep it) and in the global capability ledger (so a
new session does not pay the same 400). Stored history is never modified.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from .messages import Reasoning
from .replay import Learned, blob_hash
from .resolve import Resolved

__all__ = ["Lesson", "RetryState", "classify", "learned_for", "recover"]

CARRIERS = ("reasoning_content", "reasoning", "reasoning_details")
SESSION_KEY = "reasoning_rejections"
_UNKNOWN_PHRASES = (
    "extra inputs are not permitted", "extra_forbidden", "is unsupported", "not supported", "no such field",
    "unknown field", "unrecognized request argument", "unrecognized field", "unknown parameter",
    "unexpected field", "additional propert", "unknown key", "unknown name", "cannot find field",
    "not permitted", "unrecognized key", "unknown argument", "is not allowed", "not a valid field",
    "未知字段", "不支持的字段", "不支持", "unbekanntes feld", "champ inconnu", "campo desconocido",
)
_UNKNOWN_CODES = {"unknown_parameter", "extra_forbidden", "wrong_api_format", "unsupported_parameter"}
_OPPOSITE = ("must be passed back", "is missing", " missing ", "missing in", "must not be empty",
             "cannot be empty", "not allowed to be empty", "should not be empty", "is required",
             "must be provided", "must include", "must be included")
_SIGNATURE = ("invalid `signature`", "invalid signature", "signature is invalid", "corrupted thought signature",
              "invalid_encrypted_content", "could not be verified", "bound to a different conversation",
              "redacted_thinking", "redactedcontent")
_PATH_FIELD = re.compile(r"messages\s*(?:\.|\[)\s*(\d+)\s*\]?\s*\.?\s*(?:(?:assistant)\s*\.\s*)?"
                         r"(reasoning_content|reasoning_details|reasoning)\b")
_QUOTED = re.compile(r"""(?:unknown name|property|field|parameter|argument|key)\s*:?\s*["'`]([\w.\[\]]+)["'`]""", re.I)


@dataclass(frozen=True, slots=True)
class Lesson:
    """What one rejection taught."""

    dropped: frozenset[str] = frozenset()
    suppressed: frozenset[str] = frozenset()
    evidence: str = ""

    def __bool__(self) -> bool:
        return bool(self.dropped or self.suppressed)


@dataclass(slots=True)
class RetryState:
    """One retry per request: a second rejection of the same request is reported, not retried."""

    retried: bool = False
    notes: list[str] = field(default_factory=list)


def _walk(data: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(data, Mapping):
        for k, v in data.items():
            yield str(k), v
            yield from _walk(v)
    elif isinstance(data, list):
        for v in data:
            yield from _walk(v)


def _named_fields(text: str, data: Any) -> set[str]:
    """Carrier names the error points at (structured data first, then text patterns)."""
    names: set[str] = set()
    for key, value in _walk(data):
        if key == "loc" and isinstance(value, list) and value:
            last = str(value[-1])
            if last in CARRIERS and ("messages" in map(str, value) or last != "reasoning"):
                names.add(last)
        elif key == "param" and isinstance(value, str) and value:
            m = _PATH_FIELD.search(value)
            if m:
                names.add(m.group(2))
            elif value in ("reasoning_content", "reasoning_details"):
                names.add(value)
        elif isinstance(value, str) and key in ("message", "msg", "detail", "error"):
            names |= _text_fields(value)
    return names | _text_fields(text)


def _text_fields(text: str) -> set[str]:
    names = {m.group(2) for m in _PATH_FIELD.finditer(text)}
    for m in _QUOTED.finditer(text):
        token = m.group(1)
        path = _PATH_FIELD.search(token)
        if path:
            names.add(path.group(2))
        elif token in ("reasoning_content", "reasoning_details"):
            names.add(token)
    names |= {n for n in ("reasoning_content", "reasoning_details") if re.search(rf"\b{n}\b", text)}
    return names


def _says_unknown(lower: str, data: Any) -> bool:
    for key, value in _walk(data):
        if key in ("code", "type") and isinstance(value, str) and value.lower() in _UNKNOWN_CODES:
            return True
    return any(p in lower for p in _UNKNOWN_PHRASES)


def _sent_carriers(body: Mapping[str, Any]) -> set[str]:
    sent: set[str] = set()
    for m in body.get("messages", []) if isinstance(body.get("messages"), list) else []:
        if isinstance(m, Mapping) and m.get("role") == "assistant":
            sent |= {c for c in CARRIERS if c in m}
    return sent


def _sent_blobs(plan: Any) -> set[str]:
    hashes: set[str] = set()
    for m in getattr(plan, "messages", ()):
        for p in m.parts:
            if isinstance(p, Reasoning) and p.blob:
                hashes.add(blob_hash(p.blob))
        for v in (m.fields.get("reasoning_opaque"), m.thought_signature, *m.tool_signatures.values()):
            if isinstance(v, str) and v:
                hashes.add(blob_hash(v))
        ec = m.fields.get("extra_content")
        if isinstance(ec, Mapping):
            sig = ec.get("google", {}).get("thought_signature")
            if isinstance(sig, str):
                hashes.add(blob_hash(sig))
    return hashes


def classify(status: int, body_text: str, sent_body: Mapping[str, Any], target: Resolved,
             plan: Any = None, *, already: Learned = Learned()) -> Lesson:
    """What this error teaches about ``target`` — possibly nothing. Pure."""
    if not 400 <= status < 500:
        return Lesson()
    lower = body_text.lower()
    try:
        data: Any = orjson.loads(body_text)
    except orjson.JSONDecodeError:
        data = None
    excerpt = " ".join(body_text.split())[:300]
    if any(p in lower for p in _SIGNATURE) and plan is not None:
        fresh = _sent_blobs(plan) - already.suppressed
        return Lesson(suppressed=frozenset(fresh), evidence=excerpt) if fresh else Lesson()
    if any(p in lower for p in _OPPOSITE) or not _says_unknown(lower, data):
        return Lesson()
    sent = _sent_carriers(sent_body)
    named = _named_fields(body_text, data) & sent
    if not named:
        return Lesson()
    drop = set(sent) if "reasoning_content" in named else {"reasoning", "reasoning_details"} & sent
    if target.route.must_echo:
        drop.discard("reasoning_content")
    drop -= already.dropped
    return Lesson(dropped=frozenset(drop), evidence=excerpt) if drop else Lesson()


def _key(target: Resolved) -> str:
    return f"{target.route.key}|{target.host}|{target.model}"


def learned_for(store: Any, session_id: str | None, target: Resolved) -> Learned:
    """Session lessons plus the global ledger for (provider, host, model)."""
    dropped: set[str] = set()
    suppressed: set[str] = set()
    if session_id is not None:
        entry = (store.model_config(session_id).get(SESSION_KEY) or {}).get(_key(target)) or {}
        dropped |= set(entry.get("dropped", []))
        suppressed |= set(entry.get("suppressed", []))
    caps = store.capabilities(target.route.key, target.host, target.model)
    dropped |= set(caps.get("rejected_carriers") or [])
    suppressed |= set(caps.get("suppressed_blobs") or [])
    if target.route.must_echo:
        dropped.discard("reasoning_content")
    return Learned(frozenset(dropped), frozenset(suppressed))


def remember(store: Any, session_id: str | None, target: Resolved, lesson: Lesson, status: int) -> None:
    """Persist a lesson in the session's model_config and the capability ledger."""
    evidence = {"status": status, "error": lesson.evidence, "time": time.time()}
    if session_id is not None:
        cfg = store.model_config(session_id).get(SESSION_KEY) or {}
        entry = dict(cfg.get(_key(target)) or {})
        entry["dropped"] = sorted(set(entry.get("dropped", [])) | lesson.dropped)
        entry["suppressed"] = sorted(set(entry.get("suppressed", [])) | lesson.suppressed)
        store.patch_model_config(session_id, {SESSION_KEY: {**cfg, _key(target): entry}})
    r = target.route.key
    if lesson.dropped:
        store.learn(r, target.host, target.model, "rejected_carriers", sorted(lesson.dropped), evidence)
    if lesson.suppressed:
        store.learn(r, target.host, target.model, "suppressed_blobs", sorted(lesson.suppressed), evidence)


def recover(store: Any, session_id: str | None, target: Resolved, err: Any, retry: RetryState) -> str | None:
    """Learn from ``err`` and say so, or None when the error must be reported as it is."""
    if retry.retried:
        return None
    sent = getattr(err, "sent_body", None) or {}
    plan = getattr(err, "plan", None)
    lesson = classify(err.status, err.body, sent, target, plan, already=learned_for(store, session_id, target))
    if not lesson:
        return None
    retry.retried = True
    remember(store, session_id, target, lesson, err.status)
    what = (f"replayed {', '.join(sorted(lesson.dropped))}" if lesson.dropped
            else f"{len(lesson.suppressed)} signed reasoning block(s)")
    note = f"{target.model} on {target.route.key} ({target.host}) rejected {what} — retrying without it for this model."
    from .logs import log_event

    log_event("learned", session=session_id, route=target.route.key, host=target.host, model=target.model,
              dropped=sorted(lesson.dropped), suppressed=len(lesson.suppressed), status=err.status,
              error=lesson.evidence)
    retry.notes.append(note)
    return note
