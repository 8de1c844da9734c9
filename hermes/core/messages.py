"""The neutral message model: what Hermes stores, never any provider's format.

A ``Message`` is a role plus an ordered tuple of parts. Order matters: Anthropic and
Bedrock require thinking blocks back in the order they arrived, interleaved with text and
tool calls, so parts are never regrouped.

Invariants this module guarantees:

* Parts are frozen; nothing downstream (replay, wires, compaction) can modify history.
* ``Reasoning.blob`` holds a signature / encrypted payload / opaque envelope exactly as
  received (a str, never re-encoded) and is never placed in ``text``, ids or tool args.
* Every ``Reasoning`` carries its ``origin``; a blob without an origin cannot be built.
* The JSON form (``to_dict`` / ``from_dict``, version ``FORMAT_VERSION``) round-trips
  exactly: ``dumps(loads(s)) == s`` for any ``s`` produced by ``dumps``. It is documented in
  ``docs/history-format.md``; unknown keys inside ``Reasoning.extra`` survive untouched.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import orjson

from .errors import HistoryError

__all__ = [
    "FORMAT_VERSION",
    "ROLES",
    "Compaction",
    "Message",
    "NativeRecord",
    "Part",
    "Reasoning",
    "Role",
    "RouteKey",
    "Text",
    "ToolCall",
    "ToolResult",
    "blob_hash",
    "digest_of",
    "dumps",
    "loads",
    "message_digest",
    "message_from_dict",
    "message_to_dict",
]

FORMAT_VERSION = 1
Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
ROLES = ("system", "user", "assistant", "tool")
"""Every role a message may have (``Message`` refuses any other)."""


def blob_hash(blob: str) -> str:
    """Content address of a blob: sha256 hex of its UTF-8 bytes. The store files blobs under
    it and the rejection memory suppresses blobs by it, so both must use this one function."""
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class RouteKey:
    """Where a reasoning item was captured; persisted and never renamed."""

    provider: str
    """Route key of the table row that served the turn (e.g. ``deepseek``)."""
    host: str
    """Host of the base URL the turn came from (lower-case, no port)."""
    model: str
    wire: str


@dataclass(frozen=True, slots=True)
class NativeRecord:
    """The private ``hermes.native_assistant`` record: native fields no standard carrier has.

    Only a route whose row names a field in ``Route.native`` ever receives it.
    """

    thought_signature: str | None = None
    """Gemini text-turn signature (native: last text part; compat: message ``extra_content``)."""
    tool_signatures: tuple[tuple[str, str], ...] = ()
    """``(tool_call_id, signature)`` pairs: Gemini functionCall / Copilot tool-call signatures."""
    reasoning_opaque: str | None = None
    """GitHub Copilot opaque reasoning envelope (latest non-empty wins when streamed)."""
    reasoning_text: str | None = None
    """GitHub Copilot readable reasoning, sent only next to its opaque blob."""

    TYPE = "hermes.native_assistant"

    def fields(self) -> frozenset[str]:
        """Names of the fields this record actually holds."""
        names = set()
        if self.thought_signature:
            names.add("thought_signature")
        if self.tool_signatures:
            names.add("tool_signatures")
        if self.reasoning_opaque:
            names.add("reasoning_opaque")
        if self.reasoning_text:
            names.add("reasoning_text")
        return frozenset(names)

    def __bool__(self) -> bool:
        return bool(self.fields())


@dataclass(frozen=True, slots=True)
class Text:
    text: str
    kind: Literal["text"] = field(default="text", init=False)


@dataclass(frozen=True, slots=True)
class Reasoning:
    """What the model thought, with its provenance and any opaque payload."""

    text: str
    origin: RouteKey
    blob: str | None = None
    """Signature, redacted data, encrypted content or reasoning_details JSON, as received."""
    blob_kind: str | None = None
    """Which blob: ``anthropic.signature``, ``anthropic.redacted``, ``openai.encrypted``,
    ``openrouter.details`` (the JSON list of reasoning_details entries) ..."""
    item_id: str | None = None
    native: NativeRecord | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Round-trips untouched. Only the wire that wrote a key reads it back (``openai.summary``:
    the Responses summary parts as returned); nothing else does."""
    kind: Literal["reasoning"] = field(default="reasoning", init=False)

    def __post_init__(self) -> None:
        if (self.blob is None) != (self.blob_kind is None):
            raise HistoryError("reasoning blob and blob_kind must be given together")


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str
    """Raw JSON text exactly as the model produced it."""
    kind: Literal["tool_call"] = field(default="tool_call", init=False)


