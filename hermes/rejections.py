"""Rejection memory: learn from a 4xx that names a replayed field, retry once, never pay twice.

``classify`` is pure. A carrier drop is learned only when the status is a shape-related 4xx
(never 5xx, auth or rate limits); the error names a carrier as unknown / not permitted /
unsupported — structured data first (Pydantic ``loc``, ``param`` with an unknown-parameter
code, Gemini ``fieldViolations``, gateway ``metadata.raw`` unwrapped), then the providers'
sentence shapes that tie the field to the complaint, the bare phrase list last, with
"expected one of" / "did you mean" lists cut off; the request sent that field on an
assistant message (at the index the error gives) — a top-level ``reasoning`` parameter is a
different field; and nothing in the error asks for *more* ("must be passed back", "missing",
"required", "empty", in several languages). Naming ``reasoning_content`` drops every carrier
sent; naming ``reasoning``/``reasoning_details`` drops those two; must-echo routes never drop
``reasoning_content``. Signature rejections suppress the signed blobs the request carried, by
content hash. A must-echo refusal ("`reasoning_content` … must be passed back", Kimi's "is missing in
assistant tool call", also wrapped in a gateway's ``metadata.raw``) teaches the opposite: pad tool
turns with ``reasoning_content`` from now on. Lessons live per (provider, host, model) in the session's ``model_config`` and in
the global capability ledger; stored history is never modified. See docs/rejections.md.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from .messages import Message, Reasoning
from .replay import GEMINI_SKIP_SIGNATURE, Learned, blob_hash
from .resolve import Resolved

__all__ = [
    "CARRIERS",
    "SESSION_KEY",
    "Lesson",
    "Mention",
    "RetryState",
    "classify",
    "forget",
    "learned_for",
    "mentions",
    "recover",
    "remember",
]

CARRIERS = ("reasoning_content", "reasoning", "reasoning_details")
SESSION_KEY = "reasoning_rejections"
KIND_DROPPED = "rejected_carriers"
KIND_SUPPRESSED = "suppressed_blobs"
KIND_ECHO = "must_echo"
_NOT_SHAPE = frozenset({401, 402, 403, 407, 408, 413, 429})
"""4xx statuses that are about auth, money, size or rate — never about an unknown field."""

# --------------------------------------------------------------------------- vocabulary

_UNKNOWN_CODES = frozenset({"unknown_parameter", "extra_forbidden", "unsupported_parameter", "wrong_api_format",
                            "unknown_field", "additional_properties"})
_PHRASES = (
    "extra inputs are not permitted", "extra_forbidden", "is unsupported", "no such field", "unknown field",
    "unrecognized request argument", "unrecognized field", "unknown parameter", "unexpected field",
    "additional propert", "unknown key", "unknown name", "cannot find field", "unrecognized key",
    "unknown argument", "was unexpected", "extraneous key", "not a valid field",
    "未知字段", "未知参数", "不支持的字段", "不支持的参数", "unbekanntes feld", "unbekannter parameter",
    "champ inconnu", "paramètre inconnu", "campo desconocido", "parámetro desconocido", "campo sconosciuto",
    "campo desconhecido", "不明なフィールド", "未知のフィールド", "неизвестное поле", "неизвестный параметр",
)
_OPPOSITE = re.compile(
    r"passed back|sent back|echoed back|must be (?:provided|included|echoed|returned|present|non-empty)"
    r"|\bmissing\b|\brequired\b|must include|\bempty\b|必须|缺少|缺失|不能为空|回传"
    r"|erforderlich|\bfehlt\b|requis|manquant|obligatori|\bfalta\b|必須|不足|обязател|отсутств",
    re.I,
)
_SIGNATURE = re.compile(
    r"invalid [`'\"]?signature[`'\"]? in [`'\"]?thinking[`'\"]? block|invalid [`'\"]?data[`'\"]? in "
    r"[`'\"]?redacted_thinking|bound to a different conversation|corrupted thought signature"
    r"|invalid_encrypted_content|encrypted content[^.]{0,80}could not be (?:verified|decrypted)"
    r"|doesn't support the (?:redactedcontent|signature) field|does not support the (?:redactedcontent|signature) field"
    r"|blocks in the latest assistant message cannot be modified",
    re.I,
)
_ECHO = re.compile(r"reasoning_content\W{0,3}\s+in the thinking mode must be passed back|reasoning_content\W{0,3}\s+"
                   r"is missing in assistant tool call|missing\s+\W?reasoning_content", re.I)
"""A must-echo refusal (DeepSeek / MiMo, Kimi), also when a gateway wraps it in ``metadata.raw``:
the route wants *more* reasoning back, so it teaches "pad tool turns", never "drop the field"."""
_BEDROCK_REDACTED = re.compile(r"validationexception.*(?:redacted|encrypt)", re.I | re.S)
_NOT_SIGNATURE = re.compile(r"expected [`'\"]?thinking[`'\"]? or [`'\"]?redacted_thinking", re.I)
_LIST_TAIL = re.compile(r"(?:expected one of|must be one of|one of the following|did you mean|allowed (?:keys|fields|"
                        r"values|properties)|valid (?:keys|fields|parameters) are|supported (?:fields|parameters) are"
                        r"|期望|应为)[^\n]*", re.I)

_P = r"[A-Za-z_$][\w$]*(?:(?:\.|\s?->\s?)[\w$]+|\[\s*['\"]?[\w$]+['\"]?\s*\])*"
"""A field path: ``x``, ``messages[1].x``, ``messages.2.assistant.x``, ``body -> messages -> 1 -> x``."""
_Q = r"[\"'`“«「『]?\s?"
_QE = r"\s?[\"'`”»」』]?"
_STRUCTURED_TOP = "top"

# (regex, scope when the token is a bare name and no `where` is given)
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # OpenAI top level: "Unrecognized request argument supplied: reasoning"
    (re.compile(rf"unrecognized request argument supplied\s*:?\s*{_Q}(?P<tok>{_P})", re.I), "top"),
    # Gemini: Unknown name "x" at 'messages[1]': Cannot find field.  (no "at" → top level)
    (re.compile(rf"unknown name\s*{_Q}(?P<tok>{_P}){_QE}(?:\s*at\s*{_Q}(?P<where>{_P}){_QE})?", re.I), "top"),
    # Groq: ('messages.1' : property 'x' is unsupported)  /  property 'x' is unsupported
    (re.compile(rf"(?:{_Q}(?P<where>{_P}){_QE}\s*:\s*)?property\s*{_Q}(?P<tok>{_P}){_QE}\s*is\s+(?:unsupported|not "
                rf"supported|not allowed|not permitted)", re.I), "top"),
    # OpenAI message level: Additional properties are not allowed ('x' was unexpected) - 'messages.2'
    (re.compile(rf"\(\s*(?P<toks>{_Q}[\w$]+{_QE}(?:\s*,\s*{_Q}[\w$]+{_QE})*)\s*(?:was|were)\s+unexpected\s*\)"
                rf"(?:\s*-\s*{_Q}(?P<where>{_P}){_QE})?", re.I), "any"),
    # path first: messages.1.x: Extra inputs are not permitted / messages[2]: unknown field `x`
    (re.compile(rf"(?:{_Q}(?P<where>{_P}){_QE}\s*:\s*)?(?:unknown|unrecognized|unexpected|unsupported|extraneous)\s+"
                rf"(?:field|parameter|property|key|argument)s?(?:\s+in\s+input)?\s*[:=]?\s*{_Q}(?P<tok>{_P})",
                re.I), "any"),
    (re.compile(rf"{_Q}(?P<tok>{_P}){_QE}\s*:?\s+(?:extra inputs are not permitted|extra fields not permitted|"
                rf"additional propert(?:y|ies) (?:is|are) not allowed)", re.I), "any"),
    (re.compile(rf"extraneous key\s*\[(?P<tok>{_P})\]", re.I), "any"),
    (re.compile(rf"no such field\s*:?\s*{_Q}(?P<tok>{_P})", re.I), "any"),
    # name first: 'x' is not supported / is unknown / is not permitted
    (re.compile(rf"{_Q}(?P<tok>{_P}){_QE}\s+(?:is|are)\s+(?:an?\s+)?(?:unsupported|not supported|not allowed|not "
                rf"permitted|unknown|not recognized|unrecognized|not a valid field|not a known field)\b", re.I), "any"),
    # other languages, both word orders
    (re.compile(rf"(?:未知字段|未知参数|不支持的字段|不支持的参数|无法识别的字段|unbekanntes feld|unbekannter parameter|"
                rf"champ inconnu|paramètre inconnu|campo desconocido|parámetro desconocido|campo sconosciuto|"
                rf"campo desconhecido|不明なフィールド|未知のフィールド|неизвестное поле|неизвестный параметр)"
                rf"\s*[:：]?\s*{_Q}(?P<tok>{_P})", re.I), "any"),
    (re.compile(rf"{_Q}(?P<tok>{_P}){_QE}\s*(?:字段)?\s*(?:是未知字段|为未知字段|不受支持|不被支持|不支持|"
                rf"は不明なフィールドです|はサポートされていません|ist unbekannt|ist nicht erlaubt|wird nicht unterstützt|"
                rf"n'est pas (?:reconnu|autorisé|pris en charge)|no es (?:reconocido|compatible|válido)|"
                rf"no está permitido|non è (?:supportato|consentito)|не поддерживается|не разрешено)", re.I), "any"),
)


@dataclass(frozen=True, slots=True)
class Mention:
    """One field an error complains about: its name, where it lives, and at which message."""

    name: str
    scope: str
    """``message`` (under ``messages[i]``), ``top`` (request top level), ``any`` (not said),
    ``other`` (nested somewhere else, e.g. ``tools.0.x``)."""
    index: int | None = None


@dataclass(frozen=True, slots=True)
class Lesson:
    """What one rejection taught."""

    dropped: frozenset[str] = frozenset()
    suppressed: frozenset[str] = frozenset()
    echo: bool = False
    """Tool turns must carry ``reasoning_content`` on this (provider, host, model)."""
    evidence: str = ""

    def __bool__(self) -> bool:
        return bool(self.dropped or self.suppressed or self.echo)


@dataclass(slots=True)
class RetryState:
    """One retry per request: a second rejection of the same request is reported, not retried."""

    retried: bool = False
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- reading errors


def _expand(data: Any, depth: int = 0) -> Any:
    """Parse JSON found inside strings (gateways pass upstream errors as ``metadata.raw``)."""
    if depth > 4:
        return data
    if isinstance(data, str):
        s = data.strip()
        if s[:1] in "{[" and s[-1:] in "}]":
            try:
                return _expand(orjson.loads(s), depth + 1)
            except orjson.JSONDecodeError:
                return data
        return data
    if isinstance(data, Mapping):
        return {str(k): _expand(v, depth + 1) for k, v in data.items()}
    if isinstance(data, list):
        return [_expand(v, depth + 1) for v in data]
    return data


def _records(data: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(data, Mapping):
        yield data
        for v in data.values():
            yield from _records(v)
    elif isinstance(data, list):
        for v in data:
            yield from _records(v)


def _texts(data: Any) -> Iterator[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, Mapping):
        for v in data.values():
            yield from _texts(v)
    elif isinstance(data, list):
        for v in data:
            yield from _texts(v)


def _segments(path: str) -> list[str]:
    return [s for s in re.split(r"\s*->\s*|[.\[\]'\"\s]+", path) if s]


def _mention(segs: Sequence[Any], bare_scope: str) -> Mention | None:
    segs = [str(s) for s in segs if str(s) not in ("body", "$", "")]
    if not segs:
        return None
    name = segs[-1]
    if name not in CARRIERS:
        return None
    head = segs[:-1]
    if not head:
        return Mention(name, bare_scope)
    if "messages" in head:
        i = head.index("messages")
        idx = int(head[i + 1]) if i + 1 < len(head) and head[i + 1].isdigit() else None
        return Mention(name, "message", idx)
    if head == ["input"] or head[0] in ("messages", "message"):
        return Mention(name, "message")
    return Mention(name, "other")


def _code_says_unknown(rec: Mapping[str, Any]) -> bool:
    for key in ("code", "type"):
        v = rec.get(key)
        if isinstance(v, str) and v.lower() in _UNKNOWN_CODES:
            return True
    msg = rec.get("message") or rec.get("msg") or ""
    return isinstance(msg, str) and any(p in msg.lower() for p in _PHRASES)


def _structured(data: Any) -> list[Mention]:
    """Mentions from error *data*: Pydantic ``loc``, ``param``, Gemini ``fieldViolations``."""
    out: list[Mention] = []
    for rec in _records(data):
        loc = rec.get("loc")
        if isinstance(loc, list) and loc and _code_says_unknown(rec):
            m = _mention(loc, "top")
            if m:
                out.append(m)
        param = rec.get("param")
        if isinstance(param, str) and param and _code_says_unknown(rec):
            m = _mention(_segments(param), "top")
            if m:
                out.append(m)
        fv = rec.get("field")
        desc = rec.get("description")
        if isinstance(fv, str) and isinstance(desc, str) and any(p in desc.lower() for p in _PHRASES):
            m = _mention(_segments(fv), "top")
            if m:
                out.append(m)
    return out


def _textual(text: str) -> list[Mention]:
    """Mentions from the providers' sentence shapes (field next to the complaint)."""
    out: list[Mention] = []
    for rx, bare in _PATTERNS:
        for m in rx.finditer(text):
            groups = m.groupdict()
            where = _segments(groups.get("where") or "")
            if not {"messages", "message", "input"} & set(where):
                where = []  # "Error: unknown field x" — a label, not a location
            toks = [t.strip(" '\"`,") for t in (groups.get("toks") or "").split(",")] if groups.get("toks") \
                else [groups.get("tok") or ""]
            for tok in toks:
                found = _mention([*where, *_segments(tok)], bare if not where else "any")
                if found:
                    out.append(found)
    return out


