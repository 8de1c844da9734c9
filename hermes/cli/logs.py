"""``hermes logs``: the request log — which reasoning fields went to which route."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import click

from ..store.requestlog import SHORT_NAMES, carried_summary

__all__ = ["format_record", "logs"]


def format_record(rec: Mapping[str, Any]) -> str:
    """One human line per log record."""
    ts = time.strftime("%H:%M:%S", time.localtime(rec.get("ts", 0)))
    sid = (rec.get("session") or "-")[:12]
    where = f"{rec.get('route')}@{rec.get('host')}/{rec.get('model')}"
    event = rec.get("event")
    if event == "request":
        sent = carried_summary(rec)
        usage = rec.get("usage") or {}
        tokens = usage.get("prompt_tokens") or usage.get("input_tokens") or usage.get("inputTokens")
        tail = f" · {tokens} prompt tokens" if tokens else ""
        return f"{ts} {sid} → {where} step {rec.get('step')} [{sent}] {rec.get('finish')} {rec.get('ms')}ms{tail}"
    if event == "learned":
        return (f"{ts} {sid} ! {where} learned: stop sending {', '.join(rec.get('dropped') or []) or '-'}"
                f" ({rec.get('suppressed', 0)} blob(s) suppressed) after HTTP {rec.get('status')}")
    if event == "proxy":
        return _proxy_line(ts, where, rec)
    if event == "request_failed":
        status = f"HTTP {rec.get('status')}" if rec.get("status") is not None else str(rec.get("kind") or "failed")
        return f"{ts} {sid} ✗ {where} step {rec.get('step')} {status}: {rec.get('error')}"
    return f"{ts} {sid} {event} {where}"


def _proxy_line(ts: str, where: str, rec: Mapping[str, Any]) -> str:
    """A proxied request: per assistant message what was restored, padded or stripped."""
    bits = []
    for m in rec.get("messages") or []:
        what = [f"{verb} {','.join(SHORT_NAMES.get(f, f) for f in m[verb])}" for verb in ("restored", "padded", "stripped")
                if m.get(verb)]
        if m.get("note"):
            what.append(m["note"])
        bits.append(f"#{m.get('index')} {'; '.join(what)}")
    if rec.get("switches"):
        bits.append("switches " + ",".join(rec["switches"]))
    seen = f"{rec.get('recognised', 0)}/{rec.get('assistant_messages', 0)} recognised"
    tail = " · retried once" if rec.get("retried") else ""
    if rec.get("mapped_ids"):
        tail += f" · {rec['mapped_ids']} tool-call id(s) mapped"
    if rec.get("memory"):
        tail += f" · memory {rec['memory']}"
    return (f"{ts} proxy:{rec.get('tenant', '-')[:8]} ⇄ {where} [{seen}; {' | '.join(bits) or 'unchanged'}]"
            f" HTTP {rec.get('status')} {rec.get('ms')}ms{tail}")


@click.command()
@click.option("--follow", "-f", is_flag=True, help="Keep printing new records as they arrive.")
@click.option("--session", "-s", help="Only records of this session (an id or its first characters).")
@click.option("--lines", "-n", default=50, show_default=True, help="How many recent records first.")
@click.option("--json", "as_json", is_flag=True, help="Raw JSON lines.")
def logs(follow: bool, session: str | None, lines: int, as_json: bool) -> None:
    """Show which reasoning fields each request carried (names, counts, lengths, hashes — never
    values, never keys). The log lives in $HERMES_HOME/logs/hermes.log."""
    import orjson

    from ..config.paths import logs_dir
    from ..store.requestlog import LOG_NAME, read_log

    def show(rec: Mapping[str, Any]) -> None:
        from .terminal import printable

        click.echo(orjson.dumps(rec).decode() if as_json else printable(format_record(rec)))

    path = logs_dir() / LOG_NAME
    records = list(read_log(session, path))
    for rec in records[-lines:]:
        show(rec)
    if not follow:
        if not records:
            click.echo(f"no requests logged for session {session}" if session else "no requests logged yet", err=True)
        return
    pos = path.stat().st_size if path.exists() else 0
    try:
        while True:
            time.sleep(0.3)
            if not path.exists():
                continue
            size = path.stat().st_size
            if size < pos:  # rotated
                pos = 0
            if size == pos:
                continue
            with path.open("rb") as f:
                f.seek(pos)
                chunk = f.read()
            complete, _, _rest = chunk.rpartition(b"\n")
            pos += len(complete) + 1 if complete else 0
            for line in complete.splitlines():
                try:
                    rec = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if session is None or str(rec.get("session") or "").startswith(session):
                    show(rec)
    except KeyboardInterrupt:
        pass
