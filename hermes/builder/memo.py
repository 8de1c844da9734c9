"""Incremental building by value: the memo that lets a request rebuilt after every tool step
plan and render only what is new.

A per-message build result (its plan, its render, its token cost) is a pure function of

* the stored message's value — its ``digest`` (``messages.message_digest``: a fingerprint of
  its documented JSON form, written by the store with the message and read back with it);
* its position (``index``: decisions and errors name it) and whether it is inside the open
  tool loop (``in_loop``);
* the request *context*: everything about the target that planning reads — the resolved route
  row, host, model, model profile — and the learned rejections (``context``);
* the request-wide rules that touch it: the tool-id mapping entries it hits, thinking off on
  a signed wire, the turn-structure marks (each a suffix of its key).

``BuildMemo`` keeps each result under that key (``PlannedMessage.key``), never under an
object's identity, so a history loaded again, or a message rebuilt equal, hits the same entry,
and a change of route row, profile, model or lesson reaches a different key: a stale result
is never found. The request-wide scans (the compaction window, the tool ids, the structure
pass, the previous render) keep the digests of the messages they covered and are reused as
far as the new request's digests agree with them — a session's stored history only grows.

Wires never see the memo: they render one planned message at a time (``render_message``);
the builder (``render_with``) reuses what it can and hands the wire the per-message renders.
The memo also holds the session's kept runs (``builder.kept``): earlier messages already
built by this or an earlier process, which the builder splices whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, is_dataclass
from typing import Any

import orjson

from ..core.messages import Message, digest_of
from ..replay import PlannedMessage, Run

__all__ = ["FORMAT", "BuildMemo", "context", "digests", "render_context", "render_with", "serialised",
           "shared_prefix"]

Key = tuple[Any, ...]

FORMAT = 3
"""Version of what a kept result holds and how wires render: part of every ``context``, so
results kept by a Hermes that built differently are never found. Bump it with any change
to a wire's ``render_message``, a planner's output, a ``logs.Summary`` or a run's stored state."""

_KEEP_CONTEXTS = 2
"""Contexts whose entries a memo keeps (the current one and the one before: a route switch
and back, or a lesson learned mid-turn, does not start from nothing)."""


_SCALARS = (str, int, float, bool, type(None))


def _plain(value: Any) -> Any:
    """A JSON-able, process-independent form of a route/profile/lesson value. Concrete types
    are tested before ``Mapping``, whose ABC check cost each value a few microseconds."""
    if type(value) in _SCALARS:
        return value
    if type(value) is dict:
        return [[_plain(k), _plain(v)] for k, v in value.items()]
    if isinstance(value, frozenset | set):
        return sorted((_plain(v) for v in value), key=lambda v: orjson.dumps(v))
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if is_dataclass(value) and not isinstance(value, type):
        return [type(value).__name__, {f.name: _plain(getattr(value, f.name)) for f in fields(value)}]
    if isinstance(value, Mapping):
        return [[_plain(k), _plain(v)] for k, v in value.items()]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


_SEEN: dict[int, tuple[Any, bytes]] = {}
"""``id(value) -> (value, its JSON form)`` for the large frozen objects ``context`` was given."""

_SEEN_MAX = 256
_SEEN_MIN_BYTES = 512
"""Smaller forms are cheap to make again (a ``Learned``, made afresh for every request)."""


def _fragment(value: Any) -> bytes:
    """``orjson.dumps(_plain(value))``, made once per object when ``value`` is a frozen
    dataclass: a resolved target (its route row and profile, some fifty fields deep) took
    250–330 µs to flatten, and a turn asks for its context about eight times — some 15% of a
    turn's CPU. Runtime hands out the same ``Resolved`` object for the same route, and a frozen
    object's fields cannot be reassigned, so the form of an object seen before is still its
    form (its mappings are read-only by contract: nothing in Hermes writes into a route row).
    The entry holds the object itself, so its id cannot be reused while the entry lives."""
    frozen = getattr(getattr(value, "__dataclass_params__", None), "frozen", False) and not isinstance(value, type)
    if frozen:
        seen = _SEEN.get(id(value))
        if seen is not None and seen[0] is value:
            return seen[1]
    out = orjson.dumps(_plain(value))
    if frozen and len(out) >= _SEEN_MIN_BYTES:
        if len(_SEEN) >= _SEEN_MAX:
            _SEEN.clear()
        _SEEN[id(value)] = (value, out)
    return out


def context(*values: Any) -> bytes:
    """The fingerprint of everything a request's per-message results depend on besides the
    message itself: ``context(target, learned)``. Stable across processes (sets are sorted,
    no ``hash()``), so it can key persisted results too. The bytes hashed are
    ``orjson.dumps([FORMAT, [_plain(v) for v in values]])``, put together from each value's
    own form (orjson's compact output is the concatenation of its items' with commas)."""
    body = b"[%d,[" % FORMAT + b",".join(_fragment(v) for v in values) + b"]]"
    return hashlib.sha256(body).digest()[:16]


def render_context(route: Any) -> tuple[str, str, str, str]:
    """What a wire's per-message render reads besides the planned message."""
    return route.wire, route.call_signature, route.text_signature, route.policy


def digests(messages: Sequence[Message]) -> list[bytes]:
    """Each message's digest (computed only for messages that do not carry one yet)."""
    return [m.digest or digest_of(m) for m in messages]