def _fallback(text: str) -> list[Mention]:
    """The seed's phrase list: an unknown-field phrase plus a carrier word in the same text,
    with listed alternatives cut off first."""
    cut = _LIST_TAIL.sub("", text)
    low = cut.lower()
    if not any(p in low for p in _PHRASES):
        return []
    out = [Mention(n, "any") for n in ("reasoning_content", "reasoning_details") if re.search(rf"\b{n}\b", cut)]
    if re.search(r"messages[^\n]{0,80}?\breasoning\b(?!_)", cut):
        out.append(Mention("reasoning", "message"))
    return out


def mentions(status: int, body_text: str) -> tuple[list[Mention], bool]:
    """(carrier mentions, opposite signal present) for an error body. Pure; exposed for tests."""
    try:
        data: Any = _expand(orjson.loads(body_text))
    except orjson.JSONDecodeError:
        data = body_text
    texts = list(_texts(data)) or [body_text]
    opposite = any(_OPPOSITE.search(t) for t in texts) or any(
        isinstance(r.get("type"), str) and r["type"].lower() == "missing" for r in _records(data))
    found = _structured(data)
    for t in texts:
        found += _textual(t)
    if not found:
        for t in texts:
            found += _fallback(t)
    return found, opposite


# --------------------------------------------------------------------------- what was sent