@dataclass(frozen=True, slots=True)
class ToolResult:
    call_id: str
    content: str
    name: str = ""
    is_error: bool = False
    kind: Literal["tool_result"] = field(default="tool_result", init=False)


@dataclass(frozen=True, slots=True)
class Compaction:
    """A checkpoint: the summary of everything before it. Wires start at the latest one."""

    summary: str
    replaced: int = 0
    """How many earlier messages this checkpoint stands for (informational)."""
    kind: Literal["compaction"] = field(default="compaction", init=False)


Part: TypeAlias = Text | Reasoning | ToolCall | ToolResult | Compaction


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    parts: tuple[Part, ...]
    digest: bytes | None = field(default=None, kw_only=True, compare=False, repr=False)
    """The message's value fingerprint (:func:`message_digest`), given where it is known — by
    the store, which keeps it next to the message — or computed on first use (:func:`digest_of`).
    Not part of equality: two messages with equal values have equal digests."""

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise HistoryError(f"unknown role {self.role!r}")

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCall))

    @property
    def reasoning(self) -> tuple[Reasoning, ...]:
        return tuple(p for p in self.parts if isinstance(p, Reasoning))

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, Text))

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", (Text(text),))

    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", (Text(text),))


# ----------------------------------------------------------------------------- JSON form


def _origin_to_dict(o: RouteKey) -> dict[str, str]:
    return {"provider": o.provider, "host": o.host, "model": o.model, "wire": o.wire}


def _native_to_dict(n: NativeRecord) -> dict[str, Any]:
    d: dict[str, Any] = {"type": NativeRecord.TYPE}
    if n.thought_signature:
        d["thought_signature"] = n.thought_signature
    if n.tool_signatures:
        d["tool_signatures"] = [[cid, sig] for cid, sig in n.tool_signatures]
    if n.reasoning_opaque:
        d["reasoning_opaque"] = n.reasoning_opaque
    if n.reasoning_text:
        d["reasoning_text"] = n.reasoning_text
    return d


def part_to_dict(p: Part) -> dict[str, Any]:
    """The documented JSON form of one part (keys in a fixed order, defaults omitted)."""
    match p:
        case Text():
            return {"kind": "text", "text": p.text}
        case Reasoning():
            d: dict[str, Any] = {"kind": "reasoning", "text": p.text, "origin": _origin_to_dict(p.origin)}
            if p.blob is not None:
                d["blob"] = p.blob
                d["blob_kind"] = p.blob_kind
            if p.item_id is not None:
                d["item_id"] = p.item_id
            if p.native:
                d["native"] = _native_to_dict(p.native)
            if p.extra:
                d["extra"] = dict(p.extra)
            return d
        case ToolCall():
            return {"kind": "tool_call", "id": p.id, "name": p.name, "arguments": p.arguments}
        case ToolResult():
            d = {"kind": "tool_result", "call_id": p.call_id, "content": p.content}
            if p.name:
                d["name"] = p.name
            if p.is_error:
                d["is_error"] = True
            return d
        case Compaction():
            d = {"kind": "compaction", "summary": p.summary}
            if p.replaced:
                d["replaced"] = p.replaced
            return d
    raise HistoryError(f"not a part: {p!r}")  # pragma: no cover - closed union


def message_to_dict(m: Message) -> dict[str, Any]:
    return {"v": FORMAT_VERSION, "role": m.role, "parts": [part_to_dict(p) for p in m.parts]}


def _str(d: Mapping[str, Any], key: str, *, optional: bool = False) -> Any:
    v = d.get(key)
    if v is None and optional:
        return None
    if not isinstance(v, str):
        raise HistoryError(f"field {key!r} must be a string, got {type(v).__name__}")
    return v


def _origin_from_dict(d: Any) -> RouteKey:
    if not isinstance(d, Mapping):
        raise HistoryError("reasoning 'origin' must be an object with provider/host/model/wire")
    return RouteKey(_str(d, "provider"), _str(d, "host"), _str(d, "model"), _str(d, "wire"))


