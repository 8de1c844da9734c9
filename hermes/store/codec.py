"""Parts <-> rows: the only place that knows how a part's JSON form is split across columns.

A part is stored as its documented JSON form (``hermes.messages.part_to_dict``) cut in three:

* ``kind`` and the readable text (``text`` column) — queryable, and the bulk of the bytes;
* ``Reasoning.blob`` — moved to the content-addressed ``blobs`` table, referenced by hash;
* everything else (origin, blob_kind, item_id, native, extra, name, is_error ...) — ``data``.

Loading glues the three back together and goes through ``part_from_dict``, so a stored part
is rebuilt by the same code that reads a JSONL history; ``dumps`` of the result is byte-equal
to ``dumps`` of what was appended (orjson keeps the key order of ``extra``).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import orjson

from ..errors import HistoryError
from ..messages import (
    ROLES,
    Message,
    Part,
    Reasoning,
    RouteKey,
    Text,
    ToolCall,
    ToolResult,
    blob_hash,
    make_message,
    make_reasoning,
    make_text,
    make_tool_call,
    make_tool_result,
    part_from_dict,
    part_to_dict,
)

__all__ = ["TEXT_KEY", "PartRow", "blob_hash", "collector_paused", "messages_from_rows", "part_from_row", "part_to_row", "stored_message"]

TEXT_KEY: dict[str, str] = {
    "text": "text",
    "reasoning": "text",
    "tool_call": "arguments",
    "tool_result": "content",
    "compaction": "summary",
}
"""Which key of each part kind's JSON form goes to the ``parts.text`` column."""

PartRow = tuple[str, str, str | None, str | None, str | None, str | None]
"""(kind, text, data JSON or None, blob hash or None, blob or None, blob_kind or None)."""


def part_to_row(part: Part) -> PartRow:
    """Split one part into column values; raises ``TypeError`` if ``extra`` is not JSON."""
    d = part_to_dict(part)
    kind = d.pop("kind")
    text = d.pop(TEXT_KEY[kind])
    blob = d.pop("blob", None)
    blob_kind = d.get("blob_kind")
    data = orjson.dumps(d).decode() if d else None
    return kind, text, data, blob_hash(blob) if blob is not None else None, blob, blob_kind


_ORIGINS: dict[tuple[str, str, str, str], RouteKey] = {}
_PLAIN_REASONING = frozenset({"origin", "blob_kind", "item_id"})
_PLAIN_RESULT = frozenset({"call_id", "name", "is_error"})
_CALL_KEYS = frozenset({"id", "name"})


def _fast_part(kind: str, text: str, d: dict[str, Any], blob: str | None) -> Part | None:
    """The common shapes without the general validator (resume of long sessions is hot);
    anything unusual returns None and goes through ``part_from_dict``, which reports errors."""
    try:
        if kind == "reasoning" and d.keys() <= _PLAIN_REASONING:
            o = d["origin"]
            key = (o["provider"], o["host"], o["model"], o["wire"])
            origin = _ORIGINS.get(key)
            if origin is None:
                if not all(type(v) is str for v in key):
                    return None
                origin = _ORIGINS[key] = RouteKey(*key)
            return Reasoning(text, origin, blob, d.get("blob_kind"), d.get("item_id"))
        if kind == "tool_result" and d.keys() <= _PLAIN_RESULT and type(d["call_id"]) is str:
            name, is_error = d.get("name", ""), d.get("is_error", False)
            if type(name) is str and type(is_error) is bool:
                return ToolResult(d["call_id"], text, name, is_error)
            return None
        if kind == "tool_call" and d.keys() == {"id", "name"} and type(d["id"]) is str and type(d["name"]) is str:
            return ToolCall(d["id"], d["name"], text)
    except (KeyError, TypeError, AttributeError, HistoryError):
        return None
    return None


def part_from_row(kind: str, text: str, data: str | None, blob: str | None) -> Part:
    """Rebuild a part from its columns (and its blob's data when it has one)."""
    if kind == "text" and data is None:
        return Text(text)  # the common case, no JSON work
    d: dict[str, Any] = orjson.loads(data) if data else {}
    fast = _fast_part(kind, text, d, blob)
    if fast is not None:
        return fast
    d["kind"] = kind
    d[TEXT_KEY[kind]] = text
    if blob is not None:
        d["blob"] = blob
    return part_from_dict(d)


def stored_message(role: Any, parts: list[Part], digest: bytes | None) -> Message:
    """A loaded message with the digest stored next to it (``messages.message_digest``, written
    with the message), so nothing is hashed on load; rows from before digests were kept get
    theirs computed on first use."""
    m = Message(role, tuple(parts))
    if digest:
        object.__setattr__(m, "digest", bytes(digest))
    return m


_Plain = tuple[RouteKey, str | None, str | None]


