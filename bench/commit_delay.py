"""Run the ``hermes`` CLI with a pause inside every ``append_turn`` transaction (a fault seam).

    python bench/commit_delay.py SECONDS chat -q "..." --resume ID

The crash loop (``bench/crash_loop.py``, ``tests/test_crash_loop.py``) starts turns through
this launcher when it aims a SIGKILL at a commit: the turn's rows are written and COMMIT has
not run yet for SECONDS, so the kill lands mid-commit. The pause lives here, in the harness
that needs it, not in the product.
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


def install(delay: float) -> None:
    """Wrap ``Store._write`` so a turn's transaction sleeps after its rows, before COMMIT."""
    original = Store._write

    @contextmanager
    def delayed(self: Store, what: str) -> Iterator[Any]:
        with original(self, what) as c:
            yield c
            if what == "append a turn":
                time.sleep(delay)

    Store._write = delayed  # type: ignore[method-assign]


def main() -> None:
    delay, args = float(sys.argv[1]), sys.argv[2:]
    install(delay)
    from hermes.cli import main as cli_main

    sys.argv = ["hermes", *args]
    cli_main()


if __name__ == "__main__":
    main()
