"""``hermes chat``: one-shot (``-q``) or an interactive REPL over a stored session."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .progress import Activity
from .url_option import BASE_URL

if TYPE_CHECKING:
    from ..core.events import AgentEvent

__all__ = ["chat"]


class _Printer:
    """Streams a turn to the terminal: reasoning dimmed on stderr, answer text on stdout."""

    def __init__(self, *, quiet: bool, show_reasoning: bool) -> None:
        self.quiet = quiet
        self.show_reasoning = show_reasoning
        self.in_reasoning = False
        self.wrote_text = False
        self.status = Activity()  # while a request waits for its first byte, or compaction or MCP runs

    def __call__(self, event: AgentEvent) -> None:
        from ..core.events import (
            Compacted,
            Compacting,
            LessonLearned,
            McpFailed,
            McpStarting,
            Streamed,
            ToolFinished,
            Waiting,
        )
        from ..core.stream import ReasoningDelta, TextDelta, ToolCallDelta
        from .terminal import printable

        self.status.stop()
        if isinstance(event, Waiting):
            if self.wrote_text and not self.quiet:  # a new step: its text starts on a line of its own
                click.echo("")
                self.wrote_text = False
            if not self.quiet:
                self.status.start(f"waiting for {event.route} · {event.model}…")
            return
        if isinstance(event, Compacting):  # a summary request runs before the turn's next request
            if not self.quiet:
                self.status.start(f"compacting: ~{event.estimate:,} tokens > budget {event.budget:,}; "
                                    "summarising older turns…")
            return
        if isinstance(event, McpStarting):
            if not self.quiet:
                self.status.start(str(event))
            return
        note = isinstance(event, LessonLearned | Compacted | McpFailed)
        if self.quiet:
            if note:
                click.echo(printable(f"hermes: {event}"), err=True)
            return
        if note:
            click.secho(printable(f"hermes: {event}"), err=True, fg="yellow")
        elif isinstance(event, Streamed):
            d = event.delta
            if isinstance(d, ReasoningDelta) and d.text and self.show_reasoning:
                if not self.in_reasoning:
                    click.secho("thinking: ", err=True, dim=True, nl=False)
                    self.in_reasoning = True
                click.secho(printable(d.text), err=True, dim=True, nl=False)
            elif isinstance(d, TextDelta) and d.text:
                self._end_reasoning()
                click.echo(printable(d.text), nl=False)
                self.wrote_text = True
            elif isinstance(d, ToolCallDelta) and d.name:
                self._end_reasoning()
                if self.wrote_text:  # "Let me look." ends its line before the call is shown
                    click.echo("")
                    self.wrote_text = False
                click.secho(f"→ {printable(d.name)}", err=True, fg="cyan")
        elif isinstance(event, ToolFinished):
            import shutil

            from .terminal import preview

            r = event.result
            status = "error" if r.is_error else f"{len(r.content):,} chars"
            click.secho(f"  ← {printable(r.name or r.call_id)}: {status}", err=True, fg="cyan")
            width = shutil.get_terminal_size((100, 24)).columns - 4
            for line in preview(r.content, width=max(width, 20)):
                click.secho(f"    {line}", err=True, dim=True, fg="red" if r.is_error else None)
        # other events (McpStarted, Requested) only end the status line above

    def _end_reasoning(self) -> None:
        if self.in_reasoning:
            click.echo("", err=True)
            self.in_reasoning = False

    def end_turn(self, answer: str) -> None:
        self.status.stop()
        self._end_reasoning()
        if not self.quiet:
            if not self.wrote_text and answer:
                click.echo(answer, nl=False)
            click.echo("")
        self.wrote_text = False


def _first_piped_line() -> str | None:
    """The first non-blank line of a non-terminal stdin; None when it is closed or empty."""
    if sys.stdin is None:
        return None
    try:
        for line in sys.stdin:
            if line.strip():
                return line.rstrip("\n")
    except (OSError, ValueError):  # fd 0 closed underneath us
        return None
    return None


STDIN_LIMIT = 512 * 1024
"""Bytes of piped stdin a ``-q`` turn takes: a few files' worth; more is refused, not cut, since
a cut file reads to the model as the whole file."""


def _piped_text() -> str | None:
    """All of stdin when it is a pipe or a file (``cat f | hermes chat -q …``, ``< f``); None for
    a terminal, ``/dev/null`` or no stdin. Refused past ``STDIN_LIMIT``."""
    import stat

    from ..core.errors import HermesError

    try:
        mode = os.fstat(0).st_mode
    except OSError:
        return None
    if sys.stdin is None or sys.stdin.isatty() or not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
        return None
    data = sys.stdin.buffer.read(STDIN_LIMIT + 1)
    if len(data) > STDIN_LIMIT:
        raise HermesError(f"stdin has more than {STDIN_LIMIT // 1024} KiB: nothing was sent",
                          hint="pipe less (head -c, a smaller file), or let the agent read the file with its tools")
    return data.decode("utf-8", errors="replace")


def _failure(e: Exception, sid: str | None) -> dict[str, Any]:
    """The JSON object ``chat --json`` prints when the turn fails (texts already redacted)."""
    from ..core.errors import HermesError, ProviderHTTPError, redact

    if isinstance(e, HermesError):
        message, hint = str(e), e.hint
    else:
        message, hint = redact(f"internal error: {type(e).__name__}: {e}"), ""
    return {"error": message, "hint": hint or None, "type": type(e).__name__, "session_id": sid,
            "status": e.status if isinstance(e, ProviderHTTPError) else None}


def _confirm(command: str) -> bool:
    """The user's yes or no; Ctrl-C (or Ctrl-D) here cancels the whole turn, not just this call."""
    from .ask import yes_or_no

    return yes_or_no(f"Run command: {command!r}?")


