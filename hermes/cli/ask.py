"""The REPL's yes-or-no question (run this command? apply this change?), read so that Ctrl-C
always cancels.

``click.confirm`` prints the question, then blocks in ``read()``: a Ctrl-C that lands between
the two (the user saw the question) is caught by Python's handler but only acted on when
bytecode runs again, which the blocked read never does, so the turn hangs on the question.
prompt_toolkit draws the question after the terminal is in raw mode, where Ctrl-C is a key it
reads, and before that point the pending signal is raised by its own Python code."""

from __future__ import annotations

import sys

import click

__all__ = ["yes_or_no"]


def yes_or_no(question: str) -> bool:
    """``question [y/N]`` on stderr: ``y``/``yes`` is yes, Enter or ``n``/``no`` is no;
    Ctrl-C or Ctrl-D raise KeyboardInterrupt (the caller cancels the turn)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.output import create_output

    session: PromptSession[str] = PromptSession(output=create_output(stdout=sys.stderr))
    while True:
        try:
            value = session.prompt(f"{question} [y/N]: ").strip().lower()
        except (KeyboardInterrupt, EOFError):
            raise KeyboardInterrupt from None
        if value in ("y", "yes"):
            return True
        if value in ("", "n", "no"):
            return False
        click.echo("Error: invalid input", err=True)