def shared_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items of ``a`` and ``b`` are equal (values, compared in C)."""
    n = min(len(a), len(b))
    if n == 0 or a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo]; a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


class BuildMemo:
    """Per-message plans, renders and token costs of one conversation, memoised by value.

    Entries are shared between requests: treat plans and renders as read-only. The
    ``last_*`` attributes are the request-wide scans of the previous request, each with the
    digests (or plan keys) of what it covered; a new request reuses the part that agrees."""

    __slots__ = ("_contexts", "costs", "last_ids", "last_plan", "last_remap", "last_render", "last_structure",
                 "last_window", "plans", "renders", "restored", "runs", "summaries")

    def __init__(self) -> None:
        self._contexts: list[bytes] = []
        self.plans: dict[Key, PlannedMessage] = {}
        """(context, index, digest, in_loop, *rule suffixes) → the planned message."""
        self.renders: dict[tuple[Key, Any], bytes] = {}
        """(plan key, render context) → what the wire rendered for it, serialised."""
        self.costs: dict[tuple[Key, str], int] = {}
        """(plan key, pricing basis) → raw token cost (``estimate.message_cost``)."""
        self.summaries: dict[Key, Any] = {}
        """plan key → what the message carried, for the request log (``logs.message_summary``)."""
        self.runs: dict[bytes, list[Run]] = {}
        """context → the session's chain of kept runs (``builder.kept``), as restored from the
        store or kept by this process."""
        self.restored: set[tuple[str, bytes]] = set()
        """(session, context) pairs whose kept runs were loaded into this memo."""
        self.last_window: tuple[list[bytes], int] | None = None
        """(digests of the history, window start) of the previous plan."""
        self.last_plan: tuple[tuple[bytes, int, int], list[bytes], int, list[PlannedMessage]] | None = None
        """((context, window start, first planned offset), digests of the window, loop start,
        planned) of the previous plan."""
        self.last_ids: tuple[tuple[str, tuple[Run, ...]], list[bytes], dict[str, str], set[str]] | None = None
        """((id rule, kept runs it grew from), digests of the messages after them, id mapping, the
        wire ids it took) of the previous request."""
        self.last_remap: tuple[dict[str, str], list[PlannedMessage], list[PlannedMessage]] | None = None
        """(id mapping, planned messages in, remapped out) of the previous request with a mapping."""
        self.last_structure: tuple[tuple[str, str | None], list[Key | None], list[PlannedMessage],
                                   list[tuple[str | None, int]]] | None = None
        """((wire, side before), plan keys in, marked out, state before each) of the previous
        structure pass."""
        self.last_render: tuple[Any, list[Key | None], list[bytes]] | None = None
        """(render context, plan keys, per-message renders) of the previous render."""

    def use_context(self, ctx: bytes) -> None:
        """A request in context ``ctx`` starts: keep the entries of the last few contexts only."""
        if self._contexts and self._contexts[-1] == ctx:
            return
        if ctx in self._contexts:
            self._contexts.remove(ctx)
        self._contexts.append(ctx)
        if len(self._contexts) > _KEEP_CONTEXTS:
            keep = set(self._contexts[-_KEEP_CONTEXTS:])
            self._contexts = self._contexts[-_KEEP_CONTEXTS:]
            self.plans = {k: v for k, v in self.plans.items() if k[0] in keep}
            self.renders = {k: v for k, v in self.renders.items() if k[0][0] in keep}
            self.costs = {k: v for k, v in self.costs.items() if k[0][0] in keep}
            self.summaries = {k: v for k, v in self.summaries.items() if k[0] in keep}
            self.runs = {k: v for k, v in self.runs.items() if k in keep}

    def derived(self, pm: PlannedMessage, rule: Any, compute: Callable[[], PlannedMessage]) -> PlannedMessage:
        """``pm`` after a request-wide rule (``rule``: a value saying exactly what it applied)."""
        if pm.key is None:
            return compute()
        key = (*pm.key, rule)
        out = self.plans.get(key)
        if out is None:
            out = compute()
            out.key = key
            self.plans[key] = out
        return out


def serialised(items: Sequence[Any]) -> bytes:
    """One message's render (its JSON items) serialised once, comma-separated (``b""``: none).
    A wire splices these bytes into the body (``orjson.Fragment``) instead of serialising
    the items again on every request."""
    return b",".join([orjson.dumps(x) for x in items])


def render_with(memo: BuildMemo, planned: Sequence[PlannedMessage], rctx: Any,
                render: Callable[[PlannedMessage], Sequence[Any]]) -> list[bytes]:
    """Each planned message's render (``render(pm)``: its JSON items) ``serialised``, reusing
    the memo's: the previous request's prefix whole (as far as the plan keys agree), then per
    message by key."""
    keys = [pm.key for pm in planned]
    out: list[bytes] = []
    last = memo.last_render
    if last is not None and last[0] == rctx:
        n = shared_prefix(last[1], keys)
        if None in keys[:n]:  # an unkeyed message (and what follows) is never reused
            n = keys.index(None)
        out = last[2][:n]
    renders = memo.renders
    for pm in planned[len(out):]:
        if pm.key is None:
            out.append(serialised(render(pm)))
            continue
        k = (pm.key, rctx)
        r = renders.get(k)
        if r is None:
            r = renders[k] = serialised(render(pm))
        out.append(r)
    memo.last_render = (rctx, keys, out)
    return out