def _native_from_dict(d: Any) -> NativeRecord:
    if not isinstance(d, Mapping) or d.get("type") != NativeRecord.TYPE:
        raise HistoryError(f"'native' must be an object with type {NativeRecord.TYPE!r}")
    sigs = d.get("tool_signatures") or []
    if not isinstance(sigs, list) or not all(
        isinstance(s, list) and len(s) == 2 and all(isinstance(x, str) for x in s) for s in sigs
    ):
        raise HistoryError("'native.tool_signatures' must be a list of [call_id, signature]")
    return NativeRecord(
        # empty text is absent, as _native_to_dict writes it (so a record round-trips)
        thought_signature=_str(d, "thought_signature", optional=True) or None,
        tool_signatures=tuple((a, b) for a, b in sigs),
        reasoning_opaque=_str(d, "reasoning_opaque", optional=True) or None,
        reasoning_text=_str(d, "reasoning_text", optional=True) or None,
    )


def part_from_dict(d: Any) -> Part:
    if not isinstance(d, Mapping):
        raise HistoryError("a part must be a JSON object")
    kind = d.get("kind")
    match kind:
        case "text":
            return Text(_str(d, "text"))
        case "reasoning":
            extra = d.get("extra") or {}
            if not isinstance(extra, Mapping):
                raise HistoryError("reasoning 'extra' must be an object")
            blob = _str(d, "blob", optional=True)
            blob_kind = _str(d, "blob_kind", optional=True)
            return Reasoning(
                text=_str(d, "text"),
                origin=_origin_from_dict(d.get("origin")),
                blob=blob,
                blob_kind=blob_kind,
                item_id=_str(d, "item_id", optional=True),
                # an empty record is no record (dumps omits it; loads must agree)
                native=(_native_from_dict(d["native"]) or None) if d.get("native") is not None else None,
                extra=dict(extra),
            )
        case "tool_call":
            return ToolCall(_str(d, "id"), _str(d, "name"), _str(d, "arguments"))
        case "tool_result":
            is_error = d.get("is_error", False)
            if not isinstance(is_error, bool):
                raise HistoryError("'is_error' must be a boolean")
            return ToolResult(_str(d, "call_id"), _str(d, "content"), _str(d, "name", optional=True) or "", is_error)
        case "compaction":
            replaced = d.get("replaced", 0)
            if not isinstance(replaced, int) or isinstance(replaced, bool) or replaced < 0:
                raise HistoryError("'replaced' must be a non-negative integer")
            return Compaction(_str(d, "summary"), replaced)
    raise HistoryError(f"unknown part kind {kind!r}")


def message_digest(m: Message) -> bytes:
    """16 bytes of SHA-256 over the message's documented JSON form, each blob replaced by its
    ``blob_hash`` (the store already hashes blobs, so a blob is not hashed twice). A pure
    function of the value: per-message build results are memoised and persisted under it."""
    parts = []
    for p in m.parts:
        d = part_to_dict(p)
        if "blob" in d:
            d["blob"] = blob_hash(d["blob"])
        parts.append(d)
    return hashlib.sha256(orjson.dumps([m.role, parts])).digest()[:16]


def digest_of(m: Message) -> bytes:
    """``m.digest``, computed and kept on the (immutable) message the first time it is asked."""
    d = m.digest
    if d is None:
        d = message_digest(m)
        object.__setattr__(m, "digest", d)
    return d


def message_from_dict(d: Any) -> Message:
    if not isinstance(d, Mapping):
        raise HistoryError("a message must be a JSON object")
    v = d.get("v", FORMAT_VERSION)
    if v != FORMAT_VERSION:
        raise HistoryError(f"unsupported history format version {v!r} (this Hermes reads {FORMAT_VERSION})")
    role = d.get("role")
    if role not in ROLES:
        raise HistoryError(f"unknown role {role!r}")
    parts = d.get("parts")
    if not isinstance(parts, list):
        raise HistoryError("'parts' must be a list")
    return Message(role, tuple(part_from_dict(p) for p in parts))


def dumps(m: Message) -> bytes:
    """One message as one line of canonical JSON."""
    return orjson.dumps(message_to_dict(m))


def loads(data: bytes | str) -> Message:
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise HistoryError(f"not JSON: {e}") from None
    return message_from_dict(raw)


def load_jsonl(lines: Iterable[bytes | str], *, source: str = "<history>") -> list[Message]:
    """Read a JSONL history; a bad record raises naming the file and line."""
    out: list[Message] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(loads(line))
        except HistoryError as e:
            raise HistoryError(f"{source}:{n}: {e}") from None
    return out
