"""``hermes gateway``: serve Hermes sessions over HTTP (see docs/gateway.md)."""

from __future__ import annotations

import click

from .workers_option import WORKERS, pin_here, pin_options

__all__ = ["gateway"]


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. Anything but loopback needs a token.")
@click.option("--port", default=8642, show_default=True, type=click.IntRange(0, 65535),
              help="Port (0 = any free port; the chosen one is printed).")
@click.option("--max-body", default=1 << 20, show_default=True, type=click.IntRange(1024),
              help="Largest request body in bytes (413 beyond).")
@click.option("--lock-wait", default=30.0, show_default=True, type=click.FloatRange(0),
              help="Seconds a turn waits for its session before 409 busy.")
@click.option("--lock-ttl", default=30.0, show_default=True, type=click.FloatRange(1),
              help="Seconds a session lock outlives a crashed gateway (renewed while a turn runs).")
@click.option("--workers", default="1", show_default=True, type=WORKERS,
              help="Processes serving this port, or 'auto' (one per CPU this process may use). One "
                   "process runs one thread of Python at a time; all share the store (docs/scale.md).")
@click.option("--threads", default=64, show_default=True, type=click.IntRange(1),
              help="Turns running at once in each process.")
@click.option("--listen-fd", type=int, hidden=True)
@pin_options
@click.option("--max-steps", type=click.IntRange(1, 200), help="Model calls per user turn (default from config).")
@click.option("--header-timeout", default=10.0, show_default=True, type=click.FloatRange(0.1),
              help="Seconds a connection has to send a request's headers (slow clients are closed).")
@click.option("--body-timeout", default=30.0, show_default=True, type=click.FloatRange(0.1),
              help="Seconds a request body has to arrive (408 after).")
@click.option("--max-connections", default=1024, show_default=True, type=click.IntRange(1),
              help="Open connections at once; a new one beyond evicts the longest-waiting "
                   "connection that has not sent its headers yet.")
@click.option("--allow-base-url", "allow_base_urls", multiple=True, metavar="URL",
              help="A base URL clients may point a session at, besides each route's default "
                   "(repeatable; adds to [gateway] allowed_base_urls). The route's key is sent there.")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="HOST",
              help="A Host header to accept besides loopback names and --host (repeatable; '*' = any).")
@click.option("--allow-read", "allow_read", multiple=True, metavar="PATH",
              type=click.Path(exists=True, file_okay=False),
              help="Let tools read this directory besides the working directory (repeatable).")
@click.option("--log-level", default="warning", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
def gateway(host: str, port: int, max_body: int, lock_wait: float, lock_ttl: float, workers: int, threads: int,
            listen_fd: int | None, pin: bool, pin_cpu: int | None, max_steps: int | None,
            header_timeout: float, body_timeout: float, max_connections: int,
            allow_base_urls: tuple[str, ...], allow_hosts: tuple[str, ...], allow_read: tuple[str, ...],
            log_level: str) -> None:
    """Serve Hermes sessions over HTTP: every turn is loaded from the store and committed there.

    \b
    Auth: Authorization: Bearer $HERMES_GATEWAY_TOKEN (or [gateway] token in config.toml).
    Provider keys come from this process's environment, never from requests.

    \b
    hermes gateway --port 8642
    curl -s localhost:8642/v1/sessions --json '{"provider":"deepseek","model":"deepseek-v4"}'
    curl -s localhost:8642/v1/sessions/ID/messages --json '{"content":"hi"}'

    \b
    Only the route's default base URL, or one allowed with --allow-base-url, can be
    named by a client; tools stay in the working directory (see docs/security.md).

    \b
    Many busy sessions on one machine: a process per CPU, one state.db (docs/gateway.md).
    hermes gateway --workers auto

    \b
    Many workers, many hosts: one PostgreSQL store, one lease per session (docs/scale.md).
    HERMES_DATABASE_URL=postgresql://hermes@db/hermes hermes gateway --workers 4
    """
    from ..config.settings import load_config
    from ..config.urlpolicy import normalise_allowlist
    from ..core.errors import HermesError
    from ..gateway.app import GatewayOptions
    from ..gateway.server import check_bind, gateway_token, serve
    from ..store import open_store

    config = load_config()
    try:
        allowed = normalise_allowlist(allow_base_urls, "it")
    except (ValueError, HermesError) as e:  # a usage error (exit 2), the URL not repeated
        hint = f"; {e.hint}" if isinstance(e, HermesError) and e.hint else ""
        raise click.BadParameter(f"{e}{hint}", param_hint="--allow-base-url") from None
    options = GatewayOptions(token=gateway_token(config), max_body=max_body, lock_ttl_s=lock_ttl,
                             lock_wait_s=lock_wait, workers=threads, max_steps=max_steps,
                             allowed_base_urls=allowed, allowed_hosts=allow_hosts, bound_host=host,
                             header_timeout_s=header_timeout, body_timeout_s=body_timeout,
                             max_connections=max_connections, read_roots=allow_read)
    check_bind(host, options.token)  # before the store is even opened
    pin_here(pin, pin_cpu, workers)  # before any thread is started
    if workers > 1 and listen_fd is None:
        from ..serving.workers import run_workers

        open_store(config).close()  # a bad store URL or schema fails once, here, not in N workers
        repeated = [*(a for u in allow_base_urls for a in ("--allow-base-url", u)),
                    *(a for h in allow_hosts for a in ("--allow-host", h)),
                    *(a for r in allow_read for a in ("--allow-read", r))]
        run_workers(workers, host, port, ["--max-body", str(max_body), "--lock-wait", str(lock_wait),
                                          "--lock-ttl", str(lock_ttl), "--threads", str(threads),
                                          "--header-timeout", str(header_timeout),
                                          "--body-timeout", str(body_timeout),
                                          "--max-connections", str(max_connections),
                                          "--log-level", log_level, *repeated,
                                          *(["--max-steps", str(max_steps)] if max_steps else [])], pin=pin)
        return
    import socket

    sock = None if listen_fd is None else socket.socket(fileno=listen_fd)
    store = open_store(config)
    try:
        serve(store, config, host=host, port=port, options=options, log_level=log_level, sock=sock)
    finally:
        store.close()
