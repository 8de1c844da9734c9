"""The agent loop: a user message, then model → tools → model … until an answer or a step limit.

Each step — the model's response plus the results of the tools it called (and, on the first
step, the user message) — is committed to state.db in one transaction, so every step is
persisted and a crash leaves whole steps only. Every request is rebuilt from the stored
history, which is what makes ``--resume``, gateway turns and branches replay exactly like a
live session. A request rejected for a replayed field is retried once without it (see
``rejections``); nothing else is retried here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..builder import Builder
from ..core.errors import HermesError, ProviderHTTPError
from ..core.events import (
    AgentEvent,
    EventSink,
    LessonLearned,
    Requested,
    Streamed,
    ToolFinished,
    Waiting,
)
from ..core.messages import Message
from ..core.stream import Delta
from ..replay import Settings, plan_replay
from ..routing.resolve import Resolved
from ..store.requestlog import log_event, plan_summary
from ..tools.builtins import Toolbox
from ..transport import Transport
from ..transport.http import HttpTransport
from .provider import Exchange

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..rejections.values import ValueRule
    from ..store import SessionStore
    from .compactor import AutoCompactor, CompactContext

__all__ = ["Agent", "TurnResult"]


@dataclass(slots=True)
class TurnResult:
    session_id: str
    answer: str
    steps: int
    stopped: str
    """``answer`` or ``step_limit``."""
    messages: list[Message] = field(default_factory=list)
    learned: list[str] = field(default_factory=list)
    usage: list[dict[str, Any]] = field(default_factory=list)
    """Each model call's usage as the provider reported it (the gateway sums them)."""
    history: list[Message] = field(default_factory=list)
    """The session's whole stored history after the turn (what ``hermes.builder.hot`` keeps)."""


