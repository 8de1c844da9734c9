"""``hermes keys``: save a provider's key in ``$HERMES_HOME/keys.json`` (0600), list, remove.

A key is read without echo from a terminal, or from stdin when piped (``pass show x | hermes
keys set deepseek``), never from the command line, where shell history and ``ps`` would keep
it. Lookup order (docs/agent.md): ``--api-key``, the route's variables, this file,
``HERMES_API_KEY``.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from ._common import route_table

if TYPE_CHECKING:
    from ..routing.routes import Route

__all__ = ["keys"]


@click.group()
def keys() -> None:
    """Keys saved for providers in $HERMES_HOME/keys.json (mode 0600; never config.toml).

    \b
    hermes keys set deepseek              # asks for the key; nothing is echoed
    pass show deepseek | hermes keys set deepseek
    hermes keys list                      # which routes have a key, and from where (masked)

    The environment wins: --api-key, then the route's own variable (DEEPSEEK_API_KEY, ...),
    then the saved key, then HERMES_API_KEY.
    """


def read_secret(prompt: str) -> str:
    """A key from the terminal without echo, or the first line of piped stdin; refused when empty."""
    from ..core.errors import ConfigError

    if sys.stdin is not None and sys.stdin.isatty():
        value = click.prompt(prompt, hide_input=True, err=True, default="", show_default=False)
    else:
        value = (sys.stdin.readline() if sys.stdin is not None else "").strip()
    value = value.strip()
    if not value:
        raise ConfigError("no key given: nothing was saved", hint="paste the key at the prompt, or pipe it in")
    return value


def takes_a_key(route: Route) -> None:
    """Refuse a route that signs with the AWS chain: a key given for it would never be sent."""
    from ..core.errors import ConfigError

    if route.auth == "aws":
        raise ConfigError(f"{route.label} takes no key: it signs requests with the AWS credential chain",
                          hint="use AWS_PROFILE or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, or a Bedrock API "
                               "key in AWS_BEARER_TOKEN_BEDROCK")


@keys.command("set")
@click.argument("provider")
def set_key(provider: str) -> None:
    """Save PROVIDER's key (asked without echo, or read from stdin), replacing a saved one."""
    from ..config.keyfile import save_key
    from ..config.keys import check_key
    from ..routing.resolve import route_named

    route = route_named(route_table(), provider)
    takes_a_key(route)
    value = read_secret(f"key for {route.key}")
    check_key(route, "the key given", value)
    path = save_key(route.key, value)
    click.echo(f"saved the key for {route.key} in {path} (0600)", err=True)
    shadow = [v for v in route.key_env if os.environ.get(v)]
    if shadow:
        click.echo(f"note: {shadow[0]} is set in this environment and is used before the saved key", err=True)


@keys.command("list")
def list_keys() -> None:
    """Each route with a key, where it comes from (variable or keys file), masked."""
    from ..config.keyfile import keys_path, mask, saved_keys
    from ..config.keys import key_source

    saved = saved_keys()
    rows = []
    for route in route_table():
        env = [v for v in route.key_env if os.environ.get(v)]
        if not env and route.key not in saved:
            continue
        source = key_source(route) or ""
        used = os.environ.get(source) if source in route.key_env else saved.get(route.key, "")
        where = "keys file" if source == str(keys_path()) else source
        rest = [f"saved {mask(saved[route.key])} (not used: {source} wins)"] if route.key in saved and where != "keys file" else []
        rows.append(f"{route.key:<18} {mask(used or ''):<8} from {where}" + "".join(f"; {r}" for r in rest))
    if not rows:
        click.echo(f"no keys: none saved in {keys_path()} and no route's variable is set")
        return
    for line in rows:
        click.echo(line)
    if os.environ.get("HERMES_API_KEY"):
        click.echo(f"HERMES_API_KEY is set ({mask(os.environ['HERMES_API_KEY'])}): used for every other route")


@keys.command("remove")
@click.argument("provider")
def remove(provider: str) -> None:
    """Remove PROVIDER's saved key."""
    from ..config.keyfile import remove_key
    from ..routing.resolve import route_named

    route = route_named(route_table(), provider)
    click.echo(f"removed the saved key for {route.key}" if remove_key(route.key)
               else f"no key was saved for {route.key}", err=True)
