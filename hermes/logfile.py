"""The request log's file: one line appended per event, rotated by size.

It does what ``logging.handlers.RotatingFileHandler`` did for ``logs.log_event`` — append,
flush, and at 5 MB rename ``hermes.log`` to ``hermes.log.1`` (``.1`` to ``.2``, ``.2`` to
``.3``, the oldest dropped) — without what came with it on every line: a ``LogRecord`` (time,
thread, process and caller looked up), the logger's level and handler walk, and two ``stat``
calls to check that the file is still a regular file. A gateway or proxy writes a line per
request, so that was a tenth of a proxied request's CPU. As there, a line that would take
the file past the size goes to a new file, and the size is the file's own (other processes'
lines included); a process that finds its file already rotated by another opens the new one
instead of rotating again.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import BinaryIO

__all__ = ["LogFile"]

MAX_BYTES = 5_000_000
BACKUPS = 3


class LogFile:
    """Appends lines to ``path`` (mode 0600, opened on first use), rotating past ``max_bytes``."""

    def __init__(self, path: Path, *, max_bytes: int = MAX_BYTES, backups: int = BACKUPS) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
        self._lock = threading.Lock()
        self._f: BinaryIO | None = None

    def write(self, line: str) -> None:
        data = line.encode("utf-8") + b"\n"
        with self._lock:
            f = self._f or self._open()
            size = f.seek(0, os.SEEK_END)  # the file's, other processes' lines included
            if size and size + len(data) > self.max_bytes:
                if self._still_current(f):
                    self._rotate()
                self._close()  # rotated here or by another process: the line goes to a new file
                f = self._open()
            f.write(data)
            f.flush()

    def _open(self) -> BinaryIO:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.fchmod(fd, 0o600)  # an older file made with a wider umask
        self._f = os.fdopen(fd, "ab")
        return self._f

    def _still_current(self, f: BinaryIO) -> bool:
        try:
            return os.path.samestat(os.fstat(f.fileno()), os.stat(self.path))
        except FileNotFoundError:
            return False

    def _rotate(self) -> None:
        names = [self.path, *(self.path.with_name(f"{self.path.name}.{i}") for i in range(1, self.backups + 1))]
        for i in range(self.backups - 1, -1, -1):  # .2 → .3, .1 → .2, the log → .1
            with contextlib.suppress(FileNotFoundError):  # not made yet, or gone meanwhile
                os.replace(names[i], names[i + 1])

    def _close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    def close(self) -> None:
        with self._lock:
            self._close()
