"""Running compaction: the summary request, storing a checkpoint, and the agent's preflight hook.

:mod:`hermes.agent.compaction` decides *what* the new tail is (pure). This module does the side
effects around it, with everything it needs passed in a :class:`CompactContext` — the store,
the session, the tools and settings the next request will carry, the key and HTTP client for
the summary call, the build cache, and where to report progress. It never reaches into an
agent or reads config.toml: the budget arrives as a number (``hermes.agent.runtime.Runtime`` puts
the configured one in), so a turn reads no file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..builder import Builder
from ..builder.estimate import observe_usage, token_factor
from ..core.events import Compacted, Compacting, EventSink
from ..core.messages import Message
from ..replay import Learned, Settings
from ..routing.resolve import Resolved
from ..store import SessionStore
from ..transport import Transport
from ..wire import ToolSpec
from .compaction import (
    KEEP_LAST,
    SUMMARY_INSTRUCTION,
    Summarizer,
    compact,
    context_budget,
    render_transcript,
)
from .provider import Exchange

__all__ = ["AutoCompactor", "CompactContext", "compress_session", "model_summarizer"]


def _ignore(_event: object) -> None:
    return None


@dataclass(frozen=True, slots=True)
class CompactContext:
    """What compaction may use of the turn it runs inside (built by the agent per request)."""

    store: SessionStore
    session_id: str
    tools: Sequence[ToolSpec] = ()
    """The tool specs the next request lists (they count against the budget)."""
    settings: Settings = field(default_factory=Settings)
    api_key: str | None = None
    transport: Transport | None = None
    builder: Builder = field(default_factory=Builder)
    """The turn's builder: the preflight estimate is the plan the request then reuses."""
    emit: EventSink = _ignore


def model_summarizer(
    resolved: Resolved,
    *,
    api_key: str | None = None,
    transport: Transport | None = None,
    budget: int | None = None,
) -> Summarizer:
    """The real summariser: one request to the session's route, thinking off, no tools."""
    from .provider import complete

    def summarize(old: Sequence[Message]) -> str:
        limit = int((budget or context_budget(resolved)) * 0.8)
        transcript = render_transcript(old, max_tokens=limit, resolved=resolved)
        request = [Message.system(SUMMARY_INSTRUCTION),
                   Message.user(f"Transcript to summarise:\n\n{transcript}\n\nWrite the summary now.")]
        ex = complete(resolved, request, tools=(), settings=Settings(thinking=False), stream=False,
                      api_key=api_key, transport=transport)
        return ex.response.message.text

    return summarize


def compress_session(
    store: SessionStore,
    session_id: str,
    resolved: Resolved,
    *,
    api_key: str | None = None,
    budget: int | None = None,
    keep_last: int = KEEP_LAST,
    summarize: Summarizer | None = None,
    tools: Sequence[ToolSpec] = (),
    settings: Settings = Settings(),
    transport: Transport | None = None,
) -> str:
    """Compact a stored session now (``/compress``, ``hermes sessions compress``, the gateway's
    ``/compress``); one line back. ``budget`` None: the route's default.

    The checkpoint and the retained messages are appended as one turn; nothing is deleted.
    """
    from ..rejections import learned_for

    budget = budget or context_budget(resolved)
    history = store.load(session_id)
    out = compact(history, resolved, summarize=summarize or model_summarizer(
                      resolved, api_key=api_key, transport=transport, budget=budget),
                  budget=budget, keep_last=keep_last, learned=learned_for(store, session_id, resolved),
                  settings=settings, tools=tools, factor=token_factor(store, resolved))
    if out is None:
        return "nothing to compact: the session is already a checkpoint plus its most recent turns"
    store.append_turn(session_id, out.messages)
    return out.line


@dataclass
class AutoCompactor:
    """The agent's preflight hook: compact before a request that would not fit, and learn the
    token factor from each response's usage.

    ``Agent(..., compactor=AutoCompactor())``. After a compaction the predicted estimate is
    under budget and equals the next preflight's (same per-message costs), so it never
    triggers twice in a row for the same history.
    """

    budget: int | None = None
    """Tokens; None → the route's default (``context_budget``)."""
    keep_last: int = KEEP_LAST
    summarize: Summarizer | None = None
    history: list[str] = field(default_factory=list)
    """One line per compaction done (for the REPL / logs)."""

    def budget_for(self, resolved: Resolved) -> int:
        return context_budget(resolved, self.budget or 0)

    def before_request(self, ctx: CompactContext, resolved: Resolved, history: list[Message],
                       pending: list[Message], *, learned: Learned | None = None) -> list[Message]:
        """The stored history to continue from (with a new checkpoint turn when one was needed).
        ``learned``: the lessons the request will be planned with (read here when not given)."""
        from ..rejections import learned_for

        budget = self.budget_for(resolved)
        if learned is None:
            learned = learned_for(ctx.store, ctx.session_id, resolved)
        factor = token_factor(ctx.store, resolved)
        full = [*history, *pending]
        est = ctx.builder.estimate(full, resolved, learned=learned, settings=ctx.settings, tools=ctx.tools,
                                   factor=factor)
        if est <= budget:
            return history
        ctx.emit(Compacting(est, budget))
        summarize = self.summarize or model_summarizer(resolved, api_key=ctx.api_key, transport=ctx.transport,
                                                       budget=budget)
        out = compact(full, resolved, summarize=summarize, budget=budget, keep_last=self.keep_last,
                      learned=learned, settings=ctx.settings, tools=ctx.tools, factor=factor)
        if out is None:  # pragma: no cover - over budget never returns None
            return history
        stored = out.messages[: len(out.messages) - len(pending)]
        assert all(a is b for a, b in zip(out.messages[len(stored):], pending, strict=True)), \
            "the pending user message is the last retained turn"
        ctx.store.append_turn(ctx.session_id, stored)
        self.history.append(out.line)
        ctx.emit(Compacted(out.line))
        return [*history, *stored]

    def after_request(self, ctx: CompactContext, resolved: Resolved, exchange: Exchange) -> None:
        """Usage feedback: reported prompt tokens correct the (provider, host, model) factor."""
        raw = ctx.builder.raw_tokens(exchange.plan, tools=ctx.tools)
        observe_usage(ctx.store, resolved, raw, exchange.response.usage)