def _confirm_write(name: str, diff: str) -> bool:
    """The diff, then the user's yes or no; Ctrl-C here cancels the whole turn."""
    from .terminal import printable

    for line in printable(diff).splitlines():
        colour = "green" if line.startswith("+") else "red" if line.startswith("-") else None
        click.secho(f"    {line}", err=True, fg=colour)
    from .ask import yes_or_no

    return yes_or_no(f"Apply this change to {name}?")


def _effort(value: str | None) -> str | None:
    """``--effort`` checked as config.toml's ``effort`` is, with a did-you-mean."""
    from ..config.settings import EFFORTS, effort_hint

    if value is None or value in EFFORTS:
        return value
    hint = effort_hint(value)
    raise click.BadParameter(f"{value!r} is not one of {', '.join(EFFORTS)}" + (f"; {hint}" if hint else ""),
                             param_hint="--effort")


def _exit_on_hangup() -> None:
    """SIGTERM and SIGHUP (the terminal closed) end the chat through Python's unwinding, so a
    running command's process group is killed on the way out instead of outliving us."""
    import signal

    def leave(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, leave)


@click.command()
@click.option("-q", "--query", help="Run one user turn to completion (tool loop included) and exit. Piped stdin "
                                   "is appended to it (up to 512 KiB); -q - takes stdin alone as the message.")
@click.option("--provider", "-p", help="Provider / route (see `hermes routes`).")
@click.option("--model", "-m", help="Model id, or an alias from config.toml.")
@click.option("--base-url", "-u", type=BASE_URL, help="Base URL (changes the host, not the route named by --provider).")
@click.option("--api-key", help="API key (else the provider's variable, else HERMES_API_KEY; Bedrock uses AWS credentials).")
@click.option("--resume", "-r", "resume", metavar="ID", help="Continue a stored session.")
@click.option("--continue", "-c", "cont", is_flag=True, help="Continue the most recent session.")
@click.option("--stream/--no-stream", default=None, help="Stream the response (default from config: on).")
@click.option("--json", "as_json", is_flag=True,
              help="With -q: print one JSON object (session_id, answer, ... or error, hint on failure).")
@click.option("--effort", callback=lambda _c, _p, v: _effort(v),
              help="Reasoning effort: none, minimal, low, medium, high, xhigh, max (what a route does not take is not sent).")
@click.option("--no-thinking", is_flag=True, help="Do not request thinking (switches are not sent).")
@click.option("--allow-commands", is_flag=True, help="Let the model run shell commands without asking.")
@click.option("--allow-writes", is_flag=True,
              help="Let the model create and edit files in the working directory without asking (the REPL shows "
                   "each diff and asks; /undo puts the last turn's changes back).")
@click.option("--allow-read", "allow_read", multiple=True, metavar="PATH",
              type=click.Path(exists=True, file_okay=False),
              help="Let tools read this directory too (repeatable); by default they stay in the working directory.")
@click.option("--max-steps", type=click.IntRange(1, 200), help="Model calls per user turn (default 12).")
@click.option("--show-reasoning/--hide-reasoning", default=True, help="Print the model's reasoning as it streams.")
@click.option("--title", default="", help="Title for a new session.")
@click.option("--system", "-s", "system", metavar="TEXT",
              help="System prompt, stored with the session's next turn: a resumed session keeps it; a different "
                   "--system later is added at that turn. Every route gets it as its wire takes a system prompt.")
@click.option("--emulate", is_flag=True,
              help="Send every route to the running `hermes emulate` (HERMES_EMULATE=URL, default "
                   "http://127.0.0.1:8765), with the emulator's key: offline, no account needed.")
