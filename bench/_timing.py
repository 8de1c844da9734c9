"""Timing helpers shared by the benchmark scripts: best-of-N wall time, same run, same machine."""

from __future__ import annotations

import time
from collections.abc import Callable


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
