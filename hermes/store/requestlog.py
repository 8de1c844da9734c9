"""The request log: one JSON line per request under ``$HERMES_HOME/logs/hermes.log``.

It records which reasoning went where — route, host, model, and per carrier field the number
of messages, total characters and short hashes of blobs — never reasoning text, blob values or
keys. Files rotate at 5 MB (3 kept) and are created 0600. ``hermes logs`` reads them back.

A ``request`` record also carries the planner's decision for every assistant message it
replayed, run-length encoded so a long session costs a line per change, not per turn:
``turns`` is ``[[first index, last index, kind], ...]`` — every assistant message stored
between the two indices got decision list number ``kind`` of ``kinds`` (each
``[[action, fields, reason number], ...]``), and ``reasons`` holds each reason string once.
``window`` is the first stored index sent (earlier messages were cut by a compaction
checkpoint). The web view's request matrix draws these. Reasons name routes, hosts and
models, never reasoning text or blob values.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from array import array
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ..config.paths import logs_dir
from ..core.errors import redact
from ..core.messages import Reasoning

__all__ = [
    "LOG_NAME",
    "Summary",
    "Tally",
    "carried_summary",
    "log_event",
    "message_summary",
    "plan_summary",
    "read_log",
    "tally",
]

LOG_NAME = "hermes.log"
MAX_BYTES = 5_000_000
BACKUPS = 3
_lock = threading.Lock()


def _short(s: str) -> str:
    return hashlib.sha256(s.encode("utf-8", "surrogatepass")).hexdigest()[:10]


_STRUCTURE = ("merge", "insert")
"""Turn-structure decisions: about the request's shape, not about any reasoning carrier."""
_HASHED = ("reasoning_details", "reasoning_opaque", "extra_content")
"""Carrier fields whose value is opaque: the log keeps short hashes of it."""


Summary = tuple[tuple[tuple[str, str, str], ...], tuple[tuple[str, int, str | None], ...], int, int]
"""What one planned message carried, for the request log: (its non-structure decisions as
(action, fields, reason), the values it carried as (field, chars, blob or None), pads,
dropped parts). Memoised per planned message by the builder (``hermes.builder``); a kept run
holds the ``Tally`` of its messages instead."""


def message_summary(pm: Any) -> Summary:
    """The ``Summary`` of one planned message (a blob is hashed only when a log shows it)."""
    kind = tuple((d.action, ",".join(d.fields), d.reason) for d in pm.decisions if d.action not in _STRUCTURE)
    adds: list[tuple[str, int, str | None]] = []
    for name, value in pm.fields.items():
        raw = value if isinstance(value, str) else orjson.dumps(value).decode()
        adds.append((name, len(raw), raw if name in _HASHED else None))
    for p in pm.parts:
        if isinstance(p, Reasoning):
            adds.append((f"block:{p.blob_kind or 'text'}", len(p.text) + len(p.blob or ""), p.blob))
    for sig in pm.tool_signatures.values():
        adds.append(("tool_signature", len(sig), sig))
    if pm.thought_signature:
        adds.append(("thought_signature", len(pm.thought_signature), pm.thought_signature))
    pads = sum(1 for d in pm.decisions if d.action == "pad")
    dropped = sum(1 for d in pm.decisions if d.action == "drop")
    return kind, tuple(adds), pads, dropped


_NO_FIELD: dict[str, Any] = {"hashes": ()}


