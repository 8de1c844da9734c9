"""Hot sessions where they matter: gateway turns on a stored 2,000-turn session.

One ``python -m hermes gateway`` subprocess, route ``deepseek`` on the local emulator (zero
latency), a session of 2,000 turns stored beforehand (as in ``chat_turn.py``; config raises
``context_budget`` so the whole history is sent). The first turn finds the session cold (full
load, every message planned, priced and rendered); the next turns find it hot (nothing
loaded, only the new messages built). Figures are the gateway process's CPU time per turn,
which does not move with the load of a shared machine, and the wall time.

    python bench/gateway_hot.py [--turns 2000] [--hot 3]

Last line: ``gateway_hot ratio X.XX`` = hot turn CPU / cold turn CPU.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from chat_turn import KEY, ROUTE, populate
from gateway import cpu_seconds, peak_rss_mb, start_gateway


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--hot", type=int, default=3, help="hot turns after the cold one")
    args = ap.parse_args()
    from hermes.emulate import Emulator

    with tempfile.TemporaryDirectory() as d, Emulator([ROUTE]) as emu:
        home = Path(d)
        url = emu.url(ROUTE)
        sid = populate(home / "state.db", url, args.turns)
        (home / "config.toml").write_text("context_budget = 100000000\n")
        os.environ["DEEPSEEK_API_KEY"] = KEY
        proc, base = start_gateway(home, url)
        try:
            rows = []
            with httpx.Client(base_url=base, timeout=600) as c:
                for i in range(1 + args.hot):
                    cpu, t0 = cpu_seconds(proc.pid), time.perf_counter()
                    r = c.post(f"/v1/sessions/{sid}/messages", json={"content": f"one more question {i}"})
                    wall, cpu = time.perf_counter() - t0, cpu_seconds(proc.pid) - cpu
                    if r.status_code != 200:
                        raise SystemExit(f"gateway turn failed: {r.status_code} {r.text}")
                    rows.append((wall, cpu))
            rss = peak_rss_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    (cold_wall, cold_cpu), hot = rows[0], rows[1:]
    hot_cpu = min(c for _, c in hot)
    print(f"gateway_hot: {args.turns} stored turns, route {ROUTE} (emulator), a turn = 2 model calls")
    print(f"  cold turn (first in this gateway)   CPU {cold_cpu * 1e3:8.1f} ms  wall {cold_wall * 1e3:8.1f} ms")
    for n, (w, c) in enumerate(hot, 1):
        print(f"  hot turn {n}                          CPU {c * 1e3:8.1f} ms  wall {w * 1e3:8.1f} ms")
    if rss:
        print(f"gateway_hot rss_mb {rss:.1f}  (gateway peak RSS holding the session hot)")
    print(f"gateway_hot ratio {hot_cpu / cold_cpu:.3f}  (hot turn CPU / cold turn CPU)")


if __name__ == "__main__":
    main()
