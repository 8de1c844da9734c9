"""Helpers shared by CLI commands: the route table with user overrides, JSON output."""

from __future__ import annotations

from typing import Any

import click

from ..paths import routes_path
from ..resolve import Resolved, load_table, resolve
from ..routes import Route

__all__ = ["echo_json", "resolve_cli", "route_table"]


def route_table() -> tuple[Route, ...]:
    """Built-in rows plus ``$HERMES_HOME/routes.toml``."""
    return load_table(routes_path())


def resolve_cli(provider: str | None, base_url: str | None, model: str) -> Resolved:
    return resolve(provider, base_url, model, table=route_table())


def echo_json(data: Any) -> None:
    import orjson

    click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode())
