"""Run the ``hermes`` CLI with a pause inside every ``append_turn`` transaction (a fault seam).

    python bench/commit_delay.py SECONDS chat -q "..." --resume ID
    python bench/commit_delay.py SECONDS gateway --port 0 ...   # HERMES_DATABASE_URL: PostgreSQL
    python bench/commit_delay.py SECONDS proxy --port 0 ...     # holds a proxy recording open

The crash loop (``bench/crash_loop.py``, ``tests/test_crash_loop.py``) starts turns through
this launcher when it aims a SIGKILL at a commit, and ``tests/test_scale.py`` / ``tests/test_proxy_scale.py``
start the gateway / proxy worker they kill mid-commit through it: the turn's rows are written and COMMIT has not
run yet for SECONDS, so the kill lands mid-commit. Both stores are wrapped (SQLite's ``Store``
and, when psycopg is installed, ``PgStore``). The pause lives here, in the harness that needs
it, not in the product.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout, not an installed copy

from hermes.store.db import Store

_DELAYED = ("append a turn", "record in the proxy memory")
"""The transactions held open: a step's rows (both stores), a proxy recording (PostgreSQL)."""


def _delayed(original: Any, delay: float) -> Any:
    """``original`` (a store's ``_write``) with a sleep after an appended turn's rows, before COMMIT."""

    @contextmanager
    def delayed(self: Any, what: str, **kw: Any) -> Iterator[Any]:
        with original(self, what, **kw) as c:
            yield c
            if what in _DELAYED:
                time.sleep(delay)

    return delayed


def install(delay: float) -> None:
    """Wrap ``Store._write`` (and ``PgStore._write``) so a turn's transaction sleeps after its
    rows, before COMMIT."""
    Store._write = _delayed(Store._write, delay)  # type: ignore[method-assign]
    try:
        from hermes.store.pg import PgStore
    except ImportError:  # no psycopg: only SQLite to wrap
        return
    PgStore._write = _delayed(PgStore._write, delay)  # type: ignore[method-assign]


def main() -> None:
    delay, args = float(sys.argv[1]), sys.argv[2:]
    install(delay)
    from hermes.cli import main as cli_main

    sys.argv = ["hermes", *args]
    cli_main()


if __name__ == "__main__":
    main()