@dataclass
class Agent:
    """Runs user turns against one session in a store.

    Built by ``hermes.agent.runtime.Runtime.agent`` for the CLI, the REPL and the gateway alike;
    constructing one directly is for tests and benchmarks."""

    store: SessionStore
    toolbox: Toolbox
    settings: Settings = field(default_factory=Settings)
    stream: bool = True
    api_key: str | None = None
    max_steps: int = 12
    transport: Transport | None = None
    on_event: EventSink | None = None
    builder: Builder = field(default_factory=Builder)
    """The conversation's request builder: what earlier requests built is reused by the next."""
    compactor: AutoCompactor | None = None
    """Optional preflight hook (``hermes.agent.compactor.AutoCompactor``): ``before_request`` may
    append a compaction checkpoint when the next request would not fit its context budget;
    ``after_request`` learns the token factor from the reported usage. It sees the turn only
    through a ``CompactContext``."""

    def _emit(self, event: AgentEvent) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def _compact_context(self, session_id: str) -> CompactContext:
        from .compactor import CompactContext

        return CompactContext(self.store, session_id, tools=self.toolbox.specs, settings=self.settings,
                              api_key=self.api_key, transport=self.transport, builder=self.builder, emit=self._emit)

    def run_turn(self, session_id: str, user_text: str, resolved: Resolved, *,
                 history: list[Message] | None = None, system: str | None = None) -> TurnResult:
        """One user turn. ``history``: the stored history when the caller already holds it
        (``hermes.builder.hot``); else it is loaded. ``system``: the session's system prompt
        from here on — a system message stored with the turn's first step, unless the prompt
        in force already reads the same (so passing it on every turn stores it once)."""
        from ..core.history import system_prompt
        from ..rejections import RetryState, learned_for, recover, values_for

        if history is None:
            history = self.store.load(session_id)
        if self.transport is None:  # one HTTP client for the whole conversation (TLS setup is slow)
            self.transport = HttpTransport()
        ctx = None if self.compactor is None else self._compact_context(session_id)
        pending: list[Message] = [Message.user(user_text)]
        if system is not None and system != system_prompt(history):
            pending.insert(0, Message.system(system))
        result = TurnResult(session_id, "", 0, "step_limit")
        for step in range(self.max_steps):
            # what the route taught, read once a step (another process may have learned since
            # the last) and again after a refusal taught something: the restore, the preflight
            # estimate and the request all plan with the same lessons
            learned = learned_for(self.store, session_id, resolved)
            values = values_for(self.store, resolved)
            self.builder.restore(self.store, session_id, resolved, learned)  # kept results, once per context
            if self.compactor is not None and ctx is not None:
                history = self.compactor.before_request(ctx, resolved, history, pending, learned=learned)
            retry = RetryState()
            while True:
                try:
                    ex = self._request(session_id, resolved, [*history, *pending], learned, step, values)
                    break
                except ProviderHTTPError as err:
                    note = recover(self.store, session_id, resolved, err, retry)
                    if note is None:
                        raise
                    result.learned.append(note)
                    self._emit(LessonLearned(note))
                    learned = learned_for(self.store, session_id, resolved)
                    values = values_for(self.store, resolved)
            if self.compactor is not None and ctx is not None:
                self.compactor.after_request(ctx, resolved, ex)
            assistant = ex.response.message
            result.usage.append(dict(ex.response.usage))
            results = [self.toolbox.execute(call) for call in assistant.tool_calls]
            for r in results:
                self._emit(ToolFinished(r))
            step_msgs = [*pending, assistant]
            if results:
                step_msgs.append(Message("tool", tuple(results)))
            self.store.append_turn(session_id, step_msgs, route_key=resolved.key, usage=dict(ex.response.usage))
            history = [*history, *step_msgs]
            result.messages.extend(step_msgs)
            pending = []
            result.steps = step + 1
            if not assistant.tool_calls:
                result.answer, result.stopped = assistant.text, "answer"
                break
        result.history = history
        if result.steps:  # for the next process's build
            self.builder.keep(self.store, session_id, resolved, learned, history)
        return result

    def _request(self, session_id: str, resolved: Resolved, history: list[Message], learned: Any,
                 step: int, values: Sequence[ValueRule] = ()) -> Exchange:
        started = time.monotonic()
        if self.transport is None:  # one HTTP client for the whole conversation (TLS setup is slow)
            self.transport = HttpTransport()

        def on_delta(d: Delta) -> None:
            self._emit(Streamed(d))

        self._emit(Waiting(resolved.route.key, resolved.model, step))

        try:
            ex = self.builder.complete(resolved, history, tools=self.toolbox.specs, settings=self.settings,
                                       learned=learned, stream=self.stream, api_key=self.api_key,
                                       transport=self.transport, on_delta=on_delta, values=values)
        except ProviderHTTPError as e:
            plan = plan_replay(history, resolved, learned, self.settings)  # what it carried, for the request matrix
            carried = {k: v for k, v in plan_summary(plan).items() if k in ("window", "turns", "kinds", "reasons")}
            log_event("request_failed", session=session_id, route=resolved.route.key, host=resolved.host,
                      model=resolved.model, status=e.status, error=str(e)[:300], step=step + 1,
                      ms=round((time.monotonic() - started) * 1000, 1), **carried)
            raise
        except HermesError as e:  # never answered: unreachable host, a cut stream, no credentials
            log_event("request_failed", session=session_id, route=resolved.route.key, host=resolved.host,
                      model=resolved.model, status=None, error=str(e)[:300], kind=type(e).__name__, step=step + 1,
                      ms=round((time.monotonic() - started) * 1000, 1))
            raise
        summary = self.builder.summary(ex.plan)
        log_event("request", session=session_id, step=step + 1, stream=self.stream,
                  ms=round((time.monotonic() - started) * 1000, 1), finish=ex.response.finish_reason,
                  usage=dict(ex.response.usage), **summary)
        self._emit(Requested(summary))
        return ex
