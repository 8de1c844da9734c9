"""Helpers shared by CLI commands: the route table with user overrides, JSON output."""

from __future__ import annotations

from typing import Any

import click

from ..config.paths import routes_path
from ..routing.resolve import Resolved, Table, load_table, resolve
from ..routing.routes import Route

__all__ = ["echo_json", "ignored_key_warning", "resolve_cli", "route_table"]


def route_table() -> Table:
    """Built-in rows plus ``$HERMES_HOME/routes.toml``."""
    return load_table(routes_path())


def resolve_cli(provider: str | None, base_url: str | None, model: str) -> Resolved:
    return resolve(provider, base_url, model, table=route_table())


def echo_json(data: Any) -> None:
    import orjson

    click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode())


def ignored_key_warning(route: Route, api_key: str | None) -> str | None:
    """``api_key``, or None with a note on stderr when the route takes no key (Bedrock signs
    with the AWS credential chain, so a silently dropped ``--api-key`` would mislead)."""
    if api_key and route.auth == "aws":
        click.echo(f"hermes: --api-key is ignored for {route.label}: it signs requests with the AWS "
                   "credential chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE, ...) or a Bedrock API "
                   "key in AWS_BEARER_TOKEN_BEDROCK", err=True)
        return None
    return api_key
