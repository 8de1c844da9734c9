"""The interactive loop behind ``hermes chat``: prompt_toolkit on a terminal, plain lines otherwise."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import click

from ..errors import HermesError
from ..terminal import printable
from ..urlpolicy import check_base_url
from .model_notice import unprofiled

if TYPE_CHECKING:
    from ..agent import Agent
    from ..resolve import Resolved
    from ..runtime import Runtime
    from .chat import _Printer

__all__ = ["run_repl"]

HELP = """/branch [TITLE]          fork this session here and continue on the branch
/compress                summarise older turns into a checkpoint (reasoning of kept turns stays)
/model [PROVIDER:]MODEL [BASE_URL]   switch model (and provider) for the next turns
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

    from ..paths import user_dir

    kb = KeyBindings()

    @kb.add("escape", "enter")
    def _(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    session: Any = PromptSession(history=FileHistory(str(user_dir() / "repl_history")), key_bindings=kb)
    while True:
        try:
            yield session.prompt("you> ")
        except KeyboardInterrupt:
            continue
        except EOFError:
            return


def run_repl(runtime: Runtime, agent: Agent, sid: str, resolved: Resolved, printer: _Printer, *,
             pending: Sequence[str] = (), api_key: str | None = None) -> None:
    """The REPL; ``pending`` are input lines already read (the first piped line). ``api_key``
    (``--api-key``) belongs to the route the chat started on: after ``/model`` to another
    provider the key is that provider's own, as for a gateway turn."""
    store = runtime.store
    key_route = resolved.route.key
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
                    given = api_key

                    def admit(new: Resolved) -> None:  # a route without a key is refused before the switch
                        nonlocal given
                        given = runtime.key(new, api_key if new.route.key == key_route else None)

                    resolved = runtime.switch(store.get_session(sid), provider=provider or None, model=model,
                                              base_url=url or None, check=admit)
                    agent.api_key = given
                    click.echo(f"now {resolved.route.key} · {resolved.model}", err=True)
                    if notice := unprofiled(resolved.model, runtime.table.profiles):
                        click.echo(notice, err=True)
                elif cmd == "/undo":
                    from ..edits import undo

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
                click.echo(printable(f"hermes: error: {e}"), err=True)
                if e.hint:
                    click.echo(printable(f"hint: {e.hint}"), err=True)
            continue
        agent.toolbox.ctx.changes.clear()  # /undo is for this turn's changes
        try:
            result = runtime.turn(agent, sid, text, resolved)
            printer.end_turn(result.answer)
        except KeyboardInterrupt:
            printer.end_turn("")
            click.echo("(turn cancelled; the step in flight was not stored)", err=True)
        except HermesError as e:
            printer.end_turn("")
            click.echo(printable(f"hermes: error: {e}"), err=True)
            if e.hint:
                click.echo(printable(f"hint: {e.hint}"), err=True)
