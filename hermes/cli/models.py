"""``hermes models`` / ``hermes models explain``: the model facts Hermes knows, and what it
sends for one model on one route, with where each fact comes from.

The list is the profile table (``hermes.routing.models``: built-in rows and ``routes.toml``'s
``[[model]]`` rows, each resolved for an example id of its family) plus what routes taught at
run time (the capability ledger). ``explain`` resolves a model on a route and shows the request
fields a thinking and a non-thinking request carry — the very bodies the wire builds — with
the profile rows, route rules and learned lessons that decided them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from ..routing.models import PROFILE_FIELDS, example_id
from ._common import echo_json, resolve_cli, route_table
from .routes import profile_dict

__all__ = ["models"]

_CONTENT = frozenset({"messages", "input", "contents", "system", "systemInstruction", "model", "modelId", "stream",
                      "stream_options", "tools", "toolConfig", "store", "include", "anthropic_version"})
"""Body keys that carry the conversation, not the model's thinking controls."""


def _learned(store_rows: list[Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for c in store_rows:
        out.setdefault(c.model, []).append({"provider": c.provider, "host": c.host, "kind": c.kind, "value": c.value,
                                           "evidence": (c.evidence or {}).get("error", "")})
    return out


def _ledger() -> list[Any]:
    from ..config.paths import db_path
    from ..store import open_store, store_url

    if not store_url() and not db_path().exists():
        return []
    with open_store() as store:
        return list(store.list_capabilities())


def _families() -> list[dict[str, Any]]:
    from ..routing.models import profile_for

    table = route_table()
    out = []
    for row in table.profiles:
        p = profile_for(example_id(row.models[0]), table.profiles)
        sets = [f for f in PROFILE_FIELDS if getattr(row, f) is not None]
        out.append({"models": list(row.models), "sets": sets, "thinking": p.thinking,
                    "efforts": None if p.efforts is None else list(p.efforts),
                    "context_window": p.context_window, "tokens": p.tokens or "(route's)",
                    "source": row.source, "cite": row.cite})
    return out


@click.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def models(ctx: click.Context, as_json: bool) -> None:
    """The model families Hermes knows: thinking style, efforts, context window, token basis,
    where each fact comes from, and what routes taught at run time (`hermes models explain
    MODEL -p ROUTE` shows what one request carries). Sources: docs/models.md."""
    if ctx.invoked_subcommand is not None:
        return
    families, learned = _families(), _learned(_ledger())
    if as_json:
        echo_json({"families": families, "learned": learned})
        return
    import shutil

    from rich.console import Console
    from rich.table import Table

    t = Table(title="Hermes model profiles (first matching row that sets a field wins)", expand=False,
              caption="efforts: '-' any value passes, 'none' none is sent; tokens: the pricing basis")
    for col in ("models", "sets", "thinking", "efforts", "context", "tokens", "source"):
        t.add_column(col, overflow="fold")
    for f in families:
        efforts = "-" if f["efforts"] is None else (", ".join(f["efforts"]) or "none")
        t.add_row(", ".join(f["models"]), ", ".join(f["sets"]), f["thinking"], efforts, f"{f['context_window']:,}",
                  f["tokens"], f["cite"] or f["source"])
    console = Console(width=max(shutil.get_terminal_size((160, 24)).columns, 120))
    console.print(t)
    if learned:
        console.print("[bold]Learned at run time[/bold] (hermes routes learned / forget):")
        for model, rows in sorted(learned.items()):
            for r in rows:
                console.print(f"  {model} on {r['provider']} @ {r['host']}: {r['kind']} = {r['value']}",
                              markup=False, highlight=False)


def _bodies(res: Any, effort: str | None) -> dict[str, Any]:
    """The thinking controls of a request that thinks and one that does not, as the wire
    builds them (with the learned value lessons applied), and the headers it adds."""
    from ..agent.provider import build_body, get_wire
    from ..core.messages import Message
    from ..rejections import ValueRule, apply_values
    from ..rejections.values import with_lessons
    from ..replay import Settings, plan_replay

    values: tuple[ValueRule, ...] = ()
    for c in _ledger():
        if (c.provider, c.host, c.model) == (res.route.key, res.host, res.model) and c.kind == "refused_values":
            values = tuple(ValueRule(p, tuple(v.get("allowed") or ()), tuple(v.get("refused") or ()),
                                     bool(v.get("omit"))) for p, v in sorted((c.value or {}).items()))
    if values:
        from dataclasses import replace

        res = replace(res, profile=with_lessons(res.profile, values))
    wire = get_wire(res.route.wire)
    out: dict[str, Any] = {}
    for name, thinking in (("thinking on", True), ("thinking off", False)):
        settings = Settings(thinking=thinking, effort=effort)
        body = apply_values(build_body(wire, plan_replay([Message.user("hi")], res, settings=settings),
                                       settings=settings), values)
        out[name] = {k: v for k, v in body.items() if k not in _CONTENT}
    headers = wire.endpoint(res, stream=False)[1]  # no credential is among them (those come later)
    out["headers"] = dict(headers)
    out["value lessons"] = [{"path": v.path, "allowed": list(v.allowed), "refused": list(v.refused), "omit": v.omit}
                            for v in values]
    return out


@models.command()
@click.argument("model")
@click.option("--provider", "-p", help="Route name (see `hermes routes`); with --base-url, or alone.")
@click.option("--base-url", "-u", help="Base URL; decides the route when --provider is not given.")
@click.option("--effort", help="The effort to show the thinking request with.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def explain(model: str, provider: str | None, base_url: str | None, effort: str | None, as_json: bool) -> None:
    """What Hermes sends for MODEL on a route, and why: the profile rows that match it (with
    their sources), the route's rules for it, the thinking fields of a request with thinking
    on and off, and what the route taught at run time."""
    from ..routing.models import matching_rows

    table = route_table()
    rows = matching_rows(model, table.profiles)
    data: dict[str, Any] = {"model": model, "rows": [
        {"models": list(r.models), "sets": {f: _plain(getattr(r, f)) for f in PROFILE_FIELDS if
                                             getattr(r, f) is not None}, "source": r.source, "cite": r.cite}
        for r in rows]}
    res = None
    if provider or base_url:
        res = resolve_cli(provider, base_url, model)
        data["profile"] = profile_dict(res.profile)
        data["route"] = {"key": res.route.key, "label": res.route.label, "wire": res.route.wire, "host": res.host,
                         "why": list(res.why)}
        data["request"] = _bodies(res, effort)
    else:
        from ..routing.models import profile_for

        data["profile"] = profile_dict(profile_for(model, table.profiles))
    if as_json:
        echo_json(data)
        return
    import orjson

    click.echo(f"model      {model}")
    p = data["profile"]
    click.echo(f"profile    thinking {p['thinking']}; efforts {'any' if p['efforts'] is None else ', '.join(p['efforts']) or 'none'}; "
               f"context {p['context_window']:,}; can stop thinking: {'yes' if p['can_disable'] else 'no'}")
    for r in data["rows"]:
        click.echo(f"row        {', '.join(r['models'])}: {orjson.dumps(r['sets']).decode()}")
        click.echo(f"           from {r['cite'] or r['source'] + ' (docs/models.md)'}")
    if res is None:
        click.echo("route      (name one with -p / -u to see the request)")
        return
    click.echo(f"route      {res.route.key} ({res.route.label}), wire {res.route.wire}, host {res.host}")
    for line in res.why:
        click.echo(f"why        {line}")
    for name, fields in data["request"].items():
        if name == "value lessons":
            for v in fields:
                click.echo(f"learned    {v['path']}: " + ("left out" if v["omit"] else
                                                         f"allowed {v['allowed'] or '?'}, refused {v['refused']}"))
            continue
        click.echo(f"{name:<10} {orjson.dumps(fields).decode()}")


def _plain(v: Any) -> Any:
    if isinstance(v, tuple):
        return list(v)
    return dict(v) if isinstance(v, Mapping) else v
