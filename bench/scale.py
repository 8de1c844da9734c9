"""Scale-out: gateway turns/s and added p99 latency, SQLite x 1 process vs PostgreSQL x 1, 2, 4.

Setup: the ``openai-responses`` emulator in this process (zero latency), a throw-away
PostgreSQL server started here (``hermes.store.pgcluster``, fsync on with
``synchronous_commit=off`` — the promise SQLite's WAL + ``synchronous=NORMAL`` makes), and for
each configuration a fresh ``hermes gateway --workers W`` on a fresh store. 32 sessions x
TURNS turns posted concurrently; a turn = user message, a tool call, a tool result, an answer
(two model calls, two step commits, one lease).

Figures, all from this one run:

* **turns/s** and **p99** per configuration, and **added p99** = gateway p99 minus a direct
  ``Agent.run_turn`` p99 (32 threads on SQLite in one process, no HTTP, no lease) — what the
  gateway, its lease and its database add;
* **store cost per turn**: one thread running a turn's store work (lease, load, two step
  commits, release) against each backend, no model calls — the database's own share.

On a 2-core machine every worker, the database server, the emulator and the clients share
two cores, so more workers cannot add throughput here; the point is the shape of the curve
and the per-turn database cost. Last line: ``scale ratio X`` = PostgreSQL x 1 turns/s over
SQLite x 1 turns/s.

Run: ``PYTHONPATH=. python bench/scale.py [--turns 10] [--workers 1,2,4]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gateway import KEY, MODEL, ROUTE, pct, run_direct, run_gateway, start_gateway

SESSIONS = 32


def store_cost(store: Any, turns: int = 100, per_session: int = 20) -> float:
    """Milliseconds of store work per gateway turn on ``store`` (no model, no HTTP): lease,
    load, two step commits, release — on sessions of up to ``per_session`` turns, so the
    figure is a turn's cost, not a long history's load."""
    from hermes.messages import Message, Reasoning, RouteKey, Text, ToolCall, ToolResult

    origin = RouteKey(ROUTE, "127.0.0.1", MODEL, "openai_responses")
    started = time.perf_counter()
    for n in range(turns):
        if n % per_session == 0:
            sid = store.create_session(provider=ROUTE, model=MODEL)
        owner = f"bench:{n}"
        store.acquire_lease(sid, owner, 30)
        store.load(sid)
        store.append_turn(sid, [Message.user(f"turn {n}"), Message("assistant", (
            Reasoning(f"thinking {n}", origin, blob=f"enc-{n}" * 40, blob_kind="openai.encrypted"),
            ToolCall(f"c{n}", "list_dir", "{}"))), Message("tool", (ToolResult(f"c{n}", "a\nb"),))])
        store.append_turn(sid, [Message("assistant", (Text(f"answer {n}"),))])
        store.release_lock(sid, owner)
    return (time.perf_counter() - started) / turns * 1000


def measure(label: str, home: Path, emu_url: str, turns: int, workers: int, url: str | None) -> dict[str, Any]:
    env = {"HERMES_DATABASE_URL": url} if url else {}
    root = emu_url.split("/" + ROUTE, 1)[0]  # the emulator's root: the base URL clients may name
    proc, base = start_gateway(home, root, "--workers", str(workers), env=env)
    try:
        run_gateway(base, emu_url, workers * 2, 3)  # warm-up: every worker imports and connects
        lat, wall = run_gateway(base, emu_url, SESSIONS, turns)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return {"label": label, "workers": workers, "tps": len(lat) / wall, "p50": pct(lat, 50) * 1000,
            "p99": pct(lat, 99) * 1000}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=10, help="turns per session (default 10)")
    ap.add_argument("--workers", default="1,2,4", help="PostgreSQL worker counts (default 1,2,4)")
    args = ap.parse_args()
    from hermes.emulate import Emulator
    from hermes.store import Store
    from hermes.store.pg import PgStore
    from hermes.store.pgcluster import Cluster

    root = Path(tempfile.mkdtemp(prefix="hermes-scale-"))
    os.environ["OPENAI_API_KEY"] = KEY
    rows = []
    with Emulator([ROUTE]) as emu, Cluster(durable=True) as pg:
        emu_url = emu.url(ROUTE)
        home = root / "direct"
        home.mkdir()
        d_lat, _ = run_direct(emu_url, home, SESSIONS, args.turns)
        d_p99 = pct(d_lat, 99) * 1000

        home = root / "sqlite"
        home.mkdir()
        rows.append(measure("SQLite", home, emu_url, args.turns, 1, None))
        for w in (int(x) for x in args.workers.split(",")):
            home = root / f"pg{w}"
            home.mkdir()
            rows.append(measure("PostgreSQL", home, emu_url, args.turns, w, pg.create_database(f"bench_{w}")))

        with Store(root / "cost.db") as s:
            sqlite_ms = store_cost(s)
        with PgStore(pg.create_database("bench_cost")) as s:
            pg_ms = store_cost(s)

    print(f"scale bench: {ROUTE} emulator (zero latency), {SESSIONS} concurrent sessions x {args.turns} turns,"
          f" 2 model calls + 2 commits + 1 lease per turn; {os.cpu_count()} cores")
    print(f"{'store':>11} {'workers':>8} {'turns/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'added p99':>10}")
    for r in rows:
        print(f"{r['label']:>11} {r['workers']:>8} {r['tps']:>8.1f} {r['p50']:>8.1f} {r['p99']:>8.1f}"
              f" {r['p99'] - d_p99:>10.1f}")
    print(f"(added p99 = gateway p99 minus direct Agent.run_turn p99 on SQLite, {d_p99:.1f} ms, same run)")
    print(f"store cost per turn (lease + load + 2 commits + release, one thread): SQLite {sqlite_ms:.2f} ms,"
          f" PostgreSQL {pg_ms:.2f} ms")
    print(f"scale ratio {rows[1]['tps'] / rows[0]['tps']:.2f}")


if __name__ == "__main__":
    main()
