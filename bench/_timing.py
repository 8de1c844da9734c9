"""Timing helpers shared by the benchmark scripts: best-of-N wall time, same run, same machine."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Mapping


def best_of(fn: Callable[[], object], *, runs: int = 5) -> float:
    """The fastest of ``runs`` calls, in seconds (the least disturbed measurement)."""
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def report(name: str, ours: float, baseline: float, *, unit: str = "ms", target: float | None = None) -> None:
    scale = 1000.0 if unit == "ms" else 1.0
    ratio = ours / baseline
    goal = f"  (target ≤ {target:g}×)" if target else ""
    print(f"{name}: ours {ours * scale:.1f} {unit}, baseline {baseline * scale:.1f} {unit}{goal}")
    print(f"{name} ratio {ratio:.2f}")


def installed_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a timed child ``python``: bytecode caching on, as for an installed
    package (pip compiles ``.pyc`` files at install), whatever this shell says.

    With ``PYTHONDONTWRITEBYTECODE`` set (as in some CI and sandbox shells) a source checkout is
    compiled again by every process — ~10 % of a ``hermes chat -q`` run's instructions — which
    no installed ``hermes`` pays. The cache goes to one directory under the temp dir
    (``PYTHONPYCACHEPREFIX``), so the source tree gets no ``__pycache__``; the first run fills it.
    """
    env = dict(os.environ if base is None else base)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "hermes-bench-pycache")
    return env
