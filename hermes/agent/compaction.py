"""Compaction that keeps reasoning: summarise old turns, keep recent ones byte-exact.

``compress(history, resolved, summarize=..., budget=...)`` returns the new *tail* of a session:

    [checkpoint (user, Compaction(summary, replaced=k)), *system messages, *retained messages]

The retained messages are the very ``Message`` objects from the history — every reasoning
text, signature, redacted blob, encrypted item and native record is untouched — covering the
last ``keep_last`` user turns, which always include the whole open tool loop. A cut is only
ever made right before a user message, so a tool call is never separated from its results.
System messages before the cut (the session's system prompt) are kept too, after the checkpoint.

This module is pure: histories in, a tail out. Running it — the summary request, storing the
checkpoint, the agent's preflight hook — is :mod:`hermes.agent.compactor`.

Storage (``hermes.agent.compactor.compress_session``): the tail is appended as **one** ``append_turn``; the store stays
append-only. ``history.window()`` starts at the newest message holding a ``Compaction``, so the
older rows (and older checkpoints) stay in ``state.db`` but are no longer sent. Retained
messages are therefore stored twice (blobs are shared by hash, so only part rows repeat);
that is the price of keeping ``window()`` a one-line rule. See ``docs/compaction.md``.

Sizes come from :mod:`hermes.builder.estimate`: the tail walk adds up the very per-message costs the
preflight estimate adds up, so the estimate predicted here is the next preflight's estimate.

Salvage: when the summary call fails, or the summarised result is not smaller or still over
budget, long old tool outputs are replaced by a stub (oldest first, the two most recent kept),
never touching reasoning; the outcome says so. When nothing shrinks enough a
``CompactionError`` is raised — never a loop.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..builder.estimate import REQUEST_BASE, basis_for, message_cost, plan_costs, tools_cost
from ..core.errors import HermesError
from ..core.history import closes_loop, window
from ..core.messages import Compaction, Message, Reasoning, Text, ToolCall, ToolResult
from ..replay import Learned, PlannedMessage, Settings, plan_replay
from ..routing.resolve import Resolved
from ..wire import ToolSpec

__all__ = [
    "KEEP_LAST",
    "SUMMARY_INSTRUCTION",
    "CompactionError",
    "Outcome",
    "Summarizer",
    "compact",
    "compress",
    "context_budget",
    "render_transcript",
]

Summarizer = Callable[[Sequence[Message]], str]
"""Old messages (possibly starting with the previous checkpoint) → summary text."""

KEEP_LAST = 2
"""User turns kept verbatim by default."""
TARGET_SHARE = 0.5
"""Keep fewer turns when the retained tail would exceed this share of the budget."""
STUB_OVER = 2_000
"""Tool outputs longer than this (chars) may be stubbed by salvage."""
KEEP_RECENT_OUTPUTS = 2
BUDGET_SHARE = 0.75
"""Share of a model's context window a request may use; the rest is the answer's."""

SUMMARY_INSTRUCTION = (
    "You are compacting a conversation between a user and an AI assistant so it can continue "
    "in a smaller context. Write a concise but complete summary of the transcript below: the "
    "user's goals and constraints, decisions made and why, facts learned from tool results "
    "(file names, values, errors), what was done, and what remains open. Keep exact identifiers. "
    "Write plain prose and bullet points; do not call tools."
)


class CompactionError(HermesError):
    """The history cannot be made to fit: nothing left to summarise or stub."""


def context_budget(resolved: Resolved, configured: int = 0) -> int:
    """Tokens a request to ``resolved`` may use: ``config.context_budget`` when set, else
    ``BUDGET_SHARE`` of the model's context window (its profile, ``models``)."""
    if configured and configured > 0:
        return configured
    return int(resolved.profile.context_window * BUDGET_SHARE)


# ----------------------------------------------------------------------------- the walk


