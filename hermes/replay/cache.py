"""Incremental building: the memo that lets a request rebuilt after every tool step plan and
render only what is new.

Stored messages are immutable and a session's history only grows, so each per-message result
(a plan, a render, a token cost) can be kept and reused while its inputs are unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..messages import Message
from .plan import PlannedMessage

__all__ = ["BuildCache", "common_prefix"]


class BuildCache:
    """Memo of per-message plans and renders for one conversation, keyed by object identity.

    Stored messages are immutable and planning one depends only on (message, route, learned,
    position, inside the open loop or not), so a request rebuilt after every tool step
    re-plans and re-renders only what changed. Each entry keeps the object it was computed
    from, so an ``id()`` can never be reused by another object while cached. Cached values are
    shared between requests: treat plans and rendered bodies as read-only.
    """

    __slots__ = ("_costs", "_entries", "last_ids", "last_plan", "last_render", "last_structure", "last_window")

    def __init__(self) -> None:
        self._entries: dict[int, tuple[object, object, Any]] = {}
        self._costs: dict[int, tuple[object, object, int]] = {}
        """Token cost per planned message (``estimate``), apart so it never evicts a render."""
        self.last_plan: tuple[object, Sequence[Message], int, list[PlannedMessage]] | None = None
        """(key, messages, loop start, planned) of the previous plan: its prefix is reused whole."""
        self.last_window: tuple[list[Message], int] | None = None
        """(history, window start) of the previous plan: only a grown tail is scanned again."""
        self.last_render: tuple[object, Sequence[PlannedMessage], Any] | None = None
        """(key, planned, rendered chunks) of the previous render, for the wire's own reuse."""
        self.last_structure: tuple[str, list[PlannedMessage], list[PlannedMessage],
                                   list[tuple[str | None, int]]] | None = None
        """(wire, planned in, marked out, state before each) of the previous structure pass."""
        self.last_ids: tuple[str, list[Message], list[str], bool] | None = None
        """(id rule, messages, their tool-call ids, all valid) of the previous request: a grown
        history scans only its new messages for ids the route would refuse."""

    def get(self, obj: object, key: object, compute: Any) -> Any:
        e = self._entries.get(id(obj))
        if e is not None and e[0] is obj and e[1] == key:
            return e[2]
        value = compute()
        self._entries[id(obj)] = (obj, key, value)
        return value

    def cost(self, obj: object, key: object, compute: Any) -> int:
        """``get`` for the token estimate of a planned message: the preflight before every
        request and the usage feedback after it price the same plan, so each message once."""
        e = self._costs.get(id(obj))
        if e is not None and e[0] is obj and e[1] == key:
            return e[2]
        value: int = compute()
        self._costs[id(obj)] = (obj, key, value)
        return value


def common_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    """How many leading items of ``a`` and ``b`` are the same objects (or equal values, which
    plan and render identically at the same position). A shorter answer is always safe: it
    only means less is reused."""
    n = min(len(a), len(b))
    if n and a[n - 1] is b[n - 1] and list(a[:n]) == list(b[:n]):
        return n  # the usual case, a grown history: one identity-first comparison in C
    # The open tool loop is planned again on every request, so the shared prefix usually ends
    # a few items short of ``n``: find where identity stops by bisection, then confirm the
    # prefix with one comparison in C rather than a Python loop over thousands of items.
    lo, hi = 0, n  # a[:lo] assumed shared; a[hi - 1] is not b[hi - 1] (or hi == n)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[mid - 1] is b[mid - 1]:
            lo = mid
        else:
            hi = mid
    if lo and list(a[:lo]) == list(b[:lo]):
        i = lo
    else:
        i = 0
    while i < n and a[i] is b[i]:
        i += 1
    return i
