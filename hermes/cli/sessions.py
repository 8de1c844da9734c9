"""``hermes sessions``: list, show, branch, compress, export, delete."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ._common import echo_json

if TYPE_CHECKING:
    from ..store import SessionStore

__all__ = ["sessions"]


def _store() -> SessionStore:
    from ..store import open_store

    return open_store()


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


@click.group()
def sessions() -> None:
    """Stored sessions in $HERMES_HOME/state.db: every message with its reasoning carriers."""


@sessions.command("list")
@click.option("--limit", "-n", default=20, show_default=True, help="How many, newest first.")
@click.option("--all", "-a", "all_", is_flag=True,
              help="Also sessions without messages (made by a gateway client, or an older Hermes).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_(limit: int, all_: bool, as_json: bool) -> None:
    """Recent sessions (those with messages, unless --all)."""
    rows = _store().list_sessions(limit, include_empty=all_)
    if as_json:
        echo_json([{"id": s.id, "title": s.title, "provider": s.provider, "model": s.model, "base_url": s.base_url,
                    "parent_id": s.parent_id, "messages": s.message_count, "turns": s.turn_count,
                    "created": s.created, "updated": s.updated} for s in rows])
        return
    if not rows:
        click.echo("no sessions yet — start one with `hermes chat` (or try `hermes demo`)")
        return
    import shutil

    for line in session_table(rows, shutil.get_terminal_size((100, 24)).columns):
        click.echo(line)


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(width - 1, 0)] + "…"


def session_table(rows: Sequence[Any], width: int) -> list[str]:
    """Lines of ``sessions list`` no wider than ``width`` (when it is at least 14): ids are what
    people copy, so they are never cut or wrapped — route/model and title give way, then the
    date and branch columns are dropped."""
    from .terminal import printable

    branches = any(s.parent_id for s in rows)
    fixed = [("id", 12), ("msgs", 4)]
    optional = [("updated", 16), *([("branch of", 12)] if branches else [])]
    routes = [f"{s.provider} / {s.model}" for s in rows]
    while True:
        used = sum(w + 2 for _, w in fixed + optional)
        room = width - used - 2  # route and title share what is left (2 for their gap)
        if room >= 30 or not optional:
            break
        optional.pop()
    room = max(room, 2)
    route_w = min(max(len(r) for r in routes), max(room // 2, 1))
    title_w = max(room - route_w, 1)
    cols = ["id", "updated", "route / model", "msgs", "title", "branch of"]
    keep = {"id", "msgs", "route / model", "title", *(n for n, _ in optional)}
    widths = {"id": 12, "updated": 16, "route / model": route_w, "msgs": 4, "title": title_w, "branch of": 12}

    def line(cells: dict[str, str]) -> str:
        out = []
        for c in cols:
            if c in keep:
                cell = _fit(cells[c], widths[c])
                out.append(cell.rjust(widths[c]) if c == "msgs" else cell.ljust(widths[c]))
        return "  ".join(out).rstrip()

    out = [line({c: c for c in cols})]
    for s, route in zip(rows, routes, strict=True):
        out.append(line({"id": s.id, "updated": _when(s.updated), "route / model": route,
                         "msgs": str(s.message_count), "title": printable(s.title), "branch of": s.parent_id or ""}))
    return out


@sessions.command()
@click.argument("session_id")
@click.option("--reasoning", is_flag=True, help="Print reasoning text in full.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (blobs as kind, length and hash).")
def show(session_id: str, reasoning: bool, as_json: bool) -> None:
    """Every message with its reasoning carriers: origin, field lengths, blob hashes."""
    from ..store.views import describe_part, session_view
    from .terminal import printable

    store = _store()
    if as_json:
        echo_json(session_view(store, session_id, full=reasoning))
        return
    info = store.get_session(session_id)
    click.echo(printable(f"session {info.id}  {info.title}"))
    click.echo(f"route   {info.provider} / {info.model}" + (f"  at {info.base_url}" if info.base_url else ""))
    if info.parent_id:
        click.echo(f"branch  of {info.parent_id} after message #{info.branch_of_seq}")
    learned = store.model_config(info.id).get("reasoning_rejections")
    if learned:
        for key, entry in learned.items():
            click.echo(f"learned {key}: stop sending {', '.join(entry.get('dropped', [])) or '-'}"
                       f"; {len(entry.get('suppressed', []))} suppressed blob(s)")
    for seq, m in enumerate(store.load(info.id)):
        click.echo(f"\n#{seq} {m.role}")
        for p in m.parts:
            for line in describe_part(p, full=reasoning):
                click.echo(printable(f"  {line}"))


@sessions.command()
@click.argument("session_id")
@click.option("--at", "upto", type=int, help="Last message # to keep (default: all).")
@click.option("--title", default="", help="Title of the branch.")
@click.option("--json", "as_json", is_flag=True)
def branch(session_id: str, upto: int | None, title: str, as_json: bool) -> None:
    """Fork a session: the branch shares its reasoning blobs and learned rejections."""
    store = _store()
    info = store.get_session(session_id)
    new = store.branch(info.id, upto_seq=upto, title=title or f"branch of {info.id}")
    if as_json:
        echo_json({"id": new, "parent_id": info.id})
    else:
        click.echo(new)


@sessions.command()
@click.argument("session_id")
@click.option("--api-key", help="API key for the summary call.")
@click.option("--budget", type=int, help="Target context budget in tokens.")
def compress(session_id: str, api_key: str | None, budget: int | None) -> None:
    """Summarise older turns into a checkpoint; kept turns keep every reasoning carrier."""
    from ..agent.runtime import Runtime
    from .progress import working

    runtime = Runtime.load()
    info = runtime.store.get_session(session_id)
    resolved = runtime.route(session=info)
    with working(f"compressing {info.id}: summarising older turns with {resolved.route.key} · {resolved.model}…"):
        line = runtime.compress(info.id, api_key=api_key, budget=budget)
    click.echo(line)


@sessions.command()
@click.argument("session_id")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="File (default: stdout).")
@click.option("--format", "-f", "form", type=click.Choice(["jsonl", "md"]), default="jsonl", show_default=True,
              help="jsonl: the history form `hermes replay` reads back; md: Markdown to read or paste.")
def export(session_id: str, output: Path | None, form: str) -> None:
    """The session as JSONL (the documented history form; `hermes replay FILE` reads it back) or
    as Markdown (--format md)."""
    store = _store()
    info = store.get_session(session_id)
    if form == "md":
        from .markdown import session_markdown

        lines = [session_markdown(info, store.load(info.id)).encode()]
    else:
        lines = list(store.export_jsonl(info.id))
    if output is None:
        sys.stdout.buffer.write(b"".join(lines))
        return
    tmp = output.with_name(output.name + ".tmp")
    tmp.write_bytes(b"".join(lines))
    tmp.chmod(0o600)
    tmp.replace(output)
    click.echo(f"wrote {info.message_count} messages to {output}", err=True)


@sessions.command()
@click.argument("session_id")
@click.option("--yes", "-y", is_flag=True, help="Do not ask.")
def delete(session_id: str, yes: bool) -> None:
    """Delete a session (its branches keep their own copies)."""
    store = _store()
    info = store.get_session(session_id)
    if not yes and not click.confirm(f"delete session {info.id} ({info.message_count} messages)?", default=False):
        click.echo("kept")
        return
    store.delete_session(info.id)
    click.echo(f"deleted {info.id}")
