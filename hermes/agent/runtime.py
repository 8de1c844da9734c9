"""One runtime for every entry point: ``hermes chat``, its REPL and ``hermes gateway``.

A :class:`Runtime` is built once per process from (config, route table, store) and does the
four things every front end needs, the same way for each:

* **open** a session — resumed, the latest, or new (a draft, stored with its first step) — and
  choose its route;
* **switch** a session's route (REPL ``/model``, a gateway turn naming provider/model);
* **compress** a stored session under its lease;
* **build** an agent — settings, stream, step limit, compaction budget — and run a turn under
  the session's fenced lease, so a CLI turn and a gateway turn on one session never interleave.

Route precedence for provider / model / base URL: explicit arguments, then a config alias
named by the model, then what the session last used, then config.toml defaults. A session
remembers the route it last talked to, so ``--resume`` needs no flags; new ones switch the
session's provider (its stored reasoning keeps its origin, so nothing foreign is replayed).

config.toml and routes.toml are read when the runtime is built and never again in that
process: no turn, switch or compaction reads a file. Keys are looked up per route
(:meth:`Runtime.key`), never carried from one provider to another.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..config.settings import Config
from ..core.errors import RouteError, StoreError
from ..routing.resolve import Resolved, Table, load_table, resolve

if TYPE_CHECKING:
    from ..builder import Builder
    from ..core.events import EventSink
    from ..core.messages import Message
    from ..replay import Settings
    from ..store import SessionInfo, SessionStore
    from ..store.draft import Drafting
    from ..store.lease import Lease
    from ..tools.builtins import Toolbox
    from ..transport import Transport
    from .compactor import AutoCompactor
    from .loop import Agent, TurnResult

__all__ = ["Runtime", "choose_route", "explicit_url"]


def choose_route(config: Config, table: Table, *, provider: str | None = None, model: str | None = None,
                 base_url: str | None = None, session: SessionInfo | None = None) -> Resolved:
    """Resolve the route for a request from flags, aliases, the session and config (pure)."""
    if model and model in config.aliases:
        alias = config.aliases[model]
        provider, model, base_url = provider or alias.provider, alias.model, base_url or alias.base_url
    if session is not None:
        same_provider = provider is None or provider == session.provider
        provider = provider or session.provider or None
        model = model or session.model or None
        if same_provider:
            base_url = base_url or session.base_url or None
    provider = provider or (None if base_url else config.provider)
    model = model or config.model
    base_url = base_url or (config.base_url if provider in (None, config.provider) else None)
    if not model:
        raise RouteError("no model given", hint="pass --model, or set model = \"...\" in config.toml")
    return resolve(provider, base_url, model, table=table)


def explicit_url(resolved: Resolved, base_url: str | None = None) -> str:
    """The base URL a session stores: the one given, else the resolved one when it is not the
    route's default (``""`` means "the route's default", so a table change follows)."""
    return base_url or (resolved.base_url if resolved.base_url != resolved.route.base_url else "")


