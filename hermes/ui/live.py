"""The live tail: new request-log records as Server-Sent Events.

The log is a file other processes append to (CLI turns, gateway workers, the proxy), so the
tail polls its size, like ``hermes logs -f``. Each event's ``id`` is the byte offset after its
line: a browser reconnecting with ``Last-Event-ID`` resumes exactly there. A stream ends by
itself after ``lifetime_s`` (the browser reconnects 0.3 s later), so an open tab holds up a
server's graceful shutdown for that long at most: a server cannot tell a stream it is stopping.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import orjson

__all__ = ["tail_events"]


def _start(path: Path, last_id: str | None, backlog: int) -> int:
    size = path.stat().st_size if path.exists() else 0
    if last_id is not None and last_id.isdigit():
        pos = int(last_id)
        return pos if pos <= size else 0  # larger: the file rotated since
    if backlog <= 0 or size == 0:
        return size
    base = max(0, size - 64_000)
    with path.open("rb") as f:  # start ``backlog`` complete lines before the end
        f.seek(base)
        chunk = f.read()
    starts = [0] if base == 0 else []  # a chunk not at the file start begins mid-line
    starts += [i + 1 for i in range(len(chunk) - 1) if chunk[i] == 0x0A]
    if not starts:
        return size
    return base + starts[-backlog] if len(starts) >= backlog else base + starts[0]


async def tail_events(path: Path, *, last_id: str | None, session: str | None,
                      shape: Callable[[Mapping[str, Any]], Mapping[str, Any]],
                      backlog: int = 20, poll_s: float = 0.25, lifetime_s: float = 5.0) -> AsyncIterator[bytes]:
    """SSE bytes for each new record (of ``session`` only, when given), shaped by ``shape``."""
    pos = _start(path, last_id, backlog)
    yield b"retry: 300\n\n"
    waited = 0.0
    while waited < lifetime_s:
        size = path.stat().st_size if path.exists() else 0
        if size < pos:
            pos = 0
        if size > pos:
            with path.open("rb") as f:
                f.seek(pos)
                chunk = f.read(size - pos)
            complete, sep, _ = chunk.rpartition(b"\n")
            for line in complete.split(b"\n") if sep else []:
                pos += len(line) + 1
                try:
                    rec = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if not isinstance(rec, dict) or (session and rec.get("session") != session):
                    continue
                yield b"id: %d\nevent: record\ndata: %s\n\n" % (pos, orjson.dumps(shape(rec)))
        await anyio.sleep(poll_s)
        waited += poll_s
    yield b"id: %d\n: rest\n\n" % pos
