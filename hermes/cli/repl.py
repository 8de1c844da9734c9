"""The interactive loop behind ``hermes chat``: prompt_toolkit on a terminal, plain lines otherwise."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import click

from ..errors import HermesError
from ..lease import Fenced, session_lease
from ..terminal import printable
from ._common import leased_turn

__all__ = ["run_repl"]

HELP = """/branch [TITLE]          fork this session here and continue on the branch
/compress                summarise older turns into a checkpoint (reasoning of kept turns stays)
/model [PROVIDER:]MODEL [BASE_URL]   switch model (and provider) for the next turns
/sessions                list recent sessions
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


def run_repl(store: Any, agent: Any, sid: str, resolved: Any, config: Any, printer: Callable[..., Any], *,
             pending: Sequence[str] = ()) -> None:
    """The REPL; ``pending`` are input lines already read (the first piped line)."""
    from ..runtime import choose_route

    click.echo(f"session {sid} · {resolved.route.key} · {resolved.model}  (/help for commands)", err=True)
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
                    from ..compaction import compress_session
                    from .progress import working

                    with session_lease(store, sid) as lease, \
                            working(f"compressing: summarising older turns with {resolved.model}…"):
                        line = compress_session(Fenced(store, lease), sid, resolved, api_key=agent.api_key)
                    click.echo(line, err=True)
                elif cmd == "/model":
                    spec, _, url = arg.partition(" ")
                    provider, _, model = spec.partition(":") if ":" in spec else ("", "", spec)
                    if not model:
                        click.echo(f"current: {resolved.route.key}:{resolved.model} at {resolved.base_url}", err=True)
                        continue
                    same = not provider or provider == resolved.route.key
                    resolved = choose_route(config, provider=provider or resolved.route.key, model=model,
                                            base_url=url.strip() or (resolved.base_url if same else None))
                    explicit = resolved.base_url if resolved.base_url != resolved.route.base_url else ""
                    store.update_session(sid, provider=resolved.route.key, model=resolved.model, base_url=explicit)
                    click.echo(f"now {resolved.route.key} · {resolved.model}", err=True)
                elif cmd == "/sessions":
                    for s in store.list_sessions(10):
                        mark = "*" if s.id == sid else " "
                        click.echo(f"{mark} {s.id}  {s.provider}/{s.model}  {s.message_count} msgs  {s.title}", err=True)
                else:
                    click.echo(f"unknown command {cmd} (/help)", err=True)
            except HermesError as e:
                click.echo(printable(f"hermes: error: {e}"), err=True)
            continue
        try:
            result = leased_turn(agent, sid, text, resolved)
            printer.end_turn(result.answer)  # type: ignore[attr-defined]
        except KeyboardInterrupt:
            printer.end_turn("")  # type: ignore[attr-defined]
            click.echo("(turn cancelled; the step in flight was not stored)", err=True)
        except HermesError as e:
            printer.end_turn("")  # type: ignore[attr-defined]
            click.echo(printable(f"hermes: error: {e}"), err=True)
            if e.hint:
                click.echo(printable(f"hint: {e.hint}"), err=True)
