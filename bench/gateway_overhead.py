"""The gateway's own cost per turn, without the agent: HTTP, JSON, the checks, the session
lease, the session row, the hot entry and the hand-over to a worker thread.

One ``hermes gateway`` subprocess whose agent turn returns at once (the launcher below swaps
``Agent.run_turn`` for a function that returns the history it was given: no model call, no
commit), one session, one keep-alive connection posting ``TURNS`` turns one after another.
Everything the gateway process then spends is the gateway's. Printed: its CPU per turn, split
into the event-loop thread and the worker threads (``/proc/PID/task``), the wall time per turn
at p50 and a bare ``GET /healthz`` for the HTTP stack's floor. CPU time does not move with the
load of a shared machine; the wall figure does.

    PYTHONPATH=. python bench/gateway_overhead.py [--turns 1000] [--runs 3] [--facade]

Every turn is parsed and answered on the event loop and run on one of anyio's worker threads.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gateway import MODEL, ROUTE, Conn, cpu_seconds, pct, start_gateway

NULL_TURN = """
import sys
from hermes.agent.loop import Agent, TurnResult

def null_turn(self, session_id, user_text, resolved, *, history=None, system=None):
    return TurnResult(session_id, "ok", 1, "answer", history=list(history or []))

Agent.run_turn = null_turn
sys.argv = ["hermes", *sys.argv[1:]]
from hermes.cli import main
main()
"""


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds per thread of a live process: the main (event-loop) thread and the rest."""
    out = {"loop": 0.0, "workers": 0.0}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out["loop" if task.name == str(pid) else "workers"] += (int(fields[11]) + int(fields[12])) / os.sysconf(
            "SC_CLK_TCK")
    return out


def one_run(url: str, allow: str, turns: int, gateway_args: list[str], facade: bool) -> dict[str, float]:
    """A fresh gateway, warmed up, then ``turns`` null turns and as many ``GET /healthz``."""
    home = Path(tempfile.mkdtemp(prefix="hermes-bench-"))
    proc, base = start_gateway(home, allow, *gateway_args, launcher=("-c", NULL_TURN))
    try:
        conn = Conn(base)
        _, body = conn.post("/v1/sessions", orjson.dumps({"provider": ROUTE, "model": MODEL, "base_url": url}))
        sid = orjson.loads(body)["id"]
        # the OpenAI facade on the same session, as an SDK client sends it; or the native turn
        path, extra = ("/v1/chat/completions", f"X-Hermes-Session: {sid}\r\n") if facade else (
            f"/v1/sessions/{sid}/messages", "")

        def ask(text: str) -> bytes:
            if facade:
                return orjson.dumps({"model": "hermes", "messages": [{"role": "user", "content": text}]})
            return orjson.dumps({"content": text})

        for j in range(50):  # warm-up: imports, the first lease, the hot entry
            conn.post(path, ask(f"warm {j}"), extra)
        cpu, threads, lat = cpu_seconds(proc.pid), thread_cpu(proc.pid), []
        for j in range(turns):
            t = time.perf_counter()
            status, text = conn.post(path, ask(f"turn {j}"), extra)
            lat.append(time.perf_counter() - t)
            if status != 200:
                raise SystemExit(f"gateway turn failed: {status} {text!r}")
        cpu, after = cpu_seconds(proc.pid) - cpu, thread_cpu(proc.pid)
        health_cpu = cpu_seconds(proc.pid)
        host = base.removeprefix("http://").rstrip("/")
        for _ in range(turns):
            conn.sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            conn.read_response()
        health_cpu = cpu_seconds(proc.pid) - health_cpu
        conn.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"loop": (after["loop"] - threads["loop"]) / turns * 1e3,
            "workers": (after["workers"] - threads["workers"]) / turns * 1e3,
            "health": health_cpu / turns * 1e3, "wall_p50": pct(lat, 50) * 1e3, "cpu": cpu / turns * 1e3}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--facade", action="store_true",
                    help="post OpenAI-facade completions (POST /v1/chat/completions, X-Hermes-Session) instead")
    args = ap.parse_args()
    gateway_args: list[str] = []
    from hermes.emulate import Emulator

    with Emulator([ROUTE]) as emu:  # routes the session; never called
        runs = [one_run(emu.url(ROUTE), emu.root, args.turns, gateway_args, args.facade) for _ in range(args.runs)]

    def spread(key: str) -> str:
        values = [r[key] for r in runs]
        return f"{statistics.median(values):.2f}  (median of {len(values)} runs; range {min(values):.2f} … {max(values):.2f})"

    print(f"gateway_overhead: {args.turns} null turns on one session (the agent's turn returns at once), "
          f"{args.runs} runs, a fresh gateway each"
          f"{', OpenAI facade' if args.facade else ''}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"  event-loop thread  {spread('loop')} ms CPU per turn")
    print(f"  worker threads     {spread('workers')} ms CPU per turn")
    print(f"  GET /healthz       {spread('health')} ms CPU per request (the HTTP stack's floor)")
    print(f"gateway_overhead wall_p50_ms {spread('wall_p50')}")
    print(f"gateway_overhead cpu_ms_per_turn {spread('cpu')}  [the gateway process, all threads]")


if __name__ == "__main__":
    main()
