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

__all__ = ["LOG_NAME", "carried_summary", "log_event", "plan_summary", "read_log"]

LOG_NAME = "hermes.log"
_logger: logging.Logger | None = None


def _short(s: str) -> str:
    return hashlib.sha256(s.encode("utf-8", "surrogatepass")).hexdigest()[:10]


_STRUCTURE = ("merge", "insert")
"""Turn-structure decisions: about the request's shape, not about any reasoning carrier."""
_HASHED = ("reasoning_details", "reasoning_opaque", "extra_content")
"""Carrier fields whose value is opaque: the log keeps short hashes of it."""


def plan_summary(plan: Any) -> dict[str, Any]:
    """Which reasoning fields a request carried: names, counts, lengths, blob hashes.

    Runs over every planned message of every request (8,000 for a 2,000-turn session), so the
    loop keeps to one pass over each message's decisions and no per-item closure or dict."""
    fields: dict[str, dict[str, Any]] = {}

    def add(name: str, chars: int, blob: str | None = None) -> None:
        f = fields.get(name)
        if f is None:
            f = fields[name] = {"messages": 0, "chars": 0, "hashes": []}
        f["messages"] += 1
        f["chars"] += chars
        if blob is not None and len(f["hashes"]) < 8:
            f["hashes"].append(_short(blob))

    pads = 0
    reasons: dict[str, int] = {}
    kinds: dict[tuple[tuple[str, str, int], ...], int] = {}
    turns: list[list[int]] = []  # runs of assistant messages with the same decisions
    run: list[int] = [-1, -1, -1]
    for m in plan.messages:
        decisions = m.decisions
        if m.role == "assistant":
            kind = tuple([(d.action, ",".join(d.fields), reasons.setdefault(d.reason, len(reasons)))
                          for d in decisions if d.action not in _STRUCTURE])
            k = kinds.get(kind)
            if k is None:
                k = kinds[kind] = len(kinds)
            if run[2] == k:
                run[1] = m.index
            else:
                run = [m.index, m.index, k]
                turns.append(run)
        for name, value in m.fields.items():
            if isinstance(value, str) and name not in _HASHED:  # the common case, inline
                f = fields.get(name)
                if f is None:
                    f = fields[name] = {"messages": 0, "chars": 0, "hashes": []}
                f["messages"] += 1
                f["chars"] += len(value)
                continue
            raw = value if isinstance(value, str) else orjson.dumps(value).decode()
            add(name, len(raw), raw if name in _HASHED else None)
        for p in m.parts:
            if isinstance(p, Reasoning):
                add(f"block:{p.blob_kind or 'text'}", len(p.text) + len(p.blob or ""), p.blob)
        if m.tool_signatures:
            for sig in m.tool_signatures.values():
                add("tool_signature", len(sig), sig)
        if m.thought_signature:
            add("thought_signature", len(m.thought_signature), m.thought_signature)
        dropped = 0
        for d in decisions:
            if d.action == "pad":
                pads += 1
            elif d.action == "drop":
                dropped += 1
        if dropped:
            fields.setdefault("dropped_parts", {"messages": 0, "chars": 0, "hashes": []})["messages"] += dropped
    t = plan.target
    return {"route": t.route.key, "host": t.host, "model": t.model, "wire": t.route.wire,
            "fields": fields, "pads": pads, "switches": sorted(plan.request_fields), "thinking": plan.thinking,
            "window": plan.messages[0].index if plan.messages else 0,
            "turns": turns, "kinds": [[list(d) for d in kind] for kind in kinds], "reasons": list(reasons),
            "notes": list(plan.notes)}


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
