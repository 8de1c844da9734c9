"""The vocabulary of rejections: which carrier field an error body names, and how.

Pure text and structure reading, no request and no store: ``mentions`` finds the carrier
fields an error complains about — structured data first (Pydantic ``loc``, ``param`` with an
unknown-parameter code, Gemini ``fieldViolations``, gateway ``metadata.raw`` unwrapped), then
the providers' sentence shapes that tie the field to the complaint, the bare phrase list last,
with "expected one of" / "did you mean" lists cut off — and whether anything asks for *more*
("must be passed back", "missing", "required", "empty", in several languages).
``is_signature_rejection`` and ``asks_echo`` recognise the two other families: a signed blob
that stopped verifying, and a must-echo refusal. See docs/rejections.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["CARRIERS", "Mention", "asks_echo", "expand", "is_shape_status", "is_signature_rejection", "mentions", "records"]

CARRIERS = ("reasoning_content", "reasoning", "reasoning_details")
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


# --------------------------------------------------------------------------- reading errors


def expand(data: Any, depth: int = 0) -> Any:
    """Parse JSON found inside strings (gateways pass upstream errors as ``metadata.raw``)."""
    if depth > 4:
        return data
    if isinstance(data, str):
        s = data.strip()
        if s[:1] in "{[" and s[-1:] in "}]":
            try:
                return expand(orjson.loads(s), depth + 1)
            except orjson.JSONDecodeError:
                return data
        return data
    if isinstance(data, Mapping):
        return {str(k): expand(v, depth + 1) for k, v in data.items()}
    if isinstance(data, list):
        return [expand(v, depth + 1) for v in data]
    return data


def records(data: Any) -> Iterator[Mapping[str, Any]]:
    """Every JSON object inside ``data``, outermost first."""
    if isinstance(data, Mapping):
        yield data
        for v in data.values():
            yield from records(v)
    elif isinstance(data, list):
        for v in data:
            yield from records(v)


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
    for rec in records(data):
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
        data: Any = expand(orjson.loads(body_text))
    except orjson.JSONDecodeError:
        data = body_text
    texts = list(_texts(data)) or [body_text]
    opposite = any(_OPPOSITE.search(t) for t in texts) or any(
        isinstance(r.get("type"), str) and r["type"].lower() == "missing" for r in records(data))
    found = _structured(data)
    for t in texts:
        found += _textual(t)
    if not found:
        for t in texts:
            found += _fallback(t)
    return found, opposite


def is_shape_status(status: int) -> bool:
    """A 4xx that can be about the request's shape (not auth, money, size or rate)."""
    return 400 <= status < 500 and status not in _NOT_SHAPE


def asks_echo(body_text: str) -> bool:
    """A must-echo refusal: the route wants ``reasoning_content`` back on tool turns."""
    return bool(_ECHO.search(body_text))


def is_signature_rejection(status: int, body_text: str) -> bool:
    """A signed blob (thinking signature, redacted data, encrypted item, thought signature)
    that stopped verifying — not a complaint that one is missing."""
    if not is_shape_status(status) or _NOT_SIGNATURE.search(body_text):
        return False
    return bool(_SIGNATURE.search(body_text) or _BEDROCK_REDACTED.search(body_text))
