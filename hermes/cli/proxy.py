"""``hermes proxy``: put reasoning right for any OpenAI-compatible client (see docs/proxy.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from ._common import echo_json
from .url_option import url_problem
from .workers_option import WORKERS, pin_here, pin_options

__all__ = ["proxy"]


def _upstreams(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        route, sep, url = v.partition("=")
        if not sep or not route.strip():  # the value is not repeated: its URL may hold a password
            raise click.BadParameter("expected ROUTE=URL, e.g. deepseek=https://api.deepseek.com",
                                     param_hint="--upstream")
        problem = url_problem(url.strip())
        if problem:
            raise click.BadParameter(f"the URL for {route.strip()!r}: {problem}", param_hint="--upstream")
        out[route.strip().lower()] = url.strip()
    return out


@click.command()
@click.option("--host", help="Address to bind (default 127.0.0.1, or [proxy] host).")
@click.option("--port", type=click.IntRange(0, 65535), help="Port (default 8787, or [proxy] port; 0 = any free).")
@click.option("--upstream", "upstream", multiple=True, metavar="ROUTE=URL",
              help="Forward ROUTE to URL instead of the route's base URL (repeatable).")
@click.option("--memory-mb", type=click.FloatRange(0.001), help="Reasoning memory per tenant in MB (default 32).")
@click.option("--memory-days", type=click.FloatRange(0.0001), help="Days a recording can be restored (default 7).")
@click.option("--max-body", default=64 << 20, show_default=True, type=click.IntRange(1024),
              help="Largest request body in bytes (413 beyond).")
@click.option("--max-upstream-body", default=64 << 20, show_default=True, type=click.IntRange(1024),
              help="Largest upstream answer in bytes the proxy reads or relays (502, or a cut stream, beyond).")
@click.option("--env-keys", is_flag=True,
              help="Add the route's key from this environment when a client sends none (loopback only).")
@click.option("--dry-run", "dry_run", type=click.Path(dir_okay=False, path_type=Path),
              help="Print what the proxy would send for this request body (JSON file, '-' = stdin) and exit.")
@click.option("--route", help="With --dry-run: the route the request is for (the /<route> of its URL).")
@click.option("--api-key-env", metavar="VAR",
              help="With --dry-run: environment variable holding the client's key (picks the tenant).")
@click.option("--workers", default="1", show_default=True, type=WORKERS,
              help="Processes serving this port, or 'auto' (one per CPU this process may use); they "
                   "share the memory in the store (docs/scale.md).")
@click.option("--listen-fd", type=int, hidden=True)
@pin_options
@click.option("--log-level", default="warning", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
def proxy(host: str | None, port: int | None, upstream: tuple[str, ...], memory_mb: float | None,
          memory_days: float | None, max_body: int, max_upstream_body: int, env_keys: bool, dry_run: Path | None,
          route: str | None,
          api_key_env: str | None, workers: int, listen_fd: int | None, pin: bool, pin_cpu: int | None,
          log_level: str) -> None:
    """An OpenAI Chat Completions proxy that gives every assistant message back its reasoning.

    Point a client's base URL at http://127.0.0.1:8787/<route> (any row of `hermes routes`,
    e.g. /deepseek, /openrouter, /gemini-openai, /kimi) and keep its own API key. Requests are
    forwarded unchanged except the reasoning of assistant messages, restored in the form the
    route takes; responses come back unchanged. `hermes logs -f` shows what was restored.

    \b
    hermes proxy --upstream deepseek=https://api.deepseek.com
    OPENAI_BASE_URL=http://127.0.0.1:8787/deepseek OPENAI_API_KEY=$DEEPSEEK_API_KEY my-client
    hermes proxy --dry-run body.json --route deepseek --api-key-env DEEPSEEK_API_KEY

    \b
    Many workers, many hosts: the memory lives in the session store (docs/scale.md).
    HERMES_DATABASE_URL=postgresql://hermes@db/hermes hermes proxy --workers 4
    """
    from ..config.paths import routes_path
    from ..config.settings import load_config
    from ..proxy import Bounds, ProxyOptions, open_memory
    from ..routing.resolve import load_table
    from ..store import Store, open_store
    config = load_config()
    cfg = config.proxy
    upstreams = {**cfg.upstream, **_upstreams(upstream)}  # config.toml's were checked as it loaded
    bounds = Bounds(max_bytes=int((memory_mb or cfg.memory_mb) * (1 << 20)),
                    max_age_s=(memory_days or cfg.memory_days) * 86400.0)
    bound = host or cfg.host
    options = ProxyOptions(upstreams=upstreams, max_body=max_body, max_upstream_body=max_upstream_body,
                           env_keys=env_keys,
                           table=load_table(routes_path()), bound_host=bound,
                           allowed_hosts=config.allowed_hosts, allowed_origins=config.allowed_origins)
    if dry_run is not None:
        if not route:
            raise click.UsageError("--dry-run needs --route (the /<route> the client's base URL names)")
        _dry_run(dry_run, route, api_key_env, options, bounds)
        return
    from ..proxy.server import check_env_keys, serve

    check_env_keys(bound, env_keys)
    pin_here(pin, pin_cpu, workers)  # before any thread is started
    port = cfg.port if port is None else port
    if workers > 1 and listen_fd is None:
        from ..serving.workers import run_workers

        open_store(config).close()  # a bad store URL or schema fails once, here, not in N workers
        run_workers(workers, bound, port, [
            *(a for u in upstream for a in ("--upstream", u)), "--max-body", str(max_body),
            "--max-upstream-body", str(max_upstream_body),
            *(["--memory-mb", str(memory_mb)] if memory_mb else []),
            *(["--memory-days", str(memory_days)] if memory_days else []),
            *(["--env-keys"] if env_keys else []), "--log-level", log_level], command="proxy", suffix="/<route>",
            pin=pin)
        return
    import socket

    store = open_store(config)  # learned capabilities, and the memory next to the sessions
    memory = open_memory(store, bounds)
    # several processes share the memory (--workers, or several hosts on PostgreSQL): a turn must
    # be in the store before its client can send the next request, to whichever worker
    options.durable_first = listen_fd is not None or not isinstance(store, Store)
    try:
        serve(memory, store, host=bound, port=port, options=options, log_level=log_level,
              sock=None if listen_fd is None else socket.socket(fileno=listen_fd))
    finally:
        memory.close()
        store.close()


def _dry_run(path: Path, route: str, key_env: str | None, options: Any, bounds: Any) -> None:
    import sys

    import orjson

    from ..core.errors import HistoryError
    from ..proxy import open_memory, tenant_of
    from ..proxy.app import prepare, route_row
    from ..rejections import learned_for
    from ..routing.resolve import resolve
    from ..serving.http import ApiError
    from ..store import open_store

    try:
        raw = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
    except OSError as e:
        raise HistoryError(f"{path}: cannot read: {e.strerror}") from None
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise HistoryError(f"{path}: not JSON: {e}") from None
    if not isinstance(body, dict) or not isinstance(body.get("model"), str) or not body["model"]:
        raise HistoryError(f"{path}: expected a chat-completions request body with a 'model'")
    headers: dict[str, str] = {}
    if key_env:
        key = os.environ.get(key_env)
        if not key:
            raise click.UsageError(f"--api-key-env {key_env}: that variable is not set")
        headers["authorization"] = f"Bearer {key}"
    try:
        row, upstream = route_row(route, options)
    except ApiError as e:
        raise click.UsageError(e.message) from None
    store = open_store()
    memory = open_memory(store, bounds)
    try:
        target = resolve(row.key, upstream, str(body["model"]), table=options.table)
        tenant = tenant_of(headers, target.route.key)
        rw = prepare(body, target, tenant, memory.recall, learned_for(store, None, target))
    finally:
        memory.close()
        store.close()
    echo_json({"route": target.route.key, "upstream": f"{upstream}/chat/completions", "model": target.model,
               "tenant": tenant[:10] if tenant else "none", "changed": rw.body is not None, **rw.summary(),
               "body": rw.body if rw.body is not None else body})
