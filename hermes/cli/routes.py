"""``hermes routes``: print the table; ``hermes routes explain``: one resolved row and why."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any

import click

from ..routing.models import Profile
from ..routing.routes import Route
from ..store.requestlog import SHORT_NAMES
from ._common import echo_json, resolve_cli, route_table
from .routes_learned import forget, learned
from .url_option import BASE_URL

__all__ = ["routes"]


def _carriers(r: Route) -> str:
    if r.wire != "openai_chat":
        return f"native ({r.policy})" if r.policy != "fields" else "native"
    if r.strict:
        return "none (strict)"
    names = [SHORT_NAMES[c] for c in ("reasoning_content", "reasoning", "reasoning_details") if c in r.carriers]
    return "+".join(names) if names else "-"


_NATIVE_BACK = {"anthropic": "own signed thinking", "bedrock": "reasoningContent",
                "gemini": "own thought signatures", "openai_responses": "own encrypted items"}
_FIELD_ORDER = ("reasoning_content", "reasoning", "reasoning_details")
_NATIVE_SHORT = {"reasoning_opaque": "opaque", "reasoning_text": "text", "thought_signature": "thought sig",
                 "tool_signatures": "tool sigs"}


def goes_back(r: Route) -> str:
    """What a route is sent back of earlier reasoning, in words for a line of ``hermes routes``."""
    if r.wire != "openai_chat":
        if r.policy == "keep":
            return "thinking blocks (keep)"
        what = _NATIVE_BACK.get(r.wire, "native")
        return what if r.policy in ("fields", "signed") else f"{what} ({r.policy})"
    if r.strict:
        return "nothing (strict)"
    names = [SHORT_NAMES[c] for c in _FIELD_ORDER if c in r.carriers]
    names += [_NATIVE_SHORT.get(n, n) for n in sorted(r.native)]
    what = "+".join(names) or "nothing"
    if r.must_echo:
        what += ", must echo"
    elif r.must_echo_models:
        what += ", some must echo"
    return what


def row_dict(r: Route) -> dict[str, Any]:
    return {
        "key": r.key, "label": r.label, "wire": r.wire, "providers": list(r.providers),
        "hosts": list(r.hosts), "paths": list(r.paths), "carriers": sorted(r.carriers),
        "must_echo": r.must_echo, "must_echo_models": list(r.must_echo_models), "tool_ids": r.tool_ids,
        "switches": dict(r.switches), "native": sorted(r.native),
        "blob_kinds": sorted(r.blob_kinds), "blob_scope": r.blob_scope, "policy": r.policy,
        "signed_loop": r.signed_loop, "prior_turns": r.prior_turns, "local": r.local, "base_url": r.base_url,
        "thinking_off": dict(r.thinking_off), "effort_field": r.effort_field, "effort_map": dict(r.effort_map),
        "variant": r.variant, "headers": sorted(r.headers), "streams_with": dict(r.streams_with), "call_signature": r.call_signature,
        "text_signature": r.text_signature, "signature_pad": r.signature_pad, "models": list(r.models), "tokens": r.tokens,
        "key_env": list(r.key_env), "model_rules": [
            {"pattern": m.pattern, "switches": dict(m.switches), "policy": m.policy, "prior_turns": m.prior_turns,
             "thinking_off": None if m.thinking_off is None else dict(m.thinking_off), "without": list(m.without), "hosts": list(m.hosts),
             "carriers": None if m.carriers is None else sorted(m.carriers)}
            for m in r.model_rules],
        "source": r.source,
    }


def profile_dict(p: Profile) -> dict[str, Any]:
    """A resolved model profile as JSON (``docs/models.md``)."""
    out = {f.name: getattr(p, f.name) for f in fields(p)}
    out["budgets"], out["levels"] = dict(p.budgets), dict(p.levels)
    out["efforts"] = None if p.efforts is None else list(p.efforts)
    return out


@click.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print the table as JSON.")
@click.option("--wide", is_flag=True, help="Every column: -p names, carriers, must-echo models, native fields, "
                                           "keep-thinking switches, hosts (needs a wide terminal).")
@click.pass_context
def routes(ctx: click.Context, as_json: bool, wide: bool) -> None:
    """The route table: which reasoning fields each provider route is sent back.

    One line per route: its -p name, what it is, its wire and what goes back; --wide for
    every column, `hermes routes explain -p NAME -m MODEL` for one row in full.

    Names that look alike are different routes: -p vertex is Gemini on Vertex AI, while
    Claude on Vertex AI is -p anthropic-vertex (`hermes routes explain` says which row a
    name picks). RC = reasoning_content, R = reasoning, RD = reasoning_details. Add or override rows in
    $HERMES_HOME/routes.toml (see docs/routes.md).
    """
    if ctx.invoked_subcommand is not None:
        return
    table = route_table()
    if as_json:
        echo_json([row_dict(r) for r in table])
        return
    if not wide:
        _short(table)
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(title="Hermes route table", show_lines=False, expand=False,
              caption="-p takes a route or one of its other names (in parentheses). Look-alikes differ: "
                      "-p vertex is Gemini on Vertex AI, Claude on Vertex AI is -p anthropic-vertex.")
    for col in ("route (-p names)", "what", "wire", "carriers", "must echo", "native", "keep-thinking switches",
                "hosts"):
        t.add_column(col, overflow="fold", no_wrap=col.startswith("route"))  # names are copied whole
    import orjson

    for r in table:
        switches = orjson.dumps(dict(r.switches)).decode() if r.switches else ""
        if r.model_rules and any(m.switches for m in r.model_rules):
            switches = (switches + " +model rules").strip()
        hosts = ", ".join(r.hosts) or ("loopback/private" if r.local else "")
        echo = "yes" if r.must_echo else ", ".join(r.must_echo_models)
        names = r.key + (f" ({', '.join(r.providers)})" if r.providers else "")
        t.add_row(names, r.label, r.wire, _carriers(r), echo, ", ".join(sorted(r.native)),
                  switches, hosts)
    import shutil

    Console(width=max(shutil.get_terminal_size((160, 24)).columns, 120)).print(t)


def _short(table: Sequence[Route]) -> None:
    """One line per route, its last cell cut to the terminal's width: readable at 80 columns."""
    import shutil
    import textwrap

    from .terminal import printable

    rows = [("route (-p)", "wire", "sent back", "what")]
    rows += [(r.key, r.wire, goes_back(r), r.label) for r in table]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    room = max(shutil.get_terminal_size((100, 24)).columns - sum(widths) - 6, 12)
    for row in rows:
        last = row[3] if len(row[3]) <= room else row[3][:room - 1] + "…"
        click.echo(printable("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + last))
    note = ("RC = reasoning_content, R = reasoning, RD = reasoning_details. -p takes other names too "
            "(`hermes routes --wide`). Look-alikes differ: -p vertex is Gemini on Vertex AI, Claude on Vertex AI "
            "is -p anthropic-vertex.")
    click.echo("\n" + "\n".join(textwrap.wrap(note, width=max(room + sum(widths) + 6, 40))))


@routes.command()
@click.option("--provider", "-p", help="Provider / route name (see `hermes routes`).")
@click.option("--base-url", "-u", type=BASE_URL, help="Base URL; decides the route when --provider is not given.")
@click.option("--model", "-m", required=True, help="Model id.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def explain(provider: str | None, base_url: str | None, model: str, as_json: bool) -> None:
    """Show the row a (provider, base URL, model) resolves to, and why."""
    res = resolve_cli(provider, base_url, model)
    data = {"route": row_dict(res.route), "profile": profile_dict(res.profile), "base_url": res.base_url,
            "host": res.host, "model": res.model, "why": list(res.why)}
    if as_json:
        echo_json(data)
        return
    r = res.route
    click.echo(f"route      {r.key} ({r.label}), wire {r.wire}")
    click.echo(f"request to {res.base_url or '(SDK default endpoint)'}  host {res.host}  model {res.model}")
    echoed = "reasoning_content" if r.wire == "openai_chat" else "a thinking block"
    click.echo(f"carriers   {_carriers(r)}" + (f"  must-echo: tool turns get {echoed}, ' ' if none" if r.must_echo else ""))
    if r.native:
        click.echo(f"native     {', '.join(sorted(r.native))} (private hermes.native_assistant record)")
    if r.tool_ids != "any":
        click.echo(f"tool ids   {r.tool_ids} rule: ids it refuses are mapped in the request, history keeps them")
    if r.blob_kinds:
        click.echo(f"blobs      {', '.join(sorted(r.blob_kinds))} from the same {'route and model' if r.blob_scope == 'model' else 'route'} only")
    if r.wire != "openai_chat":
        click.echo(f"policy     {r.policy}; earlier turns' reasoning: {'replayed' if r.prior_turns == 'all' else 'open tool loop only'}")
        if r.signed_loop and r.policy == "signed":
            click.echo("loop       a tool turn of the open loop without its own thinking block switches thinking off")
    if r.switches:
        import orjson

        click.echo(f"switches   {orjson.dumps(dict(r.switches)).decode()} (sent whenever thinking is on)")
    if r.thinking_off:
        import orjson

        click.echo(f"off        {orjson.dumps(dict(r.thinking_off)).decode()} (sent with thinking off)")
    p = res.profile
    style = {"budget": "a token budget", "adaptive": "adaptive (effort is a level)", "level": "a named level",
             "none": "the route's switches"}[p.thinking]
    click.echo(f"model      thinking asked by {style}; context {p.context_window:,} tokens; priced as "
               f"{p.tokens or r.tokens or 'ratio:o200k'}"
               + (f"; efforts {', '.join(p.efforts) or 'none'}" if p.efforts is not None else ""))
    click.echo(f"source     {r.source}")
    for line in res.why:
        click.echo(f"why        {line}")


routes.add_command(learned)
routes.add_command(forget)
