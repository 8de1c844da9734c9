"""Parts <-> rows: the only place that knows how a part's JSON form is split across columns.

A part is stored as its documented JSON form (``hermes.core.messages.part_to_dict``) cut in three:

* ``kind`` and the readable text (``text`` column) — queryable, and the bulk of the bytes;
* ``Reasoning.blob`` — moved to the content-addressed ``blobs`` table, referenced by hash;
* everything else (origin, blob_kind, item_id, native, extra, name, is_error ...) — ``data``.

Loading glues the three back together and goes through ``part_from_dict``, so a stored part
is rebuilt by the same code that reads a JSONL history; ``dumps`` of the result is byte-equal
to ``dumps`` of what was appended (orjson keeps the key order of ``extra``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from ..core.errors import HistoryError
from ..core.messages import (
    Message,
    Part,
    Text,
    blob_hash,
    part_from_dict,
    part_to_dict,
)

__all__ = ["TEXT_KEY", "PartRow", "blob_hash", "messages_from_rows", "part_from_row", "part_to_row", "stored_message"]

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


def part_from_row(kind: str, text: str, data: str | None, blob: str | None) -> Part:
    """Rebuild a part from its columns (and its blob's data when it has one)."""
    if kind == "text" and data is None:
        return Text(text)  # the common case, no JSON work
    d = orjson.loads(data) if data else {}
    if not isinstance(d, dict) or kind not in TEXT_KEY:
        raise HistoryError(f"a stored part of kind {kind!r} must have a JSON object as its data")
    d["kind"] = kind
    d[TEXT_KEY[kind]] = text
    if blob is not None:
        d["blob"] = blob
    return part_from_dict(d)


def stored_message(role: Any, parts: list[Part], digest: bytes | None) -> Message:
    """A loaded message with the digest stored next to it (``messages.message_digest``, written
    with the message), so nothing is hashed on load; rows from before digests were kept get
    theirs computed on first use."""
    return Message(role, tuple(parts), digest=bytes(digest) if digest else None)


def messages_from_rows(rows: Iterable[Sequence[Any]], *, binary: bool = False) -> list[Message]:
    """The messages of the load query's rows — (seq, role, digest, kind, text, data, blob), one
    row per part (kind None for a message without parts), in order. With ``binary`` the text
    and blob columns are UTF-8 bytes (PostgreSQL's binary rows)."""
    out: list[Message] = []
    parts: list[Part] = []
    seq, role, digest = -1, "user", None
    for mseq, mrole, mdigest, kind, text, data, blob in rows:
        if mseq != seq:
            if seq >= 0:
                out.append(stored_message(role, parts, digest))
            seq, role, digest, parts = mseq, mrole, mdigest, []
        if kind is None:
            continue
        if binary:
            text = text.decode()
            blob = None if blob is None else blob.decode()
        parts.append(part_from_row(kind, text, data, blob))
    if seq >= 0:
        out.append(stored_message(role, parts, digest))
    return out