def _sent_carriers(body: Mapping[str, Any]) -> dict[int, set[str]]:
    """message index → carrier fields this request sent on that assistant message."""
    sent: dict[int, set[str]] = {}
    msgs = body.get("messages")
    for i, m in enumerate(msgs if isinstance(msgs, list) else []):
        if isinstance(m, Mapping) and m.get("role") == "assistant":
            have = {c for c in CARRIERS if c in m}
            if have:
                sent[i] = have
    return sent


def _native_values(n: Any) -> Iterable[str]:
    yield from (v for v in (n.thought_signature, n.reasoning_opaque, *(s for _, s in n.tool_signatures)) if v)


def _carried_blobs(plan: Any, history: Sequence[Message] | None) -> dict[str, str]:
    """blob hash → kind for every signed blob the planned request carried (``native`` for
    private-record values). Chat routes move ``reasoning_details`` out of the parts into
    message fields, so those are found through the plan's decisions and the stored history."""
    out: dict[str, str] = {}

    def add(value: Any, kind: str) -> None:
        if isinstance(value, str) and value and value != GEMINI_SKIP_SIGNATURE:
            out[blob_hash(value)] = kind

    for pm in getattr(plan, "messages", ()):
        for p in pm.parts:
            if isinstance(p, Reasoning):
                if p.blob and p.blob_kind:
                    add(p.blob, p.blob_kind)
                if p.native:
                    for v in _native_values(p.native):
                        add(v, "native")
        for v in (pm.thought_signature, *pm.tool_signatures.values(), pm.fields.get("reasoning_opaque")):
            add(v, "native")
        ec = pm.fields.get("extra_content")
        if isinstance(ec, Mapping) and isinstance(ec.get("google"), Mapping):
            add(ec["google"].get("thought_signature"), "native")
        if history is None or not 0 <= pm.index < len(history):
            continue
        stored = history[pm.index]
        for d in pm.decisions:
            if d.action not in ("field", "native") or d.part is None or d.part >= len(stored.parts):
                continue
            part = stored.parts[d.part]
            if not isinstance(part, Reasoning):
                continue
            if "reasoning_details" in d.fields and part.blob and part.blob_kind:
                add(part.blob, part.blob_kind)
            if part.native and set(d.fields) & {"thought_signature", "tool_signatures", "reasoning_opaque"}:
                for v in _native_values(part.native):
                    add(v, "native")
    return out


