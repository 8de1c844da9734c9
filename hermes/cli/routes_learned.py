"""``hermes routes learned`` / ``hermes routes forget``: the capability ledger, shown and cleared.

What a route rejected (a carrier field, a signed blob) is remembered per (provider, host,
model) so no session pays the same 400 twice (see docs/rejections.md). These two commands let
a user see that memory, with the evidence that taught it, and clear it — for example after a
provider fixed its schema.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import click

from ._common import echo_json

if TYPE_CHECKING:
    from ..store.records import Capability

__all__ = ["forget", "learned"]


def _value(kind: str, value: Any) -> str:
    if kind == "suppressed_blobs" and isinstance(value, list):
        return f"{len(value)} blob(s): " + ", ".join(h[:12] for h in value[:3]) + (" …" if len(value) > 3 else "")
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def _rejection(c: Capability) -> bool:
    """A lesson taught by a refusal (it carries the HTTP status that taught it); token-count
    calibrations and other observations do not."""
    return isinstance((c.evidence or {}).get("status"), int)


def _calibration(c: Capability) -> str:
    v = c.value if isinstance(c.value, dict) else {}
    ev = c.evidence or {}
    seen = f"; last answer: {ev['reported']:,} tokens reported, {ev['estimated']:,} estimated" \
        if isinstance(ev.get("reported"), int) and isinstance(ev.get("estimated"), int) else ""
    return f"  {c.kind}: estimate x {v.get('factor', '?')} after {v.get('n', '?')} answer(s){seen}"


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the ledger as JSON (every entry).")
@click.option("--all", "everything", is_flag=True,
              help="Also show what was observed rather than refused: the token estimate's factor per model.")
def learned(as_json: bool, everything: bool) -> None:
    """What routes have taught Hermes: fields to stop sending, blobs to stop replaying, each with
    the refusal that taught it. Token-count calibrations are counted in one line (--all lists them)."""
    from ..store import open_store

    with open_store() as store:
        rows = store.list_capabilities()
    if as_json:
        echo_json([{"provider": c.provider, "host": c.host, "model": c.model, "kind": c.kind, "value": c.value,
                    "evidence": c.evidence, "created": c.created, "updated": c.updated} for c in rows])
        return
    shown = [c for c in rows if everything or _rejection(c)]
    if not shown:
        click.echo("nothing learned yet: no route refused a field or a blob")
    for c in shown:
        click.echo(f"{c.provider} @ {c.host} / {c.model}")
        if not _rejection(c):
            click.echo(_calibration(c))
            continue
        ev = c.evidence or {}
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(ev.get("time") or c.updated)))
        click.echo(f"  {c.kind}: {_value(c.kind, c.value)}")
        click.echo(f"  evidence: HTTP {ev['status']} at {when}: {str(ev.get('error', ''))[:160]}")
    hidden = len(rows) - len(shown)
    if hidden:
        click.echo(f"(and {hidden} token-count calibration{'s' if hidden != 1 else ''} from reported usage, "
                   "not refusals: --all lists them)")


@click.command()
@click.option("--provider", "-p", help="Only this provider / route key.")
@click.option("--host", help="Only this host (as shown by `hermes routes learned`).")
@click.option("--model", "-m", help="Only this model id.")
@click.option("--all", "everything", is_flag=True, help="Clear the whole ledger.")
def forget(provider: str | None, host: str | None, model: str | None, everything: bool) -> None:
    """Clear learned entries (and the copies sessions keep), so Hermes tries the fields again."""
    from ..rejections import forget as forget_entries
    from ..store import open_store

    if not (provider or host or model or everything):
        raise click.UsageError("name --provider, --host and/or --model, or pass --all")
    if everything and (provider or host or model):
        raise click.UsageError("--all clears everything; do not combine it with filters")
    with open_store() as store:
        rows, sessions = forget_entries(store, provider, host, model)
    click.echo(f"forgot {rows} ledger entr{'y' if rows == 1 else 'ies'}"
               + (f" and {sessions} session cop{'y' if sessions == 1 else 'ies'}" if sessions else ""))
