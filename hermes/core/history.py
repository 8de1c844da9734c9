"""Helpers over a stored history (``list[Message]``): the window a wire starts at, the open loop."""

from __future__ import annotations

from collections.abc import Sequence

from .messages import Compaction, Message

__all__ = ["closes_loop", "latest_checkpoint", "open_loop_start", "system_prompt", "window"]


def latest_checkpoint(history: Sequence[Message], lo: int = 0) -> int | None:
    """Index of the newest message at or after ``lo`` that holds a compaction checkpoint."""
    for i in range(len(history) - 1, lo - 1, -1):
        for p in history[i].parts:
            if type(p) is Compaction:
                return i
    return None


def window(history: Sequence[Message], *, known: int = 0, known_start: int = 0) -> tuple[int, Sequence[Message]]:
    """(offset, messages) from the latest compaction checkpoint on; older rows are not sent.

    A caller that already knows the window of ``history[:known]`` (``known_start``) passes it,
    and only the new tail is scanned."""
    i = latest_checkpoint(history, known)
    start = i if i is not None else known_start
    return start, history[start:] if start else history


def closes_loop(messages: Sequence[Message], i: int) -> bool:
    """Whether user message ``i`` starts a new API turn, closing the tool loop before it.

    Tool results live in ``tool`` messages, so a ``user`` message normally ends a loop. But a
    loop cut before its answer (a killed or interrupted turn) ends in a tool result; the next
    user message then lands in the same API user turn as that result (Anthropic merges them),
    so the provider still sees the unanswered loop as the latest one and wants its thinking.
    Compaction cuts only where this holds, so a cut never moves the loop's start."""
    return messages[i].role == "user" and not (i > 0 and messages[i - 1].role == "tool")


def open_loop_start(messages: Sequence[Message]) -> int:
    """Index of the first message after the last user message that closed a loop: the in-flight
    tool loop (see :func:`closes_loop`)."""
    for i in range(len(messages) - 1, -1, -1):
        if closes_loop(messages, i):
            return i + 1
    return 0


def system_prompt(history: Sequence[Message]) -> str | None:
    """The system prompt in force: the text of the newest system message in the window that is
    sent (``None``: there is none). ``hermes chat --system`` adds one only when it differs, so a
    resumed session keeps the one it was given and a repeated flag adds nothing."""
    for m in reversed(window(history)[1]):
        if m.role == "system":
            return m.text
    return None
