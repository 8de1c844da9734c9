"""Helpers over a stored history (``list[Message]``): the window a wire starts at, the open loop."""

from __future__ import annotations

from collections.abc import Sequence

from .messages import Compaction, Message

__all__ = ["open_loop_start", "window"]


def window(history: Sequence[Message]) -> tuple[int, Sequence[Message]]:
    """(offset, messages) from the latest compaction checkpoint on; older rows are not sent."""
    for i in range(len(history) - 1, -1, -1):
        if any(isinstance(p, Compaction) for p in history[i].parts):
            return i, history[i:]
    return 0, history


def open_loop_start(messages: Sequence[Message]) -> int:
    """Index of the first message after the last user message: the in-flight tool loop.

    Tool results live in ``tool`` messages, so a ``user`` message always ends a loop.
    """
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            return i + 1
    return 0