@dataclass(frozen=True, slots=True)
class _Walk:
    """Per-message raw costs of the window, aligned with it, plus the fixed request cost."""

    start: int
    messages: Sequence[Message]
    costs: list[int]
    fixed: int
    factor: float

    def total(self, costs: Sequence[int]) -> int:
        return math.ceil((self.fixed + sum(costs)) * self.factor)


def _walk(history: Sequence[Message], resolved: Resolved, learned: Learned, settings: Settings,
          tools: Sequence[ToolSpec], factor: float) -> _Walk:
    start, msgs = window(history)
    plan = plan_replay(history, resolved, learned, settings)
    costs = plan_costs(plan)
    assert len(costs) == len(msgs), "the planner emits one planned message per windowed message"
    fixed = REQUEST_BASE + tools_cost(tools, basis_for(resolved))
    return _Walk(start, msgs, costs, fixed, factor)


def _is_checkpoint(m: Message) -> bool:
    return any(isinstance(p, Compaction) for p in m.parts)


def _turn_starts(msgs: Sequence[Message]) -> list[int]:
    """Where a cut may go: user messages that start an API turn. A user message after an
    interrupted loop's tool result shares that turn; cutting there would move the open loop's
    start, and with it which thinking the request must carry (and what it costs)."""
    return [i for i, m in enumerate(msgs) if closes_loop(msgs, i) and not _is_checkpoint(m)]


def _own_cost(m: Message, resolved: Resolved) -> int:
    """Cost of a user / tool message (they plan to themselves, whatever the route)."""
    return message_cost(PlannedMessage(0, m.role, m.parts), basis_for(resolved))


# ----------------------------------------------------------------------------- compress


@dataclass(frozen=True, slots=True)
class Outcome:
    messages: list[Message]
    """The new tail: the checkpoint, then the retained messages."""
    replaced: int
    """Messages the checkpoint stands for."""
    kept: int
    before: int
    after: int
    stubbed: int = 0
    notes: tuple[str, ...] = field(default=())

    @property
    def line(self) -> str:
        """One line for humans (``/compress``, ``hermes sessions compress``)."""
        head = (f"compacted {self.replaced} messages into a checkpoint" if self.replaced
                else "kept every message (no summary)")
        if self.stubbed:
            head += f"; stubbed {self.stubbed} old tool output{'s' if self.stubbed != 1 else ''}"
        tail = f"; kept {self.kept}; estimate {_k(self.before)} → {_k(self.after)} tokens"
        return head + tail + "".join(f" ({n})" for n in self.notes)


def _k(n: int) -> str:
    return f"{n / 1000:.0f}k" if n >= 10_000 else f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def compress(
    history: Sequence[Message],
    resolved: Resolved,
    *,
    summarize: Summarizer,
    budget: int,
    keep_last: int = KEEP_LAST,
    learned: Learned = Learned(),
    settings: Settings = Settings(),
    tools: Sequence[ToolSpec] = (),
    factor: float = 1.0,
) -> list[Message] | None:
    """The compacted tail, or None when the window is already just a checkpoint plus the
    retained turns and fits (so ``compress`` of its own output is None)."""
    out = compact(history, resolved, summarize=summarize, budget=budget, keep_last=keep_last,
                  learned=learned, settings=settings, tools=tools, factor=factor)
    return None if out is None else out.messages