def _plain_reasoning(data: str | bytes) -> _Plain | None:
    """(origin, blob_kind, item_id) of a reasoning row's ``data`` that holds nothing else,
    with string values; None for anything ``part_from_dict`` must look at."""
    try:
        d = orjson.loads(data)
        if type(d) is not dict or not d.keys() <= _PLAIN_REASONING:
            return None
        o = d["origin"]
        key = (o["provider"], o["host"], o["model"], o["wire"])
        blob_kind, item_id = d.get("blob_kind"), d.get("item_id")
    except (KeyError, TypeError, orjson.JSONDecodeError):
        return None
    if not all(type(v) is str for v in key):
        return None
    if not (blob_kind is None or type(blob_kind) is str) or not (item_id is None or type(item_id) is str):
        return None
    origin = _ORIGINS.get(key)
    if origin is None:
        origin = _ORIGINS[key] = RouteKey(*key)
    return origin, blob_kind, item_id


_GC_LOCK = threading.Lock()
_GC_PAUSES = [0, False]  # loads in progress; whether the first one turned the collector off


@contextmanager
def collector_paused() -> Iterator[None]:
    """Cyclic garbage collection off while a history is read and built. Threads may load at
    once: it stays off until the last one is done, and goes back on only if it was on when
    the first one started.

    Reading 12,000 rows and building 20,000 objects that all survive triggers collections of
    the young generations and, as the heap grows, full ones that walk every object of the
    process; rows, parts and messages hold no cycles, so there is nothing for the collector
    to find. ~55 M instructions of a ``chat -q`` turn on 2,000 stored turns."""
    with _GC_LOCK:
        if _GC_PAUSES[0] == 0:
            _GC_PAUSES[1] = gc.isenabled()
            gc.disable()
        _GC_PAUSES[0] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_PAUSES[0] -= 1
            if _GC_PAUSES[0] == 0 and _GC_PAUSES[1]:
                gc.enable()


def messages_from_rows(rows: Iterable[Sequence[Any]], *, binary: bool = False) -> list[Message]:
    """The messages of the load query's rows — (seq, role, digest, kind, text, data, blob), one
    row per part (kind None for a message without parts), in order — equal to building each
    part with ``part_from_row`` and each message with ``stored_message``. With ``binary`` the
    text and blob columns are UTF-8 bytes (PostgreSQL's binary rows).

    Loading a long session is on the path of every ``chat --resume`` and cold gateway turn, so
    the common shapes are built here with the trusted makers (``hermes.messages``) and the
    checks their classes' ``__post_init__`` would make, and a reasoning row's ``data`` is
    parsed once per distinct value (a session repeats one origin); anything else goes through
    ``part_from_row``, which also reports what is wrong."""
    out: list[Message] = []
    parts: list[Part] = []
    plain: dict[Any, _Plain | None] = {}
    seq, role, digest = -1, "user", None
    for mseq, mrole, mdigest, kind, text, data, blob in rows:
        if mseq != seq:
            if seq >= 0:
                out.append(_message(role, parts, digest))
            seq, role, digest, parts = mseq, mrole, mdigest, []
        if kind is None:
            continue
        if binary:
            text = text.decode()
            if blob is not None:
                blob = blob.decode()
        if data is None:
            parts.append(make_text(text) if kind == "text" else part_from_row(kind, text, data, blob))
            continue
        if kind == "reasoning":
            try:
                r = plain[data]
            except KeyError:
                r = plain[data] = _plain_reasoning(data)
            if r is not None and (blob is None) == (r[1] is None):
                parts.append(make_reasoning(text, r[0], blob, r[1], r[2]))
                continue
        elif kind == "tool_call" or kind == "tool_result":
            part = _fast_call_or_result(kind, text, data)
            if part is not None:
                parts.append(part)
                continue
        parts.append(part_from_row(kind, text, data, blob))
    if seq >= 0:
        out.append(_message(role, parts, digest))
    return out


def _fast_call_or_result(kind: str, text: str, data: str | bytes) -> Part | None:
    try:
        d = orjson.loads(data)
        if type(d) is not dict:
            return None
        if kind == "tool_call":
            if d.keys() == _CALL_KEYS and type(d["id"]) is str and type(d["name"]) is str:
                return make_tool_call(d["id"], d["name"], text)
            return None
        if d.keys() <= _PLAIN_RESULT:
            call_id, name, is_error = d["call_id"], d.get("name", ""), d.get("is_error", False)
            if type(call_id) is str and type(name) is str and type(is_error) is bool:
                return make_tool_result(call_id, text, name, is_error)
    except (KeyError, orjson.JSONDecodeError):
        return None
    return None


def _message(role: Any, parts: list[Part], digest: bytes | None) -> Message:
    if role in ROLES:
        return make_message(role, tuple(parts), bytes(digest) if digest else None)
    return stored_message(role, parts, digest)  # raises the error Message gives
