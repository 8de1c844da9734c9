"""``--workers N|auto`` for the commands that serve a port (``hermes gateway``, ``hermes proxy``).

One process runs one thread of Python at a time: past a few dozen busy sessions a single
gateway or proxy is bound by that, not by the machine's cores (docs/gateway.md, "One process
or several"). ``auto`` asks for one process per CPU this one may run on.
"""

from __future__ import annotations

import os

import click

__all__ = ["MAX_WORKERS", "WORKERS", "usable_cpus"]

MAX_WORKERS = 256


def usable_cpus() -> int:
    """The CPUs this process may be scheduled on: its affinity mask, which ``taskset`` and a
    container's cpuset narrow (``os.cpu_count`` counts the whole machine's)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not every platform has affinity masks
        n = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, n))


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