def compact(
    history: Sequence[Message],
    resolved: Resolved,
    *,
    summarize: Summarizer,
    budget: int,
    keep_last: int = KEEP_LAST,
    learned: Learned = Learned(),
    settings: Settings = Settings(),
    tools: Sequence[ToolSpec] = (),
    factor: float = 1.0,
) -> Outcome | None:
    """:func:`compress` with the numbers: what was replaced, kept, stubbed, before → after.

    A salvage-only outcome (tool outputs stubbed, nothing summarised) can make a summary
    worthwhile on the next pass, so passes repeat on the result until one finds nothing to do
    (at most four): that is what makes ``compress`` idempotent on its own output."""
    kw = dict(summarize=summarize, budget=budget, keep_last=keep_last, learned=learned, settings=settings,
              tools=tools, factor=factor)
    out = _compact_once(history, resolved, **kw)  # type: ignore[arg-type]
    for _ in range(3):
        if out is None or out.replaced:
            break
        try:
            more = _compact_once(out.messages, resolved, **kw)  # type: ignore[arg-type]
        except CompactionError:  # this pass cannot shrink further: the previous outcome stands
            break
        if more is None or more.after >= out.after:
            break
        out = Outcome(more.messages, more.replaced, more.kept, out.before, more.after,
                      out.stubbed + more.stubbed, out.notes + more.notes)
    return out


def _compact_once(
    history: Sequence[Message],
    resolved: Resolved,
    *,
    summarize: Summarizer,
    budget: int,
    keep_last: int,
    learned: Learned,
    settings: Settings,
    tools: Sequence[ToolSpec],
    factor: float,
) -> Outcome | None:
    w = _walk(history, resolved, learned, settings, tools, factor)
    msgs, costs = w.messages, w.costs
    before = w.total(costs)
    lead = 1 if msgs and _is_checkpoint(msgs[0]) else 0
    turns = _turn_starts(msgs)
    cut = lead
    if turns:
        n = max(1, min(keep_last, len(turns)))
        while True:
            cut = turns[-n]
            if n == 1 or w.total(costs[cut:]) <= budget * TARGET_SHARE:
                break
            n -= 1
    old = list(msgs[:cut])
    retained = list(msgs[cut:])
    # the system prompt (``chat --system``) is an instruction, not conversation: it is kept as
    # it is, right after the checkpoint, so the new window still sends it
    system = [i for i in range(lead, cut) if msgs[i].role == "system"]
    if len(old) - len(system) <= lead:  # nothing but the previous checkpoint (and the prompt) before the cut
        if before <= budget:
            return None
        return _salvage(w, lead, budget, before, resolved, notes=("nothing old enough to summarise",))
    prior = msgs[0].parts[0] if lead and isinstance(msgs[0].parts[0], Compaction) else None
    replaced = len(old) - lead - len(system) + (prior.replaced if prior else 0)
    try:
        summary = summarize([m for m in old if m.role != "system"]).strip()
        if not summary:
            raise CompactionError("the summary was empty")
    except Exception as e:  # any failure of the summary call → salvage, and say why
        return _salvage(w, lead, budget, before, resolved,
                        notes=(f"summary call failed: {type(e).__name__}: {str(e)[:160]}",))
    cp = Message("user", (Compaction(summary, replaced),))
    tail = [cp, *(msgs[i] for i in system), *retained]
    tail_costs = [_own_cost(cp, resolved), *(costs[i] for i in system), *costs[cut:]]
    after = w.total(tail_costs)
    if after < before and after <= budget:
        return Outcome(tail, replaced, len(tail) - 1, before, after)
    if after >= before:
        return _salvage(w, lead, budget, before, resolved, notes=("the summary was not smaller",))
    # Smaller but still over budget: stub tool outputs inside the retained turns.
    return _stub(tail, tail_costs, w, budget, before, resolved,
                 replaced=replaced, notes=("retained turns still over budget",))


def _salvage(w: _Walk, lead: int, budget: int, before: int, resolved: Resolved,
             notes: tuple[str, ...]) -> Outcome | None:
    """Keep every message; stub long old tool outputs. A fresh checkpoint (carrying the
    previous one's summary) starts the new window so ``window()`` shadows the old rows."""
    msgs = w.messages
    prior = msgs[0].parts[0] if lead and isinstance(msgs[0].parts[0], Compaction) else None
    summary = prior.summary if prior else "(No summary: the conversation so far follows in full; " \
        "long old tool outputs were shortened to fit the context window.)"
    cp = Message("user", (Compaction(summary, prior.replaced if prior else 0),))
    tail = [cp, *msgs[lead:]]
    tail_costs = [_own_cost(cp, resolved), *w.costs[lead:]]
    return _stub(tail, tail_costs, w, budget, before, resolved, replaced=0, notes=notes, salvage=True)


