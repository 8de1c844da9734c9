"""``hermes ui``: the web view of this machine's sessions, on a loopback port (docs/ui.md)."""

from __future__ import annotations

import click

__all__ = ["ui"]


@click.command()
@click.option("--port", default=8643, show_default=True, type=click.IntRange(0, 65535),
              help="Loopback port (0 = any free port; the URL is printed).")
@click.option("--open", "open_browser", is_flag=True, help="Also open the URL in a browser.")
def ui(port: int, open_browser: bool) -> None:
    """Browse the sessions in $HERMES_HOME: timelines, what every request carried, a live tail.

    \b
    Serves http://127.0.0.1:PORT/ui/ to this machine only: it listens on loopback and answers
    loopback requests with a loopback Host header only. The pages only read state.db and the
    request log. `hermes gateway` serves the same pages at /ui behind its token.
    """
    import sys

    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import RedirectResponse
    from starlette.routing import Mount, Route

    from ..serving.listen import bind
    from ..store import open_store
    from ..ui import create_ui

    store = open_store()
    sock = bind("127.0.0.1", port)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/ui/"

    async def root(request: object) -> RedirectResponse:
        return RedirectResponse("/ui/", 303)

    app = Starlette(routes=[Route("/", root), Mount("/ui", app=create_ui(store))])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                           proxy_headers=False, timeout_graceful_shutdown=2))
    original_startup = server.startup

    async def startup(sockets: list | None = None) -> None:  # type: ignore[type-arg]
        await original_startup(sockets=sockets)
        if server.started:
            click.echo(url)
            click.echo("hermes ui: loopback only; Ctrl-C stops", err=True)
            sys.stdout.flush()
            if open_browser:
                import webbrowser

                webbrowser.open(url)

    server.startup = startup  # type: ignore[method-assign]
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # Ctrl-C is how it stops: not an abort
        pass
    finally:
        store.close()
