"""``hermes replay``: a dry run of what the next request to a route would carry, and why —
learned rejections included, so it shows the exact fields the next request sends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ._common import echo_json, resolve_cli, route_table
from .url_option import BASE_URL

__all__ = ["plan_report", "replay"]


def _describe_part(p: Any) -> dict[str, Any]:
    from ..core.messages import Reasoning, part_to_dict
    from ..replay import blob_hash

    if isinstance(p, Reasoning):
        d: dict[str, Any] = {"kind": "reasoning", "text_chars": len(p.text)}
        if p.blob is not None:
            d.update(blob_kind=p.blob_kind, blob_chars=len(p.blob), blob_sha256=blob_hash(p.blob)[:12])
        return d
    return part_to_dict(p)


def plan_report(plan: Any) -> dict[str, Any]:
    """The plan as JSON-able data: per assistant message, exact fields and per-part reasons;
    other messages only where the plan repaired the turn structure around them."""
    from ..core.messages import Reasoning

    out = []
    for m in plan.messages:
        if m.role != "assistant" and not m.decisions:
            continue
        entry: dict[str, Any] = {"index": m.index, "role": m.role, "fields": dict(m.fields)}
        blocks = [_describe_part(p) for p in m.parts if isinstance(p, Reasoning)]
        if blocks:
            entry["reasoning_blocks"] = blocks
        if m.tool_signatures:
            entry["tool_signatures"] = {k: f"{len(v)} chars" for k, v in m.tool_signatures.items()}
        if m.thought_signature:
            entry["thought_signature"] = f"{len(m.thought_signature)} chars"
        entry["decisions"] = [
            {"part": d.part, "action": d.action, "fields": list(d.fields), "reason": d.reason} for d in m.decisions
        ]
        out.append(entry)
    t = plan.target
    return {
        "route": t.route.key, "wire": t.route.wire, "host": t.host, "model": t.model,
        "request_fields": dict(plan.request_fields), "thinking": plan.thinking,
        "notes": list(plan.notes), "messages": out,
    }


def _load_history(source: str) -> tuple[list[Any], Any]:
    """(history, session info or None) from a JSONL file or a stored session id."""
    from ..core.errors import HistoryError, StoreError
    from ..core.messages import load_jsonl

    path = Path(source)
    if path.exists():
        try:
            with path.open("rb") as f:
                return load_jsonl(f, source=str(path)), None
        except OSError as e:
            raise HistoryError(f"{path}: cannot read: {e.strerror}") from None
    from ..config.paths import db_path
    from ..store import open_store

    if not db_path().exists():
        raise HistoryError(f"{source}: no such file or session")
    store = open_store()
    try:
        info = store.get_session(source)
    except StoreError:
        raise HistoryError(f"{source}: no such file or session", hint="`hermes sessions list` shows session ids") from None
    return store.load(info.id), info


def _learned(info: Any, target: Any) -> Any:
    """What earlier rejections taught about ``target``: the session's lessons (when SOURCE is a
    session) plus the global ledger — exactly what the next real request would apply."""
    from ..config.paths import db_path
    from ..rejections import learned_for
    from ..replay import Learned
    from ..store import open_store, store_url

    if not store_url() and not db_path().exists():
        return Learned()
    with open_store() as store:
        return learned_for(store, info.id if info is not None else None, target)


def _values(target: Any) -> Any:
    """The value lessons of ``target`` in the ledger (what the next real request applies)."""
    from ..config.paths import db_path
    from ..rejections import values_for
    from ..store import open_store, store_url

    if not store_url() and not db_path().exists():
        return ()
    with open_store() as store:
        return values_for(store, target)


@click.command()
@click.argument("source")
@click.option("--provider", "-p", help="Target provider / route name.")
@click.option("--model", "-m", help="Target model id (default for a session: the one it last used).")
@click.option("--base-url", "-u", type=BASE_URL, help="Target base URL (decides the route without --provider).")
@click.option("--effort", help="Reasoning effort to plan with.")
@click.option("--no-thinking", is_flag=True, help="Plan as if thinking were off.")
@click.option("--body", "show_body", is_flag=True, help="Print the whole request body the wire would send.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def replay(source: str, provider: str | None, model: str, base_url: str | None, effort: str | None,
           no_thinking: bool, show_body: bool, as_json: bool) -> None:
    """Show what the next request to a route would carry from a history, part by part.

    SOURCE is a JSONL history in the documented form (`hermes sessions export` writes one)
    or a session id (then the target defaults to the route the session last used). The plan
    applies what earlier rejections taught about the target (the session's lessons and the
    global ledger), exactly as the next real request would. Nothing is sent and nothing is
    written.
    """
    from ..replay import Settings, plan_replay

    history, info = _load_history(source)
    if model is None and info is None:
        raise click.UsageError("--model is required when SOURCE is a file")
    if info is not None and (model is None or (provider is None and base_url is None and model == info.model)):
        from ..agent.runtime import choose_route
        from ..config.settings import load_config

        target = choose_route(load_config(), route_table(), provider=provider, model=model, base_url=base_url,
                              session=info)
    else:
        target = resolve_cli(provider, base_url, model or "")
    settings = Settings(thinking=not no_thinking, effort=effort)
    learned = _learned(info, target)
    plan = plan_replay(history, target, learned, settings=settings)
    if show_body:
        from ..agent.provider import get_wire
        from ..rejections import apply_values

        body = get_wire(target.route.wire).to_wire(plan, tools=(), settings=settings, stream=False)
        echo_json(apply_values(body, _values(target)))
        return
    report = plan_report(plan)
    report["learned"] = {"dropped": sorted(learned.dropped), "suppressed_blobs": len(learned.suppressed),
                         "must_echo": learned.echo}
    if as_json:
        echo_json(report)
        return
    import orjson

    click.echo(f"route {report['route']} ({report['wire']}) host {report['host']} model {report['model']}")
    if report["request_fields"]:
        click.echo(f"request fields: {orjson.dumps(report['request_fields']).decode()}")
    taught = report["learned"]
    if taught["dropped"] or taught["suppressed_blobs"] or taught["must_echo"]:
        click.echo("learned from earlier rejections: " + "; ".join(filter(None, (
            f"not sending {', '.join(taught['dropped'])}" if taught["dropped"] else "",
            f"{taught['suppressed_blobs']} signed blob(s) suppressed" if taught["suppressed_blobs"] else "",
            "tool turns must echo reasoning_content" if taught["must_echo"] else ""))))
    for note in report["notes"]:
        click.echo(f"note: {note}")
    for m in report["messages"]:
        click.echo(f"\n#{m['index']} {m['role']}")
        for name, value in m["fields"].items():
            shown = orjson.dumps(value).decode()
            click.echo(f"  {name}: {shown if len(shown) <= 100 else shown[:97] + '...'}")
        for b in m.get("reasoning_blocks", []):
            click.echo(f"  block: {orjson.dumps(b).decode()}")
        for call, sig in m.get("tool_signatures", {}).items():
            click.echo(f"  signature on call {call}: {sig}")
        if m["role"] == "assistant" and not (m["fields"] or m.get("reasoning_blocks") or m.get("tool_signatures")):
            click.echo("  (no reasoning carried)")
        for d in m["decisions"]:
            where = "message" if d["part"] is None else f"part {d['part']}"
            target_fields = f" -> {', '.join(d['fields'])}" if d["fields"] else ""
            click.echo(f"  {where}: {d['action']}{target_fields}: {d['reason']}")