def _stub(tail: list[Message], tail_costs: list[int], w: _Walk, budget: int, before: int, resolved: Resolved,
          *, replaced: int, notes: tuple[str, ...], salvage: bool = False) -> Outcome | None:
    results = [(i, j) for i, m in enumerate(tail) if m.role == "tool"
               for j, p in enumerate(m.parts) if isinstance(p, ToolResult)]
    recent = set(results[-KEEP_RECENT_OUTPUTS:]) if KEEP_RECENT_OUTPUTS else set()
    stubbed = 0
    after = w.total(tail_costs)
    for i, j in results:
        if after <= budget and after < before:
            break
        if (i, j) in recent:
            continue
        p = tail[i].parts[j]
        assert isinstance(p, ToolResult)
        if len(p.content) <= STUB_OVER:
            continue
        first = p.content.strip().splitlines()[0][:120] if p.content.strip() else ""
        stub = ToolResult(p.call_id, f"[tool output removed by compaction: {len(p.content):,} characters; "
                                     f"it began: {first!r}]", p.name, p.is_error)
        parts = tail[i].parts
        tail[i] = Message("tool", (*parts[:j], stub, *parts[j + 1:]))
        tail_costs[i] = _own_cost(tail[i], resolved)
        stubbed += 1
        after = w.total(tail_costs)
    if after <= budget and after < before:
        return Outcome(tail, replaced, len(tail) - 1, before, after, stubbed, notes)
    if salvage and stubbed == 0 and before <= budget and not any("failed" in n for n in notes):
        return None  # under budget, summary not smaller, nothing to stub: already compact
    why = "; ".join(notes)
    raise CompactionError(
        f"cannot compact below the context budget: {after:,} tokens needed, budget {budget:,} ({why}; "
        f"{stubbed} tool output{'s' if stubbed != 1 else ''} stubbed, reasoning of retained turns untouched)",
        hint="raise context_budget in config.toml, use a model with a larger context, or start a new session")


# ----------------------------------------------------------------------------- the model summary


def render_transcript(messages: Sequence[Message], *, max_tokens: int | None = None,
                      resolved: Resolved | None = None) -> str:
    """Old messages as plain text for the summary call (readable reasoning included, blobs
    never). Long items are clipped; over ``max_tokens`` the oldest text is dropped."""
    lines: list[str] = []

    def clip(s: str, n: int) -> str:
        return s if len(s) <= n else s[:n] + f" […{len(s) - n:,} more characters]"

    for m in messages:
        for p in m.parts:
            match p:
                case Compaction():
                    lines.append(f"EARLIER SUMMARY:\n{p.summary}")
                case Text() if p.text.strip():
                    lines.append(f"{m.role.upper()}: {clip(p.text, 8_000)}")
                case Reasoning() if p.text.strip():
                    lines.append(f"ASSISTANT THOUGHT: {clip(p.text, 2_000)}")
                case ToolCall():
                    lines.append(f"TOOL CALL {p.name}({clip(p.arguments, 1_000)})")
                case ToolResult():
                    tag = " (error)" if p.is_error else ""
                    lines.append(f"TOOL RESULT {p.name or p.call_id}{tag}: {clip(p.content, 4_000)}")
    text = "\n\n".join(lines)
    if max_tokens is not None and resolved is not None:
        from ..builder.estimate import count_text

        tokens = count_text(text, basis_for(resolved))
        if tokens > max_tokens:
            keep = int(len(text) * max_tokens / tokens * 0.9)
            text = "[earlier part of the transcript omitted]\n\n" + text[-keep:]
    return text
