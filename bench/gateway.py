"""Gateway overhead: turns/s and the latency the gateway adds over the agent loop itself.

Setup: the emulators in this process (zero latency: no delays, no faults), one
``python -m hermes gateway`` subprocess on a temporary HERMES_HOME, route
``openai-responses`` (a turn = user message, a tool call, a tool result, an answer: two model
calls and two store commits).

For each concurrency level N (1, 16, 32) two runs of N sessions x TURNS turns each, with the
same texts and the same history lengths:

* **direct** — N threads in a child process running the turns on their own sessions through
  ``hermes.runtime.Runtime`` as the product builds them (one store, one shared HTTP transport,
  ``Runtime.agent`` — config's settings, the preflight token estimate — one agent per session
  across its turns, each turn continuing from the history the last one returned, as the
  gateway's hot sessions give it);
* **gateway** — N threads in another child process posting the same turns to the gateway over
  HTTP (its own process, so the clients' CPU does not share the emulator's GIL: the emulator
  answers both runs alike).

``added`` at a percentile is gateway latency minus direct latency at that percentile: HTTP,
JSON, the session lock (database round trips), the worker-thread hop and route resolution.

Figures (one ``gateway <metric> <value>`` line each, for ``bench/run``): p50 added latency at
1 session, p99 added at 16, p99 added at 32, throughput gateway / direct at 32 sessions (turns
per second of each run over its own wall time), the gateway process's peak RSS after
holding 32 sessions (``VmHWM``), and per level the CPU time per turn of the gateway process
over that of the direct process: on a loaded shared machine wall-clock latencies swing by
seconds between runs, CPU time per turn does not (the emulator's CPU is in neither).

Run: ``PYTHONPATH=. python bench/gateway.py [--turns 20] [--levels 1,16,32]``.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROUTE, MODEL, KEY = "openai-responses", "gpt-5", "sk-bench-0000000000"


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s)) - 1))]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a live process has used so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float | None:
    """``VmHWM`` (peak resident set) of a live process, in MiB; None where /proc has no such line."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def start_gateway(home: Path, allow: str, *args: str, env: dict[str, str] | None = None,
                  launcher: tuple[str, ...] = ("-m", "hermes")) -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "HERMES_HOME": str(home), "OPENAI_API_KEY": KEY, **(env or {})}
    env.pop("HERMES_GATEWAY_TOKEN", None)
    err = home / f"gateway-{time.monotonic_ns()}.err"
    proc = subprocess.Popen([sys.executable, *launcher, "gateway", "--port", "0", "--allow-base-url", allow,
                             *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=err.open("wb"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        text = err.read_text() if err.exists() else ""
        if "listening on " in text:
            return proc, text.split("listening on ", 1)[1].split()[0]
        if proc.poll() is not None:
            sys.exit(f"gateway did not start: {text}")
        time.sleep(0.05)
    proc.kill()
    sys.exit("gateway did not start in 20 s")


def run_direct(emu_url: str, home: Path, n: int, turns: int) -> tuple[list[float], float, float]:
    """In a child process, like the gateway: neither run shares this process's GIL with the
    emulator, so the comparison is between equals."""
    import orjson

    out = subprocess.run([sys.executable, __file__, "--direct-worker", str(n), str(turns), emu_url, str(home)],
                         capture_output=True, check=True, env={**os.environ, "OPENAI_API_KEY": KEY})
    data = orjson.loads(out.stdout)
    return data["lat"], data["wall"], data["cpu"]


def direct_worker(n: int, turns: int, emu_url: str, home: Path) -> tuple[list[float], float, float]:
    from hermes.runtime import Runtime
    from hermes.store import Store
    from hermes.tools import ToolContext, load_toolbox
    from hermes.transport import Transport

    store = Store(home / "direct.db")
    runtime = Runtime.load(store=store, transport=Transport())
    resolved = runtime.route(provider=ROUTE, model=MODEL, base_url=emu_url)
    key = runtime.key(resolved)
    toolbox = load_toolbox(ToolContext(allow_commands=False))
    sids = [runtime.create(resolved, base_url=emu_url) for _ in range(n)]
    warm = runtime.create(resolved, base_url=emu_url)
    for j in range(3):  # imports, the connection pool: the gateway was warmed up the same way
        runtime.agent(toolbox, api_key=key).run_turn(warm, f"warm {j}", resolved)  # + the tokenizer's load

    def worker(sid: str) -> list[float]:
        agent = runtime.agent(toolbox, api_key=key)
        history = store.load(sid)
        out = []
        for j in range(turns):
            t = time.perf_counter()
            history = agent.run_turn(sid, f"turn {j}", resolved, history=history).history
            out.append(time.perf_counter() - t)
        return out

    started, cpu = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(n) as pool:
        lat = [x for xs in pool.map(worker, sids) for x in xs]
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert runtime.transport is not None
    runtime.transport.close()
    store.close()
    return lat, wall, cpu


def run_gateway(base: str, emu_url: str, n: int, turns: int) -> tuple[list[float], float, float]:
    """In a child process too (see ``gateway_clients``)."""
    import orjson

    out = subprocess.run([sys.executable, __file__, "--client-worker", str(n), str(turns), emu_url, base],
                         capture_output=True, check=True)
    data = orjson.loads(out.stdout)
    return data["lat"], data["wall"], data["cpu"]


class Conn:
    """A keep-alive HTTP/1.1 connection that posts JSON and reads a Content-Length answer, in
    a few microseconds of CPU: the clients are the load generator, not what is measured (an
    ``httpx`` client costs ~1 ms of CPU per request, which on a 2-core machine is taken from
    the gateway and the emulator; load generators are written in C for this reason)."""

    def __init__(self, base: str) -> None:
        host, port = base.removeprefix("http://").rstrip("/").rsplit(":", 1)
        self.host = f"{host}:{port}"
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        head = (f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        self.sock.sendall(head + body)
        return self.read_response()

    def read_response(self) -> tuple[int, bytes]:
        while b"\r\n\r\n" not in self.buf:
            self.buf += self._recv()
        raw, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = raw.split(b"\r\n")
        length = next(int(v) for k, _, v in (ln.partition(b":") for ln in lines[1:]) if k.lower() == b"content-length")
        while len(self.buf) < length:
            self.buf += self._recv()
        data, self.buf = self.buf[:length], self.buf[length:]
        return int(lines[0].split()[1]), data

    def _recv(self) -> bytes:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise SystemExit("the gateway closed the connection")
        return chunk

    def close(self) -> None:
        self.sock.close()


def gateway_clients(base: str, emu_url: str, n: int, turns: int) -> tuple[list[float], float, float]:
    import orjson

    with httpx.Client(base_url=base, timeout=120) as c:
        sids = [c.post("/v1/sessions", json={"provider": ROUTE, "model": MODEL, "base_url": emu_url}).json()["id"]
                for _ in range(n)]

    def worker(sid: str) -> list[float]:
        out = []
        conn = Conn(base)
        try:
            for j in range(turns):
                body = orjson.dumps({"content": f"turn {j}"})
                t = time.perf_counter()
                status, text = conn.post(f"/v1/sessions/{sid}/messages", body)
                out.append(time.perf_counter() - t)
                if status != 200:
                    raise SystemExit(f"gateway turn failed: {status} {text!r}")
        finally:
            conn.close()
        return out

    started, cpu = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(n) as pool:
        lat = [x for xs in pool.map(worker, sids) for x in xs]
    return lat, time.perf_counter() - started, time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=20, help="turns per session (default 20)")
    ap.add_argument("--levels", default="1,16,32")
    ap.add_argument("--direct-worker", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--client-worker", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.client_worker:
        import orjson

        n, turns, url, base = args.client_worker
        lat, wall, cpu = gateway_clients(base, url, int(n), int(turns))
        sys.stdout.write(orjson.dumps({"lat": lat, "wall": wall, "cpu": cpu}).decode())
        return
    if args.direct_worker:
        import orjson

        n, turns, url, home_dir = args.direct_worker
        lat, wall, cpu = direct_worker(int(n), int(turns), url, Path(home_dir))
        sys.stdout.write(orjson.dumps({"lat": lat, "wall": wall, "cpu": cpu}).decode())
        return
    from hermes.emulate import Emulator

    home = Path(tempfile.mkdtemp(prefix="hermes-bench-"))
    os.environ["HERMES_HOME"] = str(home)
    with Emulator([ROUTE]) as emu:
        url = emu.url(ROUTE)
        proc, base = start_gateway(home, emu.root)
        try:
            run_gateway(base, url, 2, 3)  # warm-up: imports, connections, the HTTP pool
            rows, others = [], []
            for n in (int(x) for x in args.levels.split(",")):
                e_cpu = time.process_time()
                d_lat, d_wall, d_cpu = run_direct(url, home, n, args.turns)
                e_cpu, g_cpu = time.process_time() - e_cpu, cpu_seconds(proc.pid)
                ge_cpu = time.process_time()
                g_lat, g_wall, c_cpu = run_gateway(base, url, n, args.turns)
                g_cpu, ge_cpu = cpu_seconds(proc.pid) - g_cpu, time.process_time() - ge_cpu
                turns = n * args.turns
                others.append((n, e_cpu / turns * 1000, ge_cpu / turns * 1000, c_cpu / turns * 1000))
                ms = {p: (pct(g_lat, p) - pct(d_lat, p)) * 1000 for p in (50, 99)}
                rows.append((n, len(d_lat) / d_wall, len(g_lat) / g_wall, pct(d_lat, 50) * 1000,
                             pct(g_lat, 50) * 1000, pct(d_lat, 99) * 1000, pct(g_lat, 99) * 1000, ms[50], ms[99],
                             statistics.mean(g_lat) * 1000 - statistics.mean(d_lat) * 1000,
                             d_cpu / len(d_lat) * 1000, g_cpu / len(g_lat) * 1000))
            rss_mb = peak_rss_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(f"gateway bench: {ROUTE} emulator (zero latency), {args.turns} turns per session, "
          "2 model calls + 2 commits per turn")
    head = ("sessions", "direct t/s", "gw t/s", "direct p50", "gw p50", "direct p99", "gw p99", "added p50", "added p99",
            "added mean", "direct cpu", "gw cpu")
    print("  ".join(f"{h:>10}" for h in head))
    for row in rows:
        print("  ".join(f"{row[0]:>10}" if i == 0 else f"{v:>10.1f}" for i, v in enumerate(row)))
    print("(latencies in ms; added = gateway minus direct Agent.run_turn at the same percentile; "
          "cpu = CPU ms per turn of the gateway process / the direct process, which does not move with load)")
    by = {r[0]: r for r in rows}
    if 1 in by:
        print(f"gateway p50_added_ms_1 {by[1][7]:.2f}")
    if 16 in by:
        print(f"gateway p99_added_ms_16 {by[16][8]:.1f}")
    if rss_mb:
        print(f"gateway rss_mb_32 {rss_mb:.1f}  (peak RSS of the gateway process after the runs)")
    for r in rows:
        print(f"gateway cpu_per_turn_ratio_{r[0]} {r[11] / r[10]:.2f}  (gateway / direct CPU per turn)")
    for n, e_d, e_g, c in others:
        print(f"  ({n} sessions: emulator CPU per turn {e_d:.1f} ms in the direct run, {e_g:.1f} ms in the gateway "
              f"run; the clients' {c:.2f} ms)")
    last = by.get(32, rows[-1])
    print(f"gateway throughput_ratio_32 {last[2] / last[1]:.2f}  (gateway / direct turns per second)")
    if last[8] < 0:
        print(f"(added p99 at {last[0]} is {last[8]:.1f} ms: below this machine's run-to-run noise)")
    print(f"gateway p99_overhead_ms_32 {last[8]:.1f}")


if __name__ == "__main__":
    main()
