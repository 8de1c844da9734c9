"""Stream accumulation: one fold from wire deltas to the stored assistant turn.

Every wire decodes its stream into the small ``Delta`` vocabulary below, and its
non-streaming parser emits the same deltas for a whole response, so both paths go through
``Accumulator`` and yield the same ``Response`` (invariant 10). Rules:

* parts keep the order in which their key first appeared (Anthropic block order, chat:
  reasoning → text → tool calls);
* readable reasoning and text concatenate; a blob either appends (Bedrock signature deltas)
  or is replaced whole (Anthropic ``signature_delta``, Responses ``output_item.done``);
* ``reasoning_details``: a whole response's entries are kept exactly as returned (gateways
  return a readable and an encrypted entry that share ``index: 0``); streamed fragments merge
  by ``index`` **and** ``type`` (else ``id`` and ``type``): ``text`` / ``summary``
  concatenate, other keys take the latest non-empty value, encrypted entries stay whole;
* native fields: the latest non-empty signature / opaque blob wins, ``reasoning_text``
  concatenates;
* a response without a finish is incomplete: ``result()`` raises ``StreamError`` and
  nothing half-made can be stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import orjson

from .errors import StreamError
from .messages import Message, NativeRecord, Part, Reasoning, RouteKey, Text, ToolCall

__all__ = [
    "Accumulator",
    "Delta",
    "DetailsDelta",
    "FinishDelta",
    "NativeDelta",
    "ReasoningDelta",
    "Response",
    "TextDelta",
    "ToolCallDelta",
    "UsageDelta",
    "fold",
]


# Deltas are not ``frozen``: one is built per streamed event. Treat them as values.


@dataclass(slots=True)
class ReasoningDelta:
    key: str
    text: str = ""
    blob: str | None = None
    blob_kind: str | None = None
    blob_mode: Literal["append", "replace"] = "append"
    item_id: str | None = None
    extra: Mapping[str, Any] | None = None


@dataclass(slots=True)
class DetailsDelta:
    """``reasoning_details`` entries (OpenRouter format), attached to reasoning part ``key``."""

    entries: Sequence[Mapping[str, Any]]
    """As decoded (the decoder's own list: not copied per delta)."""
    key: str = "reasoning"
    whole: bool = False
    """True for a whole (non-streamed) response: every entry is stored as its own entry."""


@dataclass(slots=True)
class NativeDelta:
    """Private native fields, attached to reasoning part ``key``."""

    key: str = "reasoning"
    thought_signature: str | None = None
    tool_signature: tuple[str, str] | None = None
    """(tool-call delta key, signature)."""
    reasoning_opaque: str | None = None
    reasoning_text: str = ""


@dataclass(slots=True)
class TextDelta:
    key: str
    text: str


@dataclass(slots=True)
class ToolCallDelta:
    key: str
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(slots=True)
class UsageDelta:
    usage: Mapping[str, Any]


@dataclass(slots=True)
class FinishDelta:
    reason: str


Delta: TypeAlias = (
    ReasoningDelta | DetailsDelta | NativeDelta | TextDelta | ToolCallDelta | UsageDelta | FinishDelta
)


@dataclass(frozen=True, slots=True)
class Response:
    """One parsed assistant turn."""

    message: Message
    finish_reason: str
    usage: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _R:
    text: list[str] = field(default_factory=list)
    blob: list[str] = field(default_factory=list)
    blob_kind: str | None = None
    item_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    details: dict[Any, dict[str, Any]] = field(default_factory=dict)
    thought_signature: str | None = None
    tool_sigs: dict[str, str] = field(default_factory=dict)
    opaque: str | None = None
    native_text: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _T:
    id: str | None = None
    name: str | None = None
    args: list[str] = field(default_factory=list)


_CONCAT = ("text", "summary")


class Accumulator:
    """Fold deltas into one assistant ``Response``; ``snapshot()`` works mid-stream.

    This is the per-delta hot path of every stream: each part kind has its own dict (no key
    tuple per delta), and a streamed ``reasoning_details`` fragment that continues the entry
    before it merges in place without the general key search (``_details``)."""

    __slots__ = ("_finish", "_order", "_reasoning", "_texts", "_tools", "_usage", "origin")

    def __init__(self, origin: RouteKey) -> None:
        self.origin = origin
        self._order: list[tuple[str, str]] = []
        """(kind, key) of every part in the order its key first appeared."""
        self._reasoning: dict[str, _R] = {}
        self._texts: dict[str, list[str]] = {}
        self._tools: dict[str, _T] = {}
        self._usage: dict[str, Any] = {}
        self._finish: str | None = None

    def _r(self, key: str) -> _R:
        r = self._reasoning.get(key)
        if r is None:
            r = self._reasoning[key] = _R()
            self._order.append(("reasoning", key))
        return r

    def feed(self, d: Delta) -> None:
        # dispatch on the exact type: cheaper than a ``match`` over seven class patterns
        try:
            _FEED[type(d)](self, d)
        except (TypeError, AttributeError, ValueError) as e:
            raise _malformed(e) from None

    def _text(self, d: TextDelta) -> None:
        if d.text:
            part = self._texts.get(d.key)
            if part is None:
                part = self._texts[d.key] = []
                self._order.append(("text", d.key))
            part.append(d.text)

    def _reasoning_delta(self, d: ReasoningDelta) -> None:
        r = self._reasoning.get(d.key) or self._r(d.key)
        if d.text:
            r.text.append(d.text)
        if d.blob is not None:
            if d.blob_mode == "replace":
                r.blob = [d.blob]
            else:
                r.blob.append(d.blob)
            r.blob_kind = d.blob_kind or r.blob_kind
        if d.item_id:
            r.item_id = d.item_id
        if d.extra:
            r.extra.update(d.extra)

    def _details(self, d: DetailsDelta) -> None:
        details = (self._reasoning.get(d.key) or self._r(d.key)).details
        whole = d.whole
        for entry in d.entries:
            if not whole and type(entry) is dict:
                # a gateway's stream: a fragment with a number index and a type continues the
                # entry of that (index, type) — what ``_detail_key`` finds, without the search
                at, kind = entry.get("index"), entry.get("type")
                if type(at) is int and type(kind) is str:
                    cur = details.get((at, kind))
                    if cur is not None:
                        _merge_into(cur, entry)
                        continue
            _merge_detail(details, entry, whole)

    def _native(self, d: NativeDelta) -> None:
        r = self._reasoning.get(d.key) or self._r(d.key)
        if d.thought_signature:
            r.thought_signature = d.thought_signature
        if d.tool_signature and d.tool_signature[1]:
            r.tool_sigs[d.tool_signature[0]] = d.tool_signature[1]
        if d.reasoning_opaque:
            r.opaque = d.reasoning_opaque
        if d.reasoning_text:
            r.native_text.append(d.reasoning_text)

    def _tool(self, d: ToolCallDelta) -> None:
        t = self._tools.get(d.key)
        if t is None:
            t = self._tools[d.key] = _T()
            self._order.append(("tool", d.key))
        if d.id:
            t.id = d.id
        if d.name:
            t.name = d.name
        if d.arguments:
            t.args.append(d.arguments)

    def _usage_delta(self, d: UsageDelta) -> None:
        self._usage.update(d.usage)

    def _finish_delta(self, d: FinishDelta) -> None:
        self._finish = d.reason

    def feed_all(self, deltas: Iterable[Delta]) -> Accumulator:
        feed = _FEED
        try:
            for d in deltas:
                feed[type(d)](self, d)
        except (TypeError, AttributeError, ValueError) as e:
            raise _malformed(e) from None
        return self

    @property
    def finished(self) -> bool:
        return self._finish is not None

    def snapshot(self) -> Message:
        """The turn as folded so far (may be incomplete).

        A decoder hands over what the provider sent; a member of the wrong type (a number where
        text belongs, a list as a tool name) is caught here, once per turn, as ``StreamError``
        rather than stored as a turn that cannot be written or reloaded."""
        try:
            return self._snapshot()
        except (TypeError, AttributeError, ValueError) as e:
            raise _malformed(e) from None

    def _snapshot(self) -> Message:
        tool_ids = {key: _s(self._tools[key].id) or f"call_{n}" for n, (kind, key) in enumerate(self._order)
                    if kind == "tool"}
        parts: list[Part] = []
        for kind, key in self._order:
            if kind == "text":
                parts.append(Text("".join(self._texts[key])))
            elif kind == "tool":
                t = self._tools[key]
                if not t.name:
                    raise StreamError(f"tool call {key!r} arrived without a name")
                _s(t.name)
                parts.append(ToolCall(tool_ids[key], t.name, "".join(t.args) or "{}"))
            else:
                part = self._reasoning_part(self._reasoning[key], tool_ids)
                if part is not None:
                    parts.append(part)
        return Message("assistant", tuple(parts))

    def _reasoning_part(self, r: _R, tool_ids: Mapping[str, str]) -> Reasoning | None:
        blob: str | None = "".join(r.blob) if r.blob else None
        kind = r.blob_kind if blob is not None else None
        if r.details:
            blob = orjson.dumps([_joined(e) for e in r.details.values()]).decode()
            kind = "openrouter.details"
        native = NativeRecord(
            thought_signature=_s(r.thought_signature),
            tool_signatures=tuple((tool_ids.get(k, k), _s(s)) for k, s in r.tool_sigs.items()),
            reasoning_opaque=_s(r.opaque),
            reasoning_text="".join(r.native_text) or None,
        )
        text = "".join(r.text)
        if not text and blob is None and not native and not r.item_id:
            return None
        return Reasoning(text, self.origin, blob, _s(kind), _s(r.item_id), native or None, dict(r.extra))

    def result(self) -> Response:
        """The finished turn; raises ``StreamError`` when no finish arrived (truncated)."""
        if self._finish is None:
            raise StreamError("response ended before it finished (truncated stream); nothing was stored")
        return Response(self.snapshot(), self._finish, dict(self._usage))


def _malformed(e: Exception) -> StreamError:
    """A decoder passed on a member of the wrong type (a dict as a key, a number as text): the
    response is malformed, which is the documented ``StreamError``, never a crash."""
    return StreamError(f"malformed response: a field has the wrong type ({e}); nothing was stored")


def _s(value: Any) -> Any:
    """``value`` when it is text or absent; ``TypeError`` otherwise (see ``snapshot``)."""
    if value is not None and type(value) is not str:
        raise TypeError(f"expected text, got {type(value).__name__}: {value!r:.60}")
    return value


class _Cat(list[str]):
    """Fragments of a concatenating ``reasoning_details`` field, joined once at snapshot
    (joining on every fragment would make a long stream quadratic)."""


def _detail_key(details: Mapping[Any, Any], entry: Mapping[str, Any], whole: bool) -> Any:
    """Which stored entry a fragment belongs to: (index or id, type) in a stream; a fresh slot
    for every entry of a whole response. A fragment without a ``type`` continues the latest
    entry of its index."""
    if whole:
        return len(details)
    at = entry.get("index")
    if at is None:
        at = entry.get("id")
        if at is None:
            return f"pos{len(details)}"
    if type(at) not in (str, int):
        raise StreamError(f"reasoning_details entry has an index/id that is not a number or text: {at!r:.60}")
    kind = entry.get("type")
    if kind is None:
        return next((k for k in reversed(details) if type(k) is tuple and k[0] == at), (at, None))
    if type(kind) is not str:
        raise StreamError(f"reasoning_details entry has a type that is not text: {kind!r:.60}")
    return (at, kind)


def _merge_detail(details: dict[Any, dict[str, Any]], entry: Mapping[str, Any], whole: bool) -> None:
    if type(entry) is not dict and not isinstance(entry, Mapping):
        raise StreamError(f"reasoning_details entry is not an object: {entry!r:.80}")
    key = _detail_key(details, entry, whole)
    cur = details.get(key)
    if cur is None:
        details[key] = {k: _Cat((v,)) if k in _CONCAT and isinstance(v, str) else v for k, v in entry.items()}
    else:
        _merge_into(cur, entry)


def _merge_into(cur: dict[str, Any], entry: Mapping[str, Any]) -> None:
    """One streamed fragment into its stored entry: ``text`` / ``summary`` concatenate, other
    keys take the latest non-empty value."""
    for k, v in entry.items():
        if type(v) is str:
            if k == "text" or k == "summary":
                c = cur.get(k)
                if type(c) is _Cat:
                    c.append(v)
                elif isinstance(c, str) or v:
                    cur[k] = _Cat((c, v)) if isinstance(c, str) else _Cat((v,))
                else:
                    cur.setdefault(k, v)
            elif v:
                cur[k] = v
            else:
                cur.setdefault(k, v)
        elif v is not None:
            cur[k] = v
        else:
            cur.setdefault(k, v)


def _joined(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: "".join(v) if type(v) is _Cat else v for k, v in entry.items()}


_FEED: dict[type, Any] = {
    TextDelta: Accumulator._text,
    ReasoningDelta: Accumulator._reasoning_delta,
    DetailsDelta: Accumulator._details,
    NativeDelta: Accumulator._native,
    ToolCallDelta: Accumulator._tool,
    UsageDelta: Accumulator._usage_delta,
    FinishDelta: Accumulator._finish_delta,
}


def fold(origin: RouteKey, deltas: Iterable[Delta]) -> Response:
    return Accumulator(origin).feed_all(deltas).result()
