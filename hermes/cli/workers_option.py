"""``--workers N|auto`` for the commands that serve a port (``hermes gateway``, ``hermes proxy``).

``auto`` asks for one process per CPU this one may run on (``hermes.cpus``).
"""

from __future__ import annotations

import click

from ..cpus import MAX_WORKERS, usable_cpus

__all__ = ["WORKERS"]


class Workers(click.ParamType):
    """A count of processes from 1 to ``MAX_WORKERS``, or ``auto`` (``usable_cpus()``)."""

    name = "N|auto"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "N|auto"  # click would upper-case the name

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            n = value
        elif str(value).strip().lower() == "auto":
            return usable_cpus()
        else:
            try:
                n = int(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is neither a number of processes nor 'auto'", param, ctx)
        if not 1 <= n <= MAX_WORKERS:
            self.fail(f"{n} is not between 1 and {MAX_WORKERS}", param, ctx)
        return n


WORKERS = Workers()
