"""``hermes mcp list``: the MCP servers in config.toml, started once to show their tools."""

from __future__ import annotations

from typing import Any

import click

from ._common import echo_json

__all__ = ["mcp"]


@click.group()
def mcp() -> None:
    """MCP servers from [mcp.servers.NAME] in config.toml; their tools reach the model as NAME__tool."""


@mcp.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (servers, tools and their input schemas).")
def list_(as_json: bool) -> None:
    """Start each configured server, list its tools, stop it again.

    Exits 1 when a server fails to start, so a script can check a config.
    """
    from ..config.settings import load_config
    from ..tools.mcp import McpHub, tool_name

    config = load_config()
    if not config.mcp_servers:
        if as_json:
            echo_json([])
        else:
            click.echo("no MCP servers configured — add [mcp.servers.NAME] to config.toml (see docs/mcp.md)")
        return
    hub = McpHub(config.mcp_servers)
    try:
        servers = hub.start()
    finally:
        hub.close()
    rows: list[dict[str, Any]] = [{"name": name, "transport": info.config.transport,
             "target": info.config.url or " ".join([info.config.command or "", *info.config.args]),
             "error": info.error,
             "tools": [{"name": tool_name(name, t.name), "description": t.description or "",
                        "input_schema": t.input_schema} for t in info.tools]}
            for name, info in servers.items()]
    if as_json:
        echo_json(rows)
    else:
        for row in rows:
            status = f"failed: {row['error']}" if row["error"] else f"{len(row['tools'])} tool(s)"
            click.echo(f"{row['name']}  ({row['transport']}: {row['target']})  {status}")
            for t in row["tools"]:
                first = (t["description"].strip().splitlines() or [""])[0]
                click.echo(f"  {t['name']}" + (f" — {first[:90]}" if first else ""))
    if any(row["error"] for row in rows):
        raise SystemExit(1)
