"""``hermes store``: where sessions live, and moving them from state.db to PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["store"]


@click.group()
def store() -> None:
    """The session store: $HERMES_HOME/state.db (default) or PostgreSQL (docs/scale.md)."""


@store.command()
@click.option("--to", "to", required=True, metavar="URL", help="postgresql://user@host:port/dbname")
@click.option("--from", "source", type=click.Path(dir_okay=False, path_type=Path),
              help="The state.db to copy (default: $HERMES_HOME/state.db).")
def migrate(to: str, source: Path | None) -> None:
    """Copy a state.db into PostgreSQL, then verify counts and content hashes.

    Sessions, branches, blobs, the capability ledger and the proxy's reasoning memory
    are copied in one transaction;
    re-running it copies only what is missing (safe after a crash, or to catch up).
    state.db is only read (an older one is first brought to this version's schema, as by
    any hermes command). Then point the gateway at the database:

    \b
    hermes store migrate --to postgresql://hermes@db.internal/hermes
    export HERMES_DATABASE_URL=postgresql://hermes@db.internal/hermes
    """
    from ..config.paths import db_path
    from ..core.errors import StoreError, register_secret
    from ..store.copy import copy_store
    from ..store.db import Store
    from ..store.pg import PgStore
    from ..store.url import check_store_url, url_passwords

    for password in url_passwords(to):
        register_secret(password)
    try:
        check_store_url(to, "it")
    except StoreError as e:  # a usage error (exit 2); the URL is not repeated
        raise click.BadParameter(str(e), param_hint="--to") from None
    path = source or db_path()
    if not path.exists():
        raise StoreError(f"{path} does not exist", hint="pass --from PATH to the state.db to copy")
    with Store(path) as src, PgStore(to) as dst:
        report = copy_store(src, dst)
    click.echo(f"{'table':14} {'state.db':>9} {'postgres':>9}")
    for table, (have, there) in report.counts.items():
        click.echo(f"{table:14} {have:9} {there:9}")
    if not report.ok:
        for problem in report.problems:
            click.echo(f"hermes: mismatch: {problem}", err=True)
        raise StoreError(f"{len(report.problems)} difference(s) between {path} and {dst.url}",
                         hint="nothing was removed from either side; see the lines above")
    click.echo(f"verified: {report.sessions_verified} sessions hash the same on both sides ({dst.url})")
