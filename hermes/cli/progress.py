"""A rich spinner on stderr for slow work (compaction summaries, long commands).

Only on a terminal: piped or captured stderr gets nothing, so logs and ``--json`` stay clean.
``Activity`` is started and stopped by events (the agent's ``compacting`` / ``compaction``);
``working`` wraps a block.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Activity", "working"]


class Activity:
    """One rich status line that can be started, relabelled and stopped from callbacks."""

    def __init__(self, *, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._status: Any = None

    def start(self, label: str) -> None:
        if not self.enabled:
            return
        if self._status is None:
            from rich.console import Console

            self._status = Console(stderr=True).status(label, spinner="dots")
            self._status.start()
        else:
            self._status.update(label)

    def stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


@contextmanager
def working(label: str, *, enabled: bool | None = None) -> Iterator[Activity]:
    """Show ``label`` with a spinner while the block runs."""
    activity = Activity(enabled=enabled)
    activity.start(label)
    try:
        yield activity
    finally:
        activity.stop()
