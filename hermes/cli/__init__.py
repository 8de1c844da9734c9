"""The ``hermes`` command: a thin click group whose subcommands load on demand.

Subcommands live in sibling modules and import their heavy dependencies (rich, httpx,
botocore, the store) only when they run, so ``hermes --help`` starts fast. Every
``HermesError`` is caught here once and printed as one line (plus a hint) on stderr with a
non-zero exit; nothing else prints tracebacks at users.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

import click

__all__ = ["cli", "main"]

# name -> (module, attribute, one-line help). Kept here so --help needs no imports.
_COMMANDS: dict[str, tuple[str, str, str]] = {
    "chat": ("hermes.cli.chat", "chat", "Talk to a model: one-shot with -q, or an interactive session."),
    "sessions": ("hermes.cli.sessions", "sessions", "List, show, branch, compress, export or delete sessions."),
    "replay": ("hermes.cli.replay", "replay", "Dry run: the exact reasoning fields a route would be sent, and why."),
    "routes": ("hermes.cli.routes", "routes", "The route table: which reasoning fields each provider gets back."),
    "keys": ("hermes.cli.keys_cmd", "keys", "Save a provider's key (0600 file, never config.toml); list keys, masked."),
    "models": ("hermes.cli.models", "models", "Model facts: thinking style, efforts, context; what one model is sent."),
    "logs": ("hermes.cli.logs", "logs", "Show (or follow) the request log: which fields went where."),
    "emulate": ("hermes.cli.emulate", "emulate", "Serve loopback emulators of every provider route."),
    "demo": ("hermes.cli.demo", "demo", "Offline tour: a multi-route session against the emulators."),
    "gateway": ("hermes.cli.gateway", "gateway", "Serve Hermes sessions over HTTP."),
    "mcp": ("hermes.cli.mcp_cmd", "mcp", "MCP servers from config.toml and the tools they offer."),
    "proxy": ("hermes.cli.proxy", "proxy", "OpenAI-compatible proxy that restores reasoning any client drops."),
    "ui": ("hermes.cli.ui", "ui", "Web view of sessions and every request's reasoning (loopback)."),
    "store": ("hermes.cli.store", "store", "The session store: copy state.db into PostgreSQL and verify."),
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [n for n in _COMMANDS if _available(n)]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in _COMMANDS or not _available(name):
            return None
        module, attr, _ = _COMMANDS[name]
        cmd: click.Command = getattr(importlib.import_module(module), attr)
        return cmd

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(n, _COMMANDS[n][2]) for n in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _available(name: str) -> bool:
    return importlib.util.find_spec(_COMMANDS[name][0]) is not None


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="hermes-replay", prog_name="hermes")
def cli() -> None:
    """Hermes — an agent runtime for reasoning models that never loses what the model thought.

    Every request carries the model's earlier reasoning in exactly the form its provider
    route accepts: `hermes routes` shows the table, `hermes replay` shows one request.
    Sessions live in $HERMES_HOME/state.db (default ~/.hermes).

    \b
    Start offline:   hermes demo
    One question:    hermes chat -q "what is in this repo?" --provider deepseek --model deepseek-v4
    """


def fail(message: str, hint: str = "") -> None:
    """Print one error line (and a hint) to stderr and exit 1."""
    from .terminal import printable

    click.echo(printable(f"hermes: error: {message}"), err=True)
    if hint:
        click.echo(printable(f"hint: {hint}"), err=True)
    sys.exit(1)


_UNUSED = {"trio": ("httpcore._synchronization", "httpcore._backends.trio"), "httpx._main": ("httpx",)}
"""Optional imports that our dependencies make for features no ``hermes`` command uses: httpcore
imports trio, when installed, to support trio event loops; httpx imports its own
command line and with it rich and pygments. Hermes's event loops are asyncio."""


class _SkipUnused:
    """A meta path finder that refuses exactly those imports, and only when a module named in
    ``_UNUSED`` asks (each asks inside a ``try: ... except ImportError``, and then goes
    without). Anyone else importing trio — a plugin tool, say — gets it as usual."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        askers = _UNUSED.get(name)
        if askers is not None:
            frame = sys._getframe(1)
            while frame is not None:
                if frame.f_globals.get("__name__") in askers:
                    raise ImportError(f"{name} is not loaded by the hermes command")
                frame = frame.f_back  # type: ignore[assignment]
        return None


def main(argv: list[str] | None = None) -> Any:
    finder = _SkipUnused()
    sys.meta_path.insert(0, finder)  # type: ignore[arg-type]
    try:
        return _main(argv)
    finally:
        sys.meta_path.remove(finder)  # type: ignore[arg-type]


def _main(argv: list[str] | None) -> Any:
    from ..core.errors import HermesError, redact

    try:
        return cli.main(args=argv, prog_name="hermes", standalone_mode=True)
    except HermesError as e:
        fail(str(e), e.hint)
    except KeyboardInterrupt:
        click.echo("hermes: interrupted", err=True)
        sys.exit(130)
    except OSError as e:
        if e.filename:
            fail(redact(f"{e.strerror or type(e).__name__}: {e.filename}"),
                 "check that HERMES_HOME (default ~/.hermes) exists and is writable")
        fail(redact(f"{type(e).__name__}: {e}"))
    except Exception as e:  # a bug: one line for users, the traceback with HERMES_DEBUG=1
        import os

        if os.environ.get("HERMES_DEBUG"):
            raise
        fail(redact(f"internal error: {type(e).__name__}: {e}"),
             "this is a Hermes bug; rerun with HERMES_DEBUG=1 for the traceback and report it")
