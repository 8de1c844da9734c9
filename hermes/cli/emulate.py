"""``hermes emulate``: loopback emulators of every provider route, in the foreground."""

from __future__ import annotations

import contextlib

import click

__all__ = ["emulate"]


@click.command()
@click.option("--port", default=8765, show_default=True, help="Port on 127.0.0.1 (0 picks a free one).")
@click.option("--only", multiple=True, help="Serve only these personalities (repeatable).")
@click.option("--key", "keys", multiple=True, metavar="KEY",
              help="Accept this API key (repeatable; default: sk-emulator). Other keys get the provider's 401.")
@click.option("--any-key", is_flag=True, help="Accept any non-empty API key.")
@click.option("--model", "models", multiple=True, metavar="GLOB",
              help="Serve this model id or glob on every personality besides the profiled ones (repeatable). "
                   "Other models get the provider's unknown-model error.")
@click.option("--urls", is_flag=True, help="List every personality's base URL at start.")
@click.option("--access-log", is_flag=True, help="Print a line per request (the full log is GET /_log either way).")
def emulate(port: int, only: tuple[str, ...], keys: tuple[str, ...], any_key: bool, models: tuple[str, ...],
            urls: bool, access_log: bool) -> None:
    """Serve every provider personality on 127.0.0.1: strict schemas, must-echo 400s, signed blobs
    verified byte-exact, a scripted reasoning model that calls one tool and answers.

    \b
    Every route at once:  hermes chat --emulate -q hi -p deepseek -m deepseek-v4   (or HERMES_EMULATE=1)
    One route by URL:     hermes chat -q hi -p deepseek -m deepseek-v4 -u http://127.0.0.1:8765/deepseek/v1 --api-key sk-emulator
    Drift / faults:       curl -X POST localhost:8765/_control/openrouter -d '{"reject_fields":["reasoning_details"]}'
    Request log:          curl localhost:8765/_log
    """
    from ..emulate import PERSONALITIES, Emulator, load_all

    load_all()
    unknown = set(only) - set(PERSONALITIES)
    if unknown:
        raise click.BadParameter(f"unknown personality: {', '.join(sorted(unknown))}", param_hint="--only")
    if any_key and keys:
        raise click.UsageError("use --key KEY or --any-key, not both")
    emu = Emulator(list(only) or None, port=port, keys=None if any_key else (keys or ("sk-emulator",)))
    if models:
        emu.state.add_models("*", *models)
    if urls:
        for name in emu.names:
            click.echo(f"{name:18} {emu.url(name)}")
    else:  # quiet by default: it often runs with & in the terminal the chat uses
        click.echo(f"{len(emu.names)} provider emulators on {emu.root}/<route>/…  (--urls lists them)")
    click.echo("keys: any" if any_key else f"keys: {', '.join(keys or ('sk-emulator',))}   models: the model "
               "profiles, each personality's own" + (f", {', '.join(models)}" if models else ""))
    click.echo(f"control: POST {emu.root}/_control/NAME   log: GET {emu.root}/_log   (Ctrl-C stops)")
    with contextlib.suppress(KeyboardInterrupt):
        emu.serve_forever(access_log=access_log)
