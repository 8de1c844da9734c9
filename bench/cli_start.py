"""Cold start: `hermes --help` against `python -c pass`, median of several runs, same machine.

    python bench/cli_start.py         # prints `cli_start ratio X.XX` (target ≤ 3×)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import installed_env, report


def median_run(cmd: list[str], runs: int = 9) -> float:
    env = installed_env()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)  # fills the .pyc cache
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    baseline = median_run([sys.executable, "-c", "pass"])
    ours = median_run([sys.executable, "-m", "hermes", "--help"])
    report("cli_start", ours, baseline, target=3)


if __name__ == "__main__":
    main()