class Tally:
    """``plan_summary``'s running totals over planned messages, in order. JSON-able (a kept run
    holds its messages' tally, ``builder.kept``) and mergeable: ``extend`` by the tally of the
    messages that follow gives what adding them one by one gives."""

    __slots__ = ("fields", "kept", "kinds", "pads", "reasons", "turns")

    def __init__(self) -> None:
        self.fields: dict[str, dict[str, Any]] = {}
        self.pads = 0
        self.reasons: dict[str, int] = {}
        self.kinds: dict[tuple[tuple[str, str, int], ...], int] = {}
        self.turns: list[int] = []
        """Runs of assistant messages with the same decisions, flat: first, last, kind, first, …
        (a long session has thousands; flat, they are copied and checked in C)."""
        self.kept = 0

    def add(self, index: int, role: str, rec: Summary) -> None:
        decided, adds, m_pads, dropped = rec
        if role == "assistant":
            reasons = self.reasons
            self._turn(index, index, tuple((a, f, reasons.setdefault(r, len(reasons))) for a, f, r in decided))
        fields = self.fields
        for name, chars, blob in adds:
            hashes: list[str] = []
            if blob is not None and len(fields.get(name, _NO_FIELD)["hashes"]) < 8:
                hashes.append(_short(blob))  # hashed only while the log shows it
            self._field(name, 1, chars, hashes)
        self.pads += m_pads
        if dropped:
            self._field("dropped_parts", dropped, 0, [])

    def _turn(self, first: int, last: int, kind: tuple[tuple[str, str, int], ...]) -> None:
        k = self.kinds.setdefault(kind, len(self.kinds))
        turns = self.turns
        if turns and turns[-1] == k:
            turns[-2] = last
        else:
            turns += (first, last, k)

    def _field(self, name: str, messages: int, chars: int, hashes: list[str]) -> None:
        f = self.fields.setdefault(name, {"messages": 0, "chars": 0, "hashes": []})
        f["messages"] += messages
        f["chars"] += chars
        room = 8 - len(f["hashes"])
        if room > 0 and hashes:
            f["hashes"].extend(hashes[:room])

    def extend(self, other: Tally) -> Tally:
        """Add the tally of the messages that follow (``other`` is not changed)."""
        reasons = [self.reasons.setdefault(r, len(self.reasons)) for r in other.reasons]
        kinds = [tuple((a, f, reasons[r]) for a, f, r in kind) for kind in other.kinds]
        if other.turns:  # its kinds in order of first use, as adding its messages would
            flat = other.turns[:]
            remap = [self.kinds.setdefault(kind, len(self.kinds)) for kind in kinds]
            if remap != list(range(len(remap))):
                flat[2::3] = [remap[k] for k in flat[2::3]]
            if self.turns and self.turns[-1] == flat[2]:
                self.turns[-2] = flat[1]
                del flat[:3]
            self.turns += flat
        for name, f in other.fields.items():
            self._field(name, f["messages"], f["chars"], f["hashes"])
        self.pads += other.pads
        self.kept += other.kept
        return self

    def to_json(self) -> dict[str, Any]:
        return {"fields": self.fields, "pads": self.pads, "reasons": list(self.reasons),
                "kinds": [[list(d) for d in kind] for kind in self.kinds], "turns": self.turns, "kept": self.kept}

    @classmethod
    def from_json(cls, data: Any) -> Tally:
        """A tally read back (``ValueError``/``TypeError``/``KeyError`` on any other shape)."""
        t = cls()
        t.fields = {str(n): {"messages": int(f["messages"]), "chars": int(f["chars"]),
                             "hashes": [str(h) for h in f["hashes"]][:8]} for n, f in data["fields"].items()}
        t.pads = int(data["pads"])
        t.reasons = {str(r): i for i, r in enumerate(data["reasons"])}
        t.kinds = {tuple((str(a), str(f), int(r)) for a, f, r in kind): i for i, kind in enumerate(data["kinds"])}
        array("q", data["turns"])  # integers only (checked in C)
        t.turns = list(data["turns"])
        t.kept = int(data["kept"])
        ks = t.turns[2::3]
        if len(t.reasons) != len(data["reasons"]) or len(t.kinds) != len(data["kinds"]) or len(t.turns) % 3 or (
                ks and not 0 <= min(ks) <= max(ks) < len(t.kinds)) or any(
                not 0 <= r < len(t.reasons) for kind in t.kinds for *_, r in kind):
            raise ValueError("inconsistent tally")
        return t


def tally(messages: Any, summary: Callable[[Any], Summary] | None = None) -> Tally:
    """The ``Tally`` of planned ``messages``; ``summary``: how a message's ``Summary`` is had
    (``message_summary``, or the builder's memoised form of it)."""
    summary = summary or message_summary
    out = Tally()
    for m in messages:
        out.add(m.index, m.role, summary(m))
    return out