@dataclass
class Runtime:
    """Opening, switching, compressing and building agents over one store (see module doc)."""

    config: Config
    table: Table
    store: SessionStore
    transport: Transport | None = None
    """The HTTP client agents and summary calls share (None: each agent makes its own)."""
    emulate: str | None = None
    """The root URL of a running ``hermes emulate`` every route is sent to (``hermes.routing.emulated``)."""
    _routes: dict[tuple[str | None, ...], Resolved] = field(default_factory=dict, init=False, repr=False)
    """Routes chosen so far: ``choose_route`` is a pure function of its arguments once config and
    the table are fixed (they are, for a runtime's life), and resolving explains itself at some
    cost (look-alike rows, URL checks), which a gateway would pay twice a turn."""
    _drafts: Drafting | None = field(default=None, init=False, repr=False)
    """The view holding the session :meth:`draft` opened, if any."""

    @classmethod
    def load(cls, *, config: Config | None = None, store: SessionStore | None = None,
             transport: Transport | None = None) -> Runtime:
        """Read config.toml and routes.toml (once) and open the configured store unless given."""
        from ..config.paths import routes_path
        from ..config.settings import load_config

        config = config if config is not None else load_config()
        table = load_table(routes_path())
        if store is None:
            from ..store import open_store

            store = open_store(config)
        from ..routing.emulated import emulator_root

        return cls(config, table, store, transport, emulator_root())

    # ------------------------------------------------------------------ routes and sessions

    def route(self, *, provider: str | None = None, model: str | None = None, base_url: str | None = None,
              session: SessionInfo | None = None) -> Resolved:
        at = (provider, model, base_url) if session is None else (
            provider, model, base_url, session.provider, session.model, session.base_url)
        found = self._routes.get(at)
        if found is None:
            found = choose_route(self.config, self.table, provider=provider, model=model, base_url=base_url,
                                 session=session)
            if self.emulate:
                from ..routing.emulated import emulated

                found = emulated(found, self.emulate)
            if len(self._routes) >= 4096:  # client-named URLs are unbounded: keep the memo bounded
                self._routes.clear()
            self._routes[at] = found
        return found

    def key(self, resolved: Resolved, given: str | None = None) -> str | None:
        """The key for ``resolved``'s route: ``given``, else its variable, else HERMES_API_KEY;
        when emulating, ``given`` or the emulator's key (no real key goes to an emulator)."""
        from ..config.keys import find_key

        if self.emulate:
            from ..routing.emulated import EMULATOR_KEY

            if resolved.route.auth == "aws":  # Bedrock: a Bedrock API key, which the emulator takes
                os.environ.setdefault("AWS_BEARER_TOKEN_BEDROCK", EMULATOR_KEY)
                return None
            return find_key(resolved.route, given or EMULATOR_KEY) if resolved.route.auth != "none" else given
        return find_key(resolved.route, given)

    def stored_url(self, resolved: Resolved, base_url: str | None = None) -> str:
        """The base URL a session stores for ``resolved``: never the emulator's."""
        return (base_url or "") if self.emulate else explicit_url(resolved, base_url)

    def create(self, resolved: Resolved, *, base_url: str | None = None, title: str = "") -> str:
        """A new session on ``resolved``."""
        return self.store.create_session(provider=resolved.route.key, model=resolved.model,
                                         base_url=self.stored_url(resolved, base_url), title=title)

    def open(self, *, resume: str | None = None, cont: bool = False, provider: str | None = None,
             model: str | None = None, base_url: str | None = None, title: str = "") -> tuple[str, Resolved]:
        """(session id, route) for a chat: resumed, the latest, or a new session."""
        info = None
        if resume:
            info = self.store.get_session(resume)
        elif cont:
            info = self.store.latest_session()
            if info is None:
                raise StoreError("no session to continue", hint="start one with `hermes chat`")
        if info is None:
            resolved = self.route(provider=provider, model=model, base_url=base_url)
            return self.draft(resolved, base_url=base_url, title=title), resolved
        return info.id, self.switch(info, provider=provider, model=model, base_url=base_url)

    def draft(self, resolved: Resolved, *, base_url: str | None = None, title: str = "") -> str:
        """A new session on ``resolved`` that is stored with its first step (``hermes.store.draft``):
        from here on this runtime's store is the view that holds it."""
        from ..store.draft import Drafting, new_session

        new = new_session(provider=resolved.route.key, model=resolved.model,
                          base_url=self.stored_url(resolved, base_url), title=title)
        self._drafts = Drafting(self.store, new)
        self.store = self._drafts
        return new.id

    def stored(self, session_id: str) -> bool:
        """False while ``session_id`` is a draft none of whose steps has committed yet."""
        return self._drafts is None or not self._drafts.pending(session_id)

    def switch(self, info: SessionInfo, *, provider: str | None = None, model: str | None = None,
               base_url: str | None = None, check: Callable[[Resolved], None] | None = None) -> Resolved:
        """The route of ``info``'s next turn; when flags name a different one, it is stored as the
        session's route. Without flags the session keeps the route it has. ``check`` may refuse
        the route (no key, a base URL the caller may not use) before anything is written."""
        resolved = self.route(provider=provider, model=model, base_url=base_url, session=info)
        if check is not None:
            check(resolved)
        url = self.stored_url(resolved, base_url)
        if (provider or model or base_url) and (info.provider, info.model, info.base_url) != (
                resolved.route.key, resolved.model, url):
            self.store.update_session(info.id, provider=resolved.route.key, model=resolved.model, base_url=url)
        return resolved

    # ------------------------------------------------------------------ agents and turns

    def settings(self, *, thinking: bool = True, effort: str | None = None) -> Settings:
        """Replay settings: thinking unless config or the caller turns it off; the caller's effort
        over config's."""
        from ..replay import Settings

        return Settings(thinking=thinking and self.config.thinking, effort=effort or self.config.effort)

    def compactor(self) -> AutoCompactor:
        from .compactor import AutoCompactor

        return AutoCompactor(budget=self.config.context_budget or None)

    def agent(self, toolbox: Toolbox, *, api_key: str | None, on_event: EventSink | None = None,
              thinking: bool = True, effort: str | None = None, stream: bool | None = None,
              max_steps: int | None = None, builder: Builder | None = None) -> Agent:
        """An agent over this runtime's store with config's defaults under the caller's choices."""
        from .loop import Agent

        agent = Agent(self.store, toolbox, self.settings(thinking=thinking, effort=effort),
                      stream=self.config.stream if stream is None else stream, api_key=api_key,
                      max_steps=max_steps or self.config.max_steps, transport=self.transport,
                      on_event=on_event, compactor=self.compactor())
        if builder is not None:
            agent.builder = builder
        return agent

    @contextmanager
    def lease(self, session_id: str) -> Iterator[Lease]:
        """Hold ``session_id``'s fenced lease (the one gateway workers take) for the block: a CLI
        turn waits up to 10 s for a running turn, and steps committed through :meth:`fenced`
        are refused once the lease is lost (``LeaseBusy`` if it stays busy)."""
        from ..store.lease import hold_lease

        with hold_lease(self.store, session_id, ttl_s=30.0, wait_s=10.0, kind="cli") as lease:
            yield lease

    def fenced(self, lease: Lease) -> SessionStore:
        """The store as seen under ``lease``: its steps are refused once the lease is lost."""
        from ..store.lease import Fenced

        return Fenced(self.store, lease)

    def turn(self, agent: Agent, session_id: str, text: str, resolved: Resolved, *, lease: Lease | None = None,
             history: list[Message] | None = None, system: str | None = None) -> TurnResult:
        """One user turn under the session's lease: ``lease`` when the caller holds it (the
        gateway's async lock), else taken here for the turn (the CLI). ``system``: see
        ``Agent.run_turn``."""
        if lease is None:
            with self.lease(session_id) as held:
                return self.turn(agent, session_id, text, resolved, lease=held, history=history, system=system)
        own = agent.store
        agent.store = self.fenced(lease)
        try:
            return agent.run_turn(session_id, text, resolved, history=history, system=system)
        finally:
            agent.store = own

    def compress(self, session_id: str, *, lease: Lease | None = None, api_key: str | None = None,
                 keep_last: int | None = None, budget: int | None = None, toolbox: Toolbox | None = None,
                 thinking: bool = True, effort: str | None = None) -> str:
        """Compact the stored session now, on the route it stores, under its lease; one line back.

        The estimate counts the tools and settings its turns send, and the budget is config's
        unless given, so ``/compress``, ``hermes sessions compress`` and the gateway's endpoint
        cut a session at the same place."""
        if lease is None:
            with self.lease(session_id) as held:
                return self.compress(session_id, lease=held, api_key=api_key, keep_last=keep_last, budget=budget,
                                     toolbox=toolbox, thinking=thinking, effort=effort)
        from .compaction import KEEP_LAST
        from .compactor import compress_session

        resolved = self.route(session=self.store.get_session(session_id))
        return compress_session(self.fenced(lease), session_id, resolved, api_key=self.key(resolved, api_key),
                                budget=budget or self.config.context_budget or None,
                                keep_last=KEEP_LAST if keep_last is None else keep_last,
                                tools=toolbox.specs if toolbox is not None else (),
                                settings=self.settings(thinking=thinking, effort=effort), transport=self.transport)