def is_signature_rejection(status: int, body_text: str) -> bool:
    if not 400 <= status < 500 or status in _NOT_SHAPE or _NOT_SIGNATURE.search(body_text):
        return False
    return bool(_SIGNATURE.search(body_text) or _BEDROCK_REDACTED.search(body_text))


# --------------------------------------------------------------------------- classify


def _excerpt(body_text: str) -> str:
    return " ".join(body_text.split())[:300]


def classify(status: int, body_text: str, sent_body: Mapping[str, Any], target: Resolved,
             plan: Any = None, *, already: Learned = Learned(),
             history: Sequence[Message] | None = None) -> Lesson:
    """What this error teaches about ``target`` — possibly nothing. Pure.

    ``plan`` (the ReplayPlan that built ``sent_body``) and ``history`` (the stored messages it
    was planned from) are needed only to fingerprint signed blobs.
    """
    if not 400 <= status < 500 or status in _NOT_SHAPE:
        return Lesson()
    if is_signature_rejection(status, body_text):
        carried = _carried_blobs(plan, history)
        low = body_text.lower()
        if "redacted" in low and "signature" not in low:
            carried = {h: k for h, k in carried.items() if k == "anthropic.redacted"}
        elif "support the signature field" in low:
            carried = {h: k for h, k in carried.items() if k == "anthropic.signature"}
        fresh = frozenset(carried) - already.suppressed
        return Lesson(suppressed=fresh, evidence=_excerpt(body_text)) if fresh else Lesson()
    if _ECHO.search(body_text):
        tool_turn = any(isinstance(m, Mapping) and m.get("role") == "assistant" and m.get("tool_calls")
                        for m in sent_body.get("messages") or [])
        if tool_turn and not (already.echo or target.route.must_echo):
            return Lesson(echo=True, evidence=_excerpt(body_text))
        return Lesson()
    found, opposite = mentions(status, body_text)
    if opposite or not found:
        return Lesson()
    definite = {m.name for m in found if m.scope != "any"}
    found = [m for m in found if m.scope != "any" or m.name not in definite]  # structure wins over prose
    sent = _sent_carriers(sent_body)
    anywhere = set().union(*sent.values()) if sent else set()
    top_reasoning = "reasoning" in sent_body
    named: set[str] = set()
    for m in found:
        if m.scope in ("top", "other") or m.name not in anywhere:
            continue
        if m.scope == "message" and m.index is not None and m.name not in sent.get(m.index, set()):
            continue  # points at a message that did not carry it: not our field
        if m.scope == "any" and m.name == "reasoning" and top_reasoning:
            continue  # could be the top-level `reasoning` parameter
        named.add(m.name)
    if target.route.must_echo:
        named.discard("reasoning_content")  # a value complaint there, never a schema one
    if not named:
        return Lesson()
    drop = set(anywhere) if "reasoning_content" in named else {"reasoning", "reasoning_details"} & anywhere
    if target.route.must_echo:
        drop.discard("reasoning_content")
    drop -= already.dropped
    return Lesson(dropped=frozenset(drop), evidence=_excerpt(body_text)) if drop else Lesson()