def plan_summary(plan: Any, summary: Callable[[Any], Summary] | None = None) -> dict[str, Any]:
    """Which reasoning fields a request carried: names, counts, lengths, blob hashes (``summary``
    as for ``tally``); the plan's kept runs carry their messages' tally (``kept``: how many
    messages they held)."""
    t = Tally()
    for r in plan.kept:
        t.extend(r.tally)
    t.extend(tally(plan.messages, summary))
    tg = plan.target
    return {"route": tg.route.key, "host": tg.host, "model": tg.model, "wire": tg.route.wire,
            "fields": t.fields, "pads": t.pads, "switches": sorted(plan.request_fields), "thinking": plan.thinking,
            "window": plan.first, "turns": [list(x) for x in zip(*[iter(t.turns)] * 3, strict=True)], "kinds": [[list(d) for d in kind] for kind in t.kinds],
            "reasons": list(t.reasons), "notes": list(plan.notes), "kept": t.kept}


SHORT_NAMES = {"reasoning_content": "RC", "reasoning": "R", "reasoning_details": "RD"}


def carried_summary(rec: Mapping[str, Any]) -> str:
    """One short phrase for what a ``request`` record carried (``hermes logs``, the live view)."""
    bits = []
    for name, f in (rec.get("fields") or {}).items():
        label = SHORT_NAMES.get(name, name)
        hashes = f" #{','.join(f['hashes'][:2])}" if f.get("hashes") else ""
        bits.append(f"{label} {f['messages']}×{f['chars']}ch{hashes}" if name != "dropped_parts"
                    else f"dropped {f['messages']}")
    if rec.get("pads"):
        bits.append(f"pad×{rec['pads']}")
    if rec.get("switches"):
        bits.append("switches " + ",".join(rec["switches"]))
    return "; ".join(bits) or "no reasoning"


def _append(path: Path, line: str, max_bytes: int = MAX_BYTES) -> None:
    """Append one line to ``path`` (0600), first rotating it when the line would take it past
    ``max_bytes``: ``hermes.log`` → ``.1`` → ``.2`` → ``.3``, the oldest dropped. The file is
    opened by name for each line, so every process of a gateway writes to the current file and
    the size checked is the file's own, other processes' lines included."""
    data = line.encode("utf-8") + b"\n"
    with _lock:
        f = _open(path)
        size = f.seek(0, os.SEEK_END)
        if size and size + len(data) > max_bytes:
            if _same_file(f.fileno(), path):  # not rotated by another process meanwhile
                _rotate(path)
            f.close()
            f = _open(path)
        with f:
            f.write(data)


def _open(path: Path) -> BinaryIO:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.fchmod(fd, 0o600)  # an older file made with a wider umask
    return os.fdopen(fd, "ab")


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


def _rotate(path: Path) -> None:
    names = [path, *(path.with_name(f"{path.name}.{i}") for i in range(1, BACKUPS + 1))]
    for i in range(BACKUPS - 1, -1, -1):  # .2 → .3, .1 → .2, the log → .1
        with contextlib.suppress(FileNotFoundError):  # not made yet, or gone meanwhile
            os.replace(names[i], names[i + 1])


def log_event(event: str, **data: Any) -> None:
    """Append one JSON line; secrets are scrubbed from every string."""
    record = {"ts": round(time.time(), 3), "event": event, **data}
    line = redact(orjson.dumps(record, option=orjson.OPT_NON_STR_KEYS, default=str).decode())
    with contextlib.suppress(OSError):  # a read-only HERMES_HOME must not break a turn
        _append(logs_dir() / LOG_NAME, line)


def read_log(session: str | None = None, path: Path | None = None) -> Iterator[Mapping[str, Any]]:
    path = path or logs_dir() / LOG_NAME
    if not path.exists():
        return
    with path.open("rb") as f:
        for line in f:
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if session is None or str(rec.get("session") or "").startswith(session):
                yield rec
