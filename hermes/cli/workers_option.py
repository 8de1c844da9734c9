"""``--workers N|auto`` and ``--pin`` for the commands that serve a port (``hermes gateway``,
``hermes proxy``).

``auto`` asks for one process per CPU this one may run on; ``--pin`` keeps each process on a
CPU of its own (``hermes.serving.cpus`` says why).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from ..serving.cpus import MAX_WORKERS, cpu_for, pin_to, usable_cpus

__all__ = ["WORKERS", "pin_here", "pin_options"]

F = TypeVar("F", bound=Callable[..., object])


def pin_options(f: F) -> F:
    """``--pin``, and the hidden ``--pin-cpu`` a supervisor gives each worker it starts."""
    f = click.option("--pin-cpu", type=int, hidden=True)(f)
    return click.option("--pin", is_flag=True,
                        help="Keep each process on one CPU of its own (worker i on the i-th CPU this "
                             "command may use): its threads then pass the GIL on that CPU instead of "
                             "waking others (Linux).")(f)


def pin_here(pin: bool, pin_cpu: int | None, workers: int) -> None:
    """Pin this process if it serves alone with ``--pin``, or as a worker its supervisor placed
    on ``pin_cpu``. Call it before the process starts a thread."""
    if pin_cpu is not None or (pin and workers == 1):
        pin_to(cpu_for(0) if pin_cpu is None else pin_cpu)


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