# --------------------------------------------------------------------------- memory


def route_id(target: Resolved) -> str:
    """The session-config key for (provider, host, model), normalised like the ledger."""
    return f"{target.route.key.strip().lower()}|{target.host.strip().lower()}|{target.model.strip()}"


def learned_for(store: Any, session_id: str | None, target: Resolved) -> Learned:
    """Session lessons plus the global ledger for (provider, host, model)."""
    dropped: set[str] = set()
    suppressed: set[str] = set()
    entry: Mapping[str, Any] = {}
    if session_id is not None:
        entry = (store.model_config(session_id).get(SESSION_KEY) or {}).get(route_id(target)) or {}
        dropped |= set(entry.get("dropped", []))
        suppressed |= set(entry.get("suppressed", []))
    caps = store.capabilities(target.route.key, target.host, target.model)
    dropped |= set(caps.get(KIND_DROPPED) or [])
    suppressed |= set(caps.get(KIND_SUPPRESSED) or [])
    dropped &= set(CARRIERS)
    echo = bool(entry.get("echo")) or bool(caps.get(KIND_ECHO))
    if target.route.must_echo or echo:
        dropped.discard("reasoning_content")
    return Learned(frozenset(dropped), frozenset(suppressed), echo)


def remember(store: Any, session_id: str | None, target: Resolved, lesson: Lesson, status: int) -> None:
    """Persist a lesson in the session's model_config and the capability ledger."""
    evidence = {"status": status, "error": lesson.evidence, "time": time.time(), "session": session_id}
    if session_id is not None:
        cfg = store.model_config(session_id).get(SESSION_KEY) or {}
        entry = dict(cfg.get(route_id(target)) or {})
        entry["dropped"] = sorted(set(entry.get("dropped", [])) | lesson.dropped)
        entry["suppressed"] = sorted(set(entry.get("suppressed", [])) | lesson.suppressed)
        if lesson.echo:
            entry["echo"] = True
        store.patch_model_config(session_id, {SESSION_KEY: {route_id(target): entry}})
    r = target.route.key
    if lesson.dropped:
        store.learn(r, target.host, target.model, KIND_DROPPED, sorted(lesson.dropped), evidence)
    if lesson.suppressed:
        store.learn(r, target.host, target.model, KIND_SUPPRESSED, sorted(lesson.suppressed), evidence)
    if lesson.echo:
        store.learn(r, target.host, target.model, KIND_ECHO, True, evidence)


