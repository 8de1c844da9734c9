"""Scale-out: gateway turns/s and added p99 latency, SQLite x 1 process vs PostgreSQL x 1, 2, 4.

Setup: the ``openai-responses`` emulator in this process (zero latency), a throw-away
PostgreSQL server started here (``tests/_pgcluster.py``, fsync on with
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

The **proxy rows** do the same for ``hermes proxy --workers W`` in front of the ``deepseek``
emulator: 32 clients, each a tool-loop conversation that drops reasoning from its history
(so every request restores every earlier turn from the memory, and records the new one
before the client sees its end when the memory is shared); requests/s and p99 per
configuration, and the **memory cost per request** (one ``remember`` plus one ``recall`` of
the conversation's keys, one thread) per backend.

On a 2-core machine every worker, the database server, the emulator and the clients share
two cores, so more workers cannot add throughput here; the point is the shape of the curve
and the per-turn database cost. Last lines: ``scale ratio X`` = PostgreSQL x 1 turns/s over
SQLite x 1 turns/s; ``scale proxy_ratio X`` the same for proxy requests/s.

Run: ``PYTHONPATH=. python bench/scale.py [--turns 10] [--workers 1,2,4] [--only gateway|proxy]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the PostgreSQL cluster is test code
from gateway import KEY, MODEL, ROUTE, pct, run_direct, run_gateway, start_gateway

SESSIONS = 32


def store_cost(store: Any, turns: int = 100, per_session: int = 20) -> float:
    """Milliseconds of store work per gateway turn on ``store`` (no model, no HTTP): lease,
    load, two step commits, release — on sessions of up to ``per_session`` turns, so the
    figure is a turn's cost, not a long history's load."""
    from hermes.core.messages import Message, Reasoning, RouteKey, Text, ToolCall, ToolResult

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
        lat, wall, _ = run_gateway(base, emu_url, SESSIONS, turns)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return {"label": label, "workers": workers, "tps": len(lat) / wall, "p50": pct(lat, 50) * 1000,
            "p99": pct(lat, 99) * 1000}


PROXY_ROUTE, PROXY_MODEL = "deepseek", "deepseek-v4-pro"
PROXY_TOOLS = [{"type": "function", "function": {"name": "list_files", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]


def start_proxy(home: Path, upstream: str, workers: int, url: str | None) -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "HERMES_HOME": str(home), **({"HERMES_DATABASE_URL": url} if url else {})}
    err = home / f"proxy-{time.monotonic_ns()}.err"
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "proxy", "--port", "0", "--workers", str(workers),
                             "--upstream", f"{PROXY_ROUTE}={upstream}"], env=env,
                            stdout=subprocess.DEVNULL, stderr=err.open("wb"))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = err.read_text()
        if "listening on " in text:
            return proc, text.split("listening on ", 1)[1].split()[0].replace("<route>", PROXY_ROUTE)
        if proc.poll() is not None:
            sys.exit(f"proxy did not start: {text}")
        time.sleep(0.05)
    proc.kill()
    sys.exit("proxy did not start in 60 s")


def run_proxy(base: str, n: int, questions: int) -> tuple[list[float], float]:
    """``n`` concurrent tool-loop conversations through the proxy, reasoning dropped by the client."""

    def client(i: int) -> list[float]:
        out: list[float] = []
        messages: list[dict[str, Any]] = []
        with httpx.Client(headers={"authorization": f"Bearer sk-bench-{i % 8}"}, timeout=120) as c:
            for q in range(questions):
                messages.append({"role": "user", "content": f"client {i} question {q}: list the files"})
                for _ in range(4):
                    t = time.perf_counter()
                    r = c.post(f"{base}/chat/completions",
                               json={"model": PROXY_MODEL, "messages": messages, "tools": PROXY_TOOLS})
                    out.append(time.perf_counter() - t)
                    if r.status_code != 200:
                        raise SystemExit(f"proxy request failed: {r.status_code} {r.text}")
                    msg = r.json()["choices"][0]["message"]
                    messages.append({k: msg[k] for k in ("role", "content", "tool_calls") if k in msg})
                    if not msg.get("tool_calls"):
                        break
                    messages.extend({"role": "tool", "tool_call_id": x["id"], "content": "README.md"}
                                    for x in msg["tool_calls"])
        return out

    started = time.perf_counter()
    with ThreadPoolExecutor(n) as pool:
        lat = [x for xs in pool.map(client, range(n)) for x in xs]
    return lat, time.perf_counter() - started


def measure_proxy(label: str, home: Path, upstream: str, questions: int, workers: int,
                  url: str | None) -> dict[str, Any]:
    proc, base = start_proxy(home, upstream, workers, url)
    try:
        run_proxy(base, workers * 2, 1)  # warm-up: every worker imports and connects
        lat, wall = run_proxy(base, SESSIONS, questions)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return {"label": label, "workers": workers, "tps": len(lat) / wall, "p50": pct(lat, 50) * 1000,
            "p99": pct(lat, 99) * 1000}


def memory_cost(memory: Any, requests: int = 200, keys: int = 10) -> float:
    """Milliseconds of memory work per proxied request: one ``remember`` and one ``recall`` of
    the ``keys`` turns a conversation sends back."""
    from hermes.core.messages import Message, Reasoning, RouteKey, ToolCall
    from hermes.proxy import message_key

    origin = RouteKey(PROXY_ROUTE, "127.0.0.1", PROXY_MODEL, "openai_chat")
    recorded: list[str] = []
    started = time.perf_counter()
    for n in range(requests):
        m = Message("assistant", (Reasoning(f"thinking about step {n} " * 20, origin), ToolCall(f"c{n}", "f", "{}")))
        key = message_key(m)
        assert key is not None
        memory.remember("bench-tenant", key, m)
        recorded.append(key)
        memory.recall("bench-tenant", recorded[-keys:])
    return (time.perf_counter() - started) / requests * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=10, help="turns per session (default 10)")
    ap.add_argument("--workers", default="1,2,4", help="PostgreSQL worker counts (default 1,2,4)")
    ap.add_argument("--only", choices=("gateway", "proxy"), help="measure only the gateway or only the proxy")
    args = ap.parse_args()
    from _pgcluster import Cluster

    from hermes.emulate import Emulator
    from hermes.proxy import open_memory
    from hermes.store import Store
    from hermes.store.pg import PgStore

    root = Path(tempfile.mkdtemp(prefix="hermes-scale-"))
    os.environ["OPENAI_API_KEY"] = KEY
    rows, prows = [], []
    workers = [int(x) for x in args.workers.split(",")]
    with Emulator([ROUTE, PROXY_ROUTE]) as emu, Cluster(durable=True) as pg:
        emu_url = emu.url(ROUTE)
        if args.only != "proxy":
            home = root / "direct"
            home.mkdir()
            d_lat = run_direct(emu_url, home, SESSIONS, args.turns)[0]
            d_p99 = pct(d_lat, 99) * 1000
            home = root / "sqlite"
            home.mkdir()
            rows.append(measure("SQLite", home, emu_url, args.turns, 1, None))
            for w in workers:
                home = root / f"pg{w}"
                home.mkdir()
                rows.append(measure("PostgreSQL", home, emu_url, args.turns, w, pg.create_database(f"bench_{w}")))
            with Store(root / "cost.db") as s:
                sqlite_ms = store_cost(s)
            with PgStore(pg.create_database("bench_cost")) as ps:
                pg_ms = store_cost(ps)
        if args.only != "gateway":
            questions = max(1, args.turns // 2)
            upstream = emu.url(PROXY_ROUTE)
            home = root / "proxy-sqlite"
            home.mkdir()
            prows.append(measure_proxy("SQLite", home, upstream, questions, 1, None))
            for w in workers:
                home = root / f"proxy-pg{w}"
                home.mkdir()
                prows.append(measure_proxy("PostgreSQL", home, upstream, questions, w,
                                           pg.create_database(f"bench_proxy_{w}")))
            with Store(root / "memory.db") as s, open_memory(s) as m:
                sqlite_mem = memory_cost(m)
            with PgStore(pg.create_database("bench_memory")) as ps, open_memory(ps) as pm:
                pg_mem = memory_cost(pm)

    cores = os.cpu_count()
    if rows:
        print(f"scale bench: {ROUTE} emulator (zero latency), {SESSIONS} concurrent sessions x {args.turns} turns,"
              f" 2 model calls + 2 commits + 1 lease per turn; {cores} cores")
        print(f"{'store':>11} {'workers':>8} {'turns/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'added p99':>10}")
        for r in rows:
            print(f"{r['label']:>11} {r['workers']:>8} {r['tps']:>8.1f} {r['p50']:>8.1f} {r['p99']:>8.1f}"
                  f" {r['p99'] - d_p99:>10.1f}")
        print(f"(added p99 = gateway p99 minus direct Agent.run_turn p99 on SQLite, {d_p99:.1f} ms, same run)")
        print(f"store cost per turn (lease + load + 2 commits + release, one thread): SQLite {sqlite_ms:.2f} ms,"
              f" PostgreSQL {pg_ms:.2f} ms")
    if prows:
        print(f"proxy: {PROXY_ROUTE} emulator (zero latency), {SESSIONS} clients x {questions} tool-loop questions"
              f" (reasoning dropped by the client, restored by the proxy); {cores} cores")
        print(f"{'store':>11} {'workers':>8} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}")
        for r in prows:
            print(f"{r['label']:>11} {r['workers']:>8} {r['tps']:>8.1f} {r['p50']:>8.1f} {r['p99']:>8.1f}")
        print(f"memory cost per request (remember + recall of 10 keys, one thread): SQLite {sqlite_mem:.2f} ms,"
              f" PostgreSQL {pg_mem:.2f} ms")
    if rows:
        print(f"scale ratio {rows[1]['tps'] / rows[0]['tps']:.2f}")
    if prows:
        print(f"scale proxy_ratio {prows[1]['tps'] / prows[0]['tps']:.2f}")


if __name__ == "__main__":
    main()
