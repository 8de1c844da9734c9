"""The interactive loop behind ``hermes chat``: prompt_toolkit on a terminal, plain lines otherwise."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import click

from ..config.urlpolicy import check_base_url
from ..core.errors import ConfigError, HermesError
from .model_notice import unprofiled
from .terminal import printable

if TYPE_CHECKING:
    from ..agent.loop import Agent
    from ..agent.runtime import Runtime
    from ..routing.resolve import Resolved
    from ..routing.routes import Route
    from .chat import _Printer

__all__ = ["run_repl"]

HELP = """/branch [TITLE]          fork this session here and continue on the branch
/compress                summarise older turns into a checkpoint (reasoning of kept turns stays)
/model [PROVIDER:]MODEL [BASE_URL]   switch model (and provider) for the next turns
/effort [LEVEL]          reasoning effort for the next turns: none, minimal, low, medium, high, xhigh, max
/key [save]              give this route's API key (asked without echo; kept for this session only,
                         or saved in keys.json as `hermes keys set` does with `save`)
/sessions                list recent sessions
/undo                    put back the files the last turn changed
/help                    this help
/quit                    leave (Ctrl-D too); Ctrl-C cancels a running turn"""


def _lines() -> Iterator[str]:
    """User inputs: prompt_toolkit with history and Alt-Enter for newlines, or stdin lines."""
    if not sys.stdin.isatty():
        for line in sys.stdin:
            yield line.rstrip("\n")
        return
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings

    from ..config.paths import user_dir

    kb = KeyBindings()

    @kb.add("escape", "enter")
    def _(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    class _History(FileHistory):
        """A ``/key`` line with text after it may hold a key pasted by mistake: never written to
        the history file (``/key`` itself refuses it)."""

        def store_string(self, string: str) -> None:
            if not _keyish_command(string):
                super().store_string(string)

    session: Any = PromptSession(history=_History(str(user_dir() / "repl_history")), key_bindings=kb)
    while True:
        try:
            yield session.prompt("you> ")
        except KeyboardInterrupt:
            continue
        except EOFError:
            return


def _keyish_command(line: str) -> bool:
    cmd, _, arg = line.strip().partition(" ")
    return cmd == "/key" and arg.strip() not in ("", "save")


def show_error(e: HermesError) -> None:
    """An error and its hint, as ``hermes chat -q`` prints them, but with the REPL's way to fix
    a missing or refused key (``/key``) where the CLI names ``--api-key``."""
    from ..config.keys import KeyMissing
    from ..core.errors import AuthFailed

    hint = e.hint
    if isinstance(e, KeyMissing):
        hint = (f"type /key to give one for this session (not echoed; `/key save` also saves it, as "
                f"`hermes keys set {e.route.key}` does), or set one of: {e.variables}")
    elif isinstance(e, AuthFailed):
        hint = f"{hint}; /key gives another key for this route"
    click.echo(printable(f"hermes: error: {e}"), err=True)
    if hint:
        click.echo(printable(f"hint: {hint}"), err=True)


def _ask_key(route: Route) -> str:
    """A key typed at a no-echo prompt (never piped input, never the command line), checked."""
    from ..config.keys import check_key
    from ..core.errors import register_secret
    from .keys_cmd import read_secret, takes_a_key

    route_key = route.key
    takes_a_key(route)

    if not sys.stdin.isatty():
        raise ConfigError("/key needs a terminal: a key is never read from piped REPL input",
                          hint=f"save one with `hermes keys set {route_key}`, or set the route's variable")
    value = read_secret(f"key for {route_key} (not echoed)")
    register_secret(value)
    check_key(route, "the key given", value)
    return value


def run_repl(runtime: Runtime, agent: Agent, sid: str, resolved: Resolved, printer: _Printer, *,
             pending: Sequence[str] = (), api_key: str | None = None, system: str | None = None) -> None:
    """The REPL; ``pending`` are input lines already read (the first piped line). ``api_key``
    (``--api-key``) belongs to the route the chat started on: after ``/model`` to another
    provider the key is that provider's own, as for a gateway turn. ``system`` (``--system``)
    goes with every turn; it is stored once, with the first turn whose prompt in force differs."""
    store = runtime.store
    given_keys: dict[str, str] = {resolved.route.key: api_key} if api_key else {}
    """Keys given for routes in this session (``--api-key`` for the first, ``/key``): memory only."""
    new = "" if runtime.stored(sid) else "new "  # a draft: stored with its first answer
    click.echo(f"{new}session {sid} · {resolved.route.key} · {resolved.model}  (/help for commands)", err=True)
    for line in itertools.chain(pending, _lines()):
        text = line.strip()
        if not text:
            continue
        if text.startswith("/"):
            cmd, _, arg = text.partition(" ")
            arg = arg.strip()
            try:
                if cmd in ("/quit", "/exit"):
                    return
                if cmd == "/help":
                    click.echo(HELP, err=True)
                elif cmd == "/branch":
                    sid = store.branch(sid, title=arg)
                    click.echo(f"on branch {sid} (reasoning and learned rejections carried over)", err=True)
                elif cmd == "/compress":
                    from .progress import working

                    with working(f"compressing: summarising older turns with {resolved.model}…"):
                        line = runtime.compress(sid, api_key=agent.api_key, toolbox=agent.toolbox,
                                                thinking=agent.settings.thinking, effort=agent.settings.effort)
                    click.echo(line, err=True)
                elif cmd == "/model":
                    spec, _, url = arg.partition(" ")
                    provider, _, model = spec.partition(":") if ":" in spec else ("", "", spec)
                    if not model:
                        click.echo(f"current: {resolved.route.key}:{resolved.model} at {resolved.base_url}", err=True)
                        continue
                    url = url.strip()
                    if url:  # checked where it enters; the message names it and never repeats it
                        check_base_url(url, "the /model base URL")
                    given = agent.api_key

                    def admit(new: Resolved) -> None:  # a route without a key is refused before the switch
                        nonlocal given
                        given = runtime.key(new, given_keys.get(new.route.key))

                    resolved = runtime.switch(store.get_session(sid), provider=provider or None, model=model,
                                              base_url=url or None, check=admit)
                    agent.api_key = given
                    click.echo(f"now {resolved.route.key} · {resolved.model}", err=True)
                    if notice := unprofiled(resolved.model, runtime.table.profiles):
                        click.echo(notice, err=True)
                elif cmd == "/key":
                    if arg not in ("", "save"):
                        click.echo("a key is not taken from the command line (it would be on screen): type /key "
                                   "alone and paste it at the prompt, which does not echo", err=True)
                        continue
                    value = _ask_key(resolved.route)
                    given_keys[resolved.route.key] = value
                    agent.api_key = runtime.key(resolved, value)
                    if arg == "save":
                        from ..config.keyfile import save_key

                        path = save_key(resolved.route.key, value)
                        click.echo(f"key for {resolved.route.key} saved in {path} (0600) and used now", err=True)
                    else:
                        click.echo(f"key for {resolved.route.key} kept for this session only "
                                   "(`/key save` keeps it for the next ones)", err=True)
                elif cmd == "/effort":
                    from dataclasses import replace

                    from ..config.settings import EFFORTS, effort_hint

                    if not arg:
                        click.echo(f"effort: {agent.settings.effort or 'the route default'} "
                                   f"(one of {', '.join(EFFORTS)})", err=True)
                        continue
                    if arg not in EFFORTS:
                        raise ConfigError(f"{arg!r} is not an effort: one of {', '.join(EFFORTS)}",
                                          hint=effort_hint(arg))
                    agent.settings = replace(agent.settings, effort=arg)
                    click.echo(f"effort {arg} for the next turns", err=True)
                elif cmd == "/undo":
                    from ..tools.edits import undo

                    done = undo(agent.toolbox.ctx.changes)
                    click.echo("\n".join(done) + "\n(the model is not told: say so if it matters)" if done
                               else "nothing to undo: the last turn changed no file", err=True)
                elif cmd == "/sessions":
                    for s in store.list_sessions(10, include_empty=False):
                        mark = "*" if s.id == sid else " "
                        click.echo(f"{mark} {s.id}  {s.provider}/{s.model}  {s.message_count} msgs  {s.title}", err=True)
                else:
                    click.echo(f"unknown command {cmd} (/help)", err=True)
            except HermesError as e:
                show_error(e)
            continue
        agent.toolbox.ctx.changes.clear()  # /undo is for this turn's changes
        try:
            if agent.api_key is None:  # started without a key, or none given yet: ask the lookup again
                agent.api_key = runtime.key(resolved, given_keys.get(resolved.route.key))
            result = runtime.turn(agent, sid, text, resolved, system=system)
            printer.end_turn(result.answer)
        except KeyboardInterrupt:
            printer.end_turn("")
            click.echo("(turn cancelled; the step in flight was not stored)", err=True)
        except HermesError as e:
            printer.end_turn("")
            show_error(e)