def chat(query: str | None, provider: str | None, model: str | None, base_url: str | None, api_key: str | None,
         resume: str | None, cont: bool, stream: bool | None, as_json: bool, effort: str | None,
         no_thinking: bool, allow_commands: bool, allow_writes: bool, allow_read: tuple[str, ...], max_steps: int | None,
         show_reasoning: bool, title: str, system: str | None, emulate: bool) -> None:
    """Talk to a model. Every request replays the model's earlier reasoning as its route takes it.

    \b
    hermes chat -q "summarise README.md" -p deepseek -m deepseek-v4
    hermes chat --resume 3f2a9c01bd7e           # continue a session in a new process
    hermes chat -c -p openrouter -m anthropic/claude-sonnet-4.5   # switch provider, keep going
    git diff | hermes chat -q "review this" -s "You are a terse reviewer."
    hermes emulate &  hermes chat --emulate -q hi -p deepseek -m deepseek-v4   # offline

    In the REPL: /branch, /compress, /model [PROVIDER:]MODEL, /effort LEVEL, /key (asked without
    echo; `/key save` keeps it as `hermes keys set` does), /sessions, /undo, /help, /quit.
    Ctrl-C cancels the running turn (nothing half-done is stored); Ctrl-D quits. Without -q and
    without a terminal, piped lines are the REPL's input.

    Tools: list_dir, read_file, search_files, run_command (--allow-commands), write_file and
    edit_file (--allow-writes), plugins, and every
    MCP server in config.toml as SERVER__tool (`hermes mcp list`).
    """
    from ..agent.runtime import Runtime
    from ..config.keys import KeyMissing
    from ..core.errors import HermesError
    from ..tools.builtins import ToolContext, load_toolbox
    from ._common import echo_json, ignored_key_warning
    from .model_notice import unprofiled

    if resume and cont:
        raise click.UsageError("use --resume ID or --continue, not both")
    if as_json and not query:
        raise click.UsageError("--json needs -q")
    if system is not None and not system.strip():
        raise click.UsageError("--system needs some text: an empty system prompt is not one")
    if query is not None:  # piped stdin follows the question (`cat f | hermes chat -q "explain"`); -q - is stdin alone
        stdin = _piped_text()
        if query == "-":
            query = stdin
        elif stdin and stdin.strip():
            query = f"{query}\n\n{stdin}"
        if query is None or not query.strip():
            raise click.UsageError("-q needs some text: an empty message is not a turn"
                                   + (" (-q - reads it from stdin, which was empty)" if stdin is not None else ""))
    piped: list[str] = []
    if query is None and not (sys.stdin is not None and sys.stdin.isatty()):
        first = _first_piped_line()
        if first is None:  # before any session exists: nothing is stored
            raise HermesError("nothing to do: no -q and stdin is closed or empty, so no session was started",
                              hint='pass -q "your question", pipe lines in, or run `hermes chat` in a terminal')
        piped.append(first)
    sid: str | None = None
    runtime: Runtime | None = None
    _exit_on_hangup()
    try:
        if emulate and not os.environ.get("HERMES_EMULATE", "").strip():
            os.environ["HERMES_EMULATE"] = "1"
        runtime = Runtime.load()
        if runtime.emulate:
            from ..routing.emulated import check_running

            check_running(runtime.emulate)
        config = runtime.config
        sid, resolved = runtime.open(resume=resume, cont=cont, provider=provider, model=model, base_url=base_url,
                                     title=title or (query or (piped[0] if piped else ""))[:60])
        if notice := unprofiled(resolved.model, runtime.table.profiles):
            click.echo(notice, err=True)
        api_key = ignored_key_warning(resolved.route, api_key)
        try:
            key = runtime.key(resolved, api_key)
        except KeyMissing as e:  # a terminal REPL starts anyway: /key gives one (nothing is stored before)
            if query is not None or piped:
                raise
            from .repl import show_error

            show_error(e)
            key = None
        ctx = ToolContext(allow_commands=allow_commands or config.allow_commands,
                          confirm=_confirm if query is None and not piped else None,
                          allow_writes=allow_writes or config.allow_writes,
                          confirm_write=_confirm_write if query is None and not piped else None,
                          read_roots=tuple(Path(p) for p in (*config.allow_read, *allow_read)))
        printer = _Printer(quiet=as_json, show_reasoning=show_reasoning)
        sources = []
        if config.mcp_servers:  # started when the first request lists tools; stopped at exit
            from ..tools.mcp import McpHub

            sources.append(McpHub(config.mcp_servers, on_event=printer))
        agent = runtime.agent(load_toolbox(ctx, sources=sources), api_key=key, on_event=printer,
                              thinking=not no_thinking, effort=effort, stream=stream, max_steps=max_steps)
        if query is not None:
            result = runtime.turn(agent, sid, query, resolved, system=system)
            printer.end_turn(result.answer)
            if as_json:
                echo_json({"session_id": sid, "answer": result.answer, "steps": result.steps,
                           "stopped": result.stopped, "route": resolved.route.key, "model": resolved.model,
                           "learned": result.learned})
            elif result.stopped != "answer":
                click.echo(f"hermes: stopped after {result.steps} steps without an answer (--max-steps)", err=True)
            if not as_json:
                click.echo(f"session {sid}", err=True)
            return
    except Exception as e:
        if as_json:  # stdout still gets one JSON object; the error line and exit code follow as usual
            echo_json(_failure(e, sid if sid and runtime is not None and runtime.stored(sid) else None))
        raise
    from .repl import run_repl

    run_repl(runtime, agent, sid, resolved, printer, pending=piped, api_key=api_key, system=system)
