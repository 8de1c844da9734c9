"""The CPUs this process may use, and keeping a serving process on one of them.

One Python process runs one thread of Python at a time. A gateway process is many turn
threads and an event loop taking turns at that lock; when they run on several CPUs, each
release wakes a thread on another CPU that races for the lock and often loses to the thread
that just let it go, so the hand-overs cost wake-ups and cache misses on both sides. Kept on
one CPU, the hand-over is an ordinary switch on that CPU. ``hermes gateway --pin`` (and
``hermes proxy --pin``, where it measured no different: a proxy's work is on its event loop)
does that per process, each worker on a CPU of its own (docs/gateway.md, "One process or
several").
"""

from __future__ import annotations

import os

from ..core.errors import ConfigError

__all__ = ["MAX_WORKERS", "cpu_for", "pin_to", "usable_cpus"]

MAX_WORKERS = 256


def usable_cpus() -> int:
    """How many CPUs this process may be scheduled on: its affinity mask, which ``taskset``
    and a container's cpuset narrow (``os.cpu_count`` counts the whole machine's)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not every platform has affinity masks
        n = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, n))


def cpu_for(worker: int) -> int:
    """The CPU worker ``worker`` (0 for a lone process) is pinned to: the i-th of this
    process's affinity mask, round again when there are more workers than CPUs."""
    if not hasattr(os, "sched_getaffinity"):
        raise ConfigError("--pin needs CPU affinity, which this platform does not offer (Linux does)")
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[worker % len(cpus)]


def pin_to(cpu: int) -> None:
    """Keep this process, and every thread it starts from now on, on ``cpu``. Call it before
    the process starts threads: one started earlier keeps the mask it had."""
    try:
        os.sched_setaffinity(0, {cpu})
    except (AttributeError, OSError) as e:
        raise ConfigError(f"--pin: cannot run on CPU {cpu}: {getattr(e, 'strerror', None) or e}") from None
