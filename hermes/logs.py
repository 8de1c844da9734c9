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
import logging
import logging.handlers
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from .errors import redact
from .messages import Reasoning
from .paths import logs_dir

__all__ = ["LOG_NAME", "Summary", "carried_summary", "hashed", "log_event", "message_summary", "plan_summary",
           "read_log"]

LOG_NAME = "hermes.log"
_logger: logging.Logger | None = None


def _short(s: str) -> str:
    return hashlib.sha256(s.encode("utf-8", "surrogatepass")).hexdigest()[:10]


_STRUCTURE = ("merge", "insert")
"""Turn-structure decisions: about the request's shape, not about any reasoning carrier."""
_HASHED = ("reasoning_details", "reasoning_opaque", "extra_content")
"""Carrier fields whose value is opaque: the log keeps short hashes of it."""


Summary = tuple[tuple[tuple[str, str, str], ...], tuple[tuple[str, int, str | None, str | None], ...], int, int]
"""What one planned message carried, for the request log: (its non-structure decisions as
(action, fields, reason), the values it carried as (field, chars, blob or None, blob's short
hash or None), pads, dropped parts). Memoised and kept with the message's render
(``replay.memo``), so a request built from kept results is logged without planning again."""


def message_summary(pm: Any) -> Summary:
    """The ``Summary`` of one planned message (a blob is hashed only when a log shows it)."""
    kind = tuple((d.action, ",".join(d.fields), d.reason) for d in pm.decisions if d.action not in _STRUCTURE)
    adds: list[tuple[str, int, str | None, str | None]] = []
    for name, value in pm.fields.items():
        raw = value if isinstance(value, str) else orjson.dumps(value).decode()
        adds.append((name, len(raw), raw if name in _HASHED else None, None))
    for p in pm.parts:
        if isinstance(p, Reasoning):
            adds.append((f"block:{p.blob_kind or 'text'}", len(p.text) + len(p.blob or ""), p.blob, None))
    for sig in pm.tool_signatures.values():
        adds.append(("tool_signature", len(sig), sig, None))
    if pm.thought_signature:
        adds.append(("thought_signature", len(pm.thought_signature), pm.thought_signature, None))
    pads = sum(1 for d in pm.decisions if d.action == "pad")
    dropped = sum(1 for d in pm.decisions if d.action == "drop")
    return kind, tuple(adds), pads, dropped


def hashed(summary: Summary) -> Summary:
    """``summary`` with every blob replaced by its short hash (the form that is kept)."""
    kind, adds, pads, dropped = summary
    return kind, tuple((n, c, None, h if blob is None else _short(blob)) for n, c, blob, h in adds), pads, dropped


_UNKNOWN: Summary = ((), (), 0, 0)


def _kept_summary(row: Any) -> Summary:
    """The ``Summary`` kept in a ``store.renders`` row (decoded when a log first needs it); a
    row whose summary does not decode counts as carrying nothing (its render is still exact)."""
    try:
        kind, adds, pads, dropped = orjson.loads(row[6])
        return (tuple((str(a), str(f), str(r)) for a, f, r in kind),
                tuple((str(n), int(c), None, None if h is None else str(h)) for n, c, _, h in adds),
                int(pads), int(dropped))
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return _UNKNOWN


def plan_summary(plan: Any, memo: Any = None) -> dict[str, Any]:
    """Which reasoning fields a request carried: names, counts, lengths, blob hashes. With the
    conversation's ``memo`` (``replay.BuildMemo``) each message's ``Summary`` comes from it."""
    fields: dict[str, dict[str, Any]] = {}
    pads = 0
    reasons: dict[str, int] = {}
    kinds: dict[tuple[tuple[str, str, int], ...], int] = {}
    turns: list[list[int]] = []  # runs of assistant messages with the same decisions
    summaries = memo.summaries if memo is not None else None
    kept = 0
    for m in plan.messages:
        kept += m.kept
        rec = summaries.get(m.key) if summaries is not None and m.key is not None else None
        if rec is None:
            rec = _kept_summary(memo.kept[m.key]) if m.kept else message_summary(m)
            if summaries is not None and m.key is not None:
                summaries[m.key] = rec
        decided, adds, m_pads, dropped = rec
        if m.role == "assistant":
            kind = tuple((a, f, reasons.setdefault(r, len(reasons))) for a, f, r in decided)
            k = kinds.setdefault(kind, len(kinds))
            if turns and turns[-1][2] == k:
                turns[-1][1] = m.index
            else:
                turns.append([m.index, m.index, k])
        for name, chars, blob, h in adds:
            f = fields.setdefault(name, {"messages": 0, "chars": 0, "hashes": []})
            f["messages"] += 1
            f["chars"] += chars
            if (blob is not None or h is not None) and len(f["hashes"]) < 8:
                f["hashes"].append(h if h is not None else _short(blob or ""))
        pads += m_pads
        if dropped:
            fields.setdefault("dropped_parts", {"messages": 0, "chars": 0, "hashes": []})["messages"] += dropped
    t = plan.target
    return {"route": t.route.key, "host": t.host, "model": t.model, "wire": t.route.wire,
            "fields": fields, "pads": pads, "switches": sorted(plan.request_fields), "thinking": plan.thinking,
            "window": plan.messages[0].index if plan.messages else 0,
            "turns": turns, "kinds": [[list(d) for d in kind] for kind in kinds], "reasons": list(reasons),
            "notes": list(plan.notes), "kept": kept}


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


def _get_logger() -> logging.Logger:
    global _logger
    path = logs_dir() / LOG_NAME
    if _logger is not None and getattr(_logger, "_hermes_path", None) == path:
        return _logger
    logger = logging.getLogger(f"hermes.requests.{path}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    for h in list(logger.handlers):
        logger.removeHandler(h)
        h.close()
    old = os.umask(0o077)
    try:
        handler = logging.handlers.RotatingFileHandler(path, maxBytes=5_000_000, backupCount=3, encoding="utf-8")
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger._hermes_path = path  # type: ignore[attr-defined]
    _logger = logger
    return logger


def log_event(event: str, **data: Any) -> None:
    """Append one JSON line; secrets are scrubbed from every string."""
    record = {"ts": round(time.time(), 3), "event": event, **data}
    line = redact(orjson.dumps(record, option=orjson.OPT_NON_STR_KEYS, default=str).decode())
    with contextlib.suppress(OSError):  # a read-only HERMES_HOME must not break a turn
        _get_logger().info(line)


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
            if session is None or rec.get("session") == session:
                yield rec