def forget(store: Any, provider: str | None = None, host: str | None = None, model: str | None = None,
           *, sessions: int = 100_000) -> tuple[int, int]:
    """Clear ledger entries and the matching session copies (``None`` matches anything).

    Returns (ledger rows removed, session entries removed). Session copies go too, or a
    resumed session would keep not sending a field the user asked Hermes to try again.
    """
    rows = store.forget(provider, host, model)
    want = (provider.strip().lower() if provider is not None else None,
            host.strip().lower() if host is not None else None,
            model.strip() if model is not None else None)
    cleared = 0
    for info in reversed(store.list_sessions(limit=sessions)):  # oldest first: keeps their order
        cfg = store.model_config(info.id).get(SESSION_KEY) or {}
        gone = {k: None for k in cfg
                if all(w is None or w == have for w, have in zip(want, k.split("|", 2), strict=False))}
        if gone:
            store.patch_model_config(info.id, {SESSION_KEY: gone})
            cleared += len(gone)
    return rows, cleared


def recover(store: Any, session_id: str | None, target: Resolved, err: Any, retry: RetryState, *,
            history: Sequence[Message] | None = None) -> str | None:
    """Learn from ``err`` and say so, or None when the error must be reported as it is.

    ``history`` is what the failed request was planned from; without it a session's stored
    history is loaded when a signed blob has to be fingerprinted."""
    if retry.retried:
        return None
    status, body = int(getattr(err, "status", 0) or 0), str(getattr(err, "body", "") or "")
    sent = getattr(err, "sent_body", None) or {}
    plan = getattr(err, "plan", None)
    if history is None and session_id is not None and is_signature_rejection(status, body):
        history = store.load(session_id)
    lesson = classify(status, body, sent, target, plan, already=learned_for(store, session_id, target),
                      history=history)
    if not lesson:
        return None
    retry.retried = True
    remember(store, session_id, target, lesson, status)
    if lesson.echo:
        note = (f"{target.model} on {target.route.key} ({target.host}) wants reasoning_content on every tool "
                "turn — retrying with it (a placeholder where none was stored) for this model.")
    else:
        what = (f"replayed {', '.join(sorted(lesson.dropped))}" if lesson.dropped
                else f"{len(lesson.suppressed)} signed reasoning blob(s)")
        note = (f"{target.model} on {target.route.key} ({target.host}) rejected {what} — "
                "retrying without it for this model.")
    from .logs import log_event

    log_event("learned", session=session_id, route=target.route.key, host=target.host, model=target.model,
              dropped=sorted(lesson.dropped), suppressed=len(lesson.suppressed), echo=lesson.echo, status=status,
              error=lesson.evidence)
    retry.notes.append(note)
    return note
