"""What a user feels on ``hermes chat -q``: one loopback turn on a stored 2,000-turn session,
in a fresh process (process start + imports + load + build + send + stream fold + commit),
against the floor any CLI must pay for the same data in a fresh process: ``python`` start,
the raw SQLite read of the session's rows (with a JSON decode of each) and ``orjson.dumps``
of a body of the same rows.

Setup: route ``deepseek`` on the local emulator (zero latency, streaming), a session of 2,000
turns (question, reasoning ~2 KB + tool call, tool result, answer) stored in a temporary
HERMES_HOME whose config.toml raises ``context_budget`` so the whole history is sent (no
compaction: the point is the build of a long request). Each timed run adds one turn
(2,000 → 2,00x: same size within 0.3%). Children run with bytecode caching on
(``_timing.installed_env``), as an installed ``hermes`` does, even where the shell sets
``PYTHONDONTWRITEBYTECODE``. The emulator runs in this process: its time is in the wall
figure (it answers two requests of 6 MB) but never in the instruction count of ``chat -q``;
``ratio_less_emulator`` takes the CPU this process spent meanwhile off the wall time.

Also prints the peak RSS of the ``chat -q`` process (the cold build of 2,000 turns) and of the
baseline process (``VmHWM`` read by the child itself at exit, in one extra run each), and with ``--instructions`` the instruction counts of both under callgrind
(stable on a loaded machine; slow: a few minutes).

    python bench/chat_turn.py [--turns 2000] [--runs 5] [--instructions]

Last line: ``chat_turn ratio X.XX`` (wall, best of runs; target ≤ 3×).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _instr
from _timing import installed_env

ROUTE, MODEL, KEY = "deepseek", "deepseek-v4-pro", "sk-bench-0000000000"

BASELINE = r"""
import sqlite3, sys, orjson
c = sqlite3.connect(sys.argv[1])
rows = c.execute("SELECT m.seq, m.role, p.kind, p.text, p.data, b.data FROM messages m"
                 " LEFT JOIN parts p ON p.session_id = m.session_id AND p.seq = m.seq"
                 " LEFT JOIN blobs b ON b.hash = p.blob_hash WHERE m.session_id = ?"
                 " ORDER BY m.seq, p.position", (sys.argv[2],)).fetchall()
body = {"model": "m", "messages": [{"role": r, "kind": k, "text": t, "data": orjson.loads(d) if d else None,
        "blob": b} for _, r, k, t, d, b in rows]}
sys.stdout.buffer.write(str(len(orjson.dumps(body))).encode())
"""


def populate(db: Path, url: str, turns: int) -> str:
    from hermes.core.messages import Message, Reasoning, Text, ToolCall, ToolResult
    from hermes.routing.resolve import resolve
    from hermes.store import Store

    origin = resolve(ROUTE, url, MODEL).key
    store = Store(db)
    sid = store.create_session(provider=ROUTE, model=MODEL, base_url=url)
    for i in range(turns):
        text = f"step {i}: I should look at the files before answering. " * 36  # ~2 KB
        store.append_turn(sid, [
            Message.user(f"question {i}"),
            Message("assistant", (Reasoning(text, origin), ToolCall(f"c{i}", "read_file", '{"path":"a.py"}'))),
            Message("tool", (ToolResult(f"c{i}", "contents of a.py " * 8),)),
            Message("assistant", (Reasoning("that answers it. " * 20, origin), Text(f"answer {i}")))])
    store.close()
    return sid


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, bytes, float]:
    """(wall seconds, stdout, CPU seconds this process spent meanwhile) of one child process.

    This process only waits on the child, apart from the emulator's server thread, so the
    third figure is the emulator's work for the child's requests."""
    t0, c0 = time.perf_counter(), time.process_time()
    proc = subprocess.run(argv, env=env, capture_output=True, timeout=600)
    took, cpu = time.perf_counter() - t0, time.process_time() - c0
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr.decode(errors="replace"))
        raise SystemExit(f"failed: {' '.join(argv)}")
    return took, proc.stdout, cpu


# Peak RSS is read inside the child, from its own /proc/self/status at exit: ``ru_maxrss`` of a
# child started with vfork also counts the parent's peak (the parent's memory map is the
# child's until exec), which here would be the emulator's and the populated session's.
_PEAK = ("import atexit, runpy, sys\n"
         "def _peak():\n"
         "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
         "    sys.stderr.write('PEAK_KIB ' + (hwm[0].split()[1] if hwm else '0') + '\\n')\n"
         "atexit.register(_peak)\n")


def peak_rss_mib(argv: list[str], env: dict[str, str]) -> float:
    """Peak RSS (MiB) of ``python -m X ...`` or ``python -c CODE ...`` run once more with a
    one-line exit hook that reports ``VmHWM``."""
    py, flag, what, *rest = argv
    if flag == "-m":
        code = _PEAK + f"sys.argv = [{what!r}, *sys.argv[1:]]\nrunpy.run_module({what!r}, run_name='__main__', alter_sys=True)\n"
    else:
        code = _PEAK + what
    proc = subprocess.run([py, "-c", code, *rest], env=env, capture_output=True, timeout=600)
    lines = [line for line in proc.stderr.decode(errors="replace").splitlines() if line.startswith("PEAK_KIB ")]
    return int(lines[-1].split()[1]) / 1024 if lines else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--instructions", action="store_true", help="also count instructions under callgrind")
    args = ap.parse_args()
    from hermes.emulate import Emulator

    py = _instr.python()
    with tempfile.TemporaryDirectory() as d, Emulator([ROUTE]) as emu:
        home = Path(d)
        url = emu.url(ROUTE)
        sid = populate(home / "state.db", url, args.turns)
        (home / "config.toml").write_text("context_budget = 100000000\n")
        env = {k: v for k, v in installed_env().items() if not k.endswith("_API_KEY")}
        env.update(HERMES_HOME=str(home), DEEPSEEK_API_KEY=KEY)
        chat = [py, "-m", "hermes", "chat", "-q", "one more question", "-r", sid, "-p", ROUTE, "-m", MODEL, "-u", url]
        base = [py, "-c", BASELINE, str(home / "state.db"), sid]
        empty = [py, "-c", "pass"]
        timed(chat, env)  # warm the page cache and the .pyc files (see ``installed_env``) for both
        timed(base, env)
        timed(empty, env)
        sent = emu.requests(ROUTE)[-1]
        n_msgs = len(sent["body"]["messages"]) if isinstance(sent.get("body"), dict) else -1
        ours = [timed(chat, env) for _ in range(args.runs)]
        floor = [timed(base, env) for _ in range(args.runs)]
        bare = [timed(empty, env) for _ in range(args.runs)]
        o, b, e = (min(t for t, _, _ in xs) for xs in (ours, floor, bare))
        less = min(t - emu_cpu for t, _, emu_cpu in ours)  # the emulator parses two 6 MB bodies
        rss_ours, rss_floor = peak_rss_mib(chat, env), peak_rss_mib(base, env)
        print(f"chat_turn: {args.turns} stored turns, request of {n_msgs} messages, route {ROUTE} (emulator)")
        print(f"  hermes chat -q (fresh process)            {o * 1e3:8.1f} ms  peak RSS {rss_ours:6.1f} MiB")
        print(f"  python + raw read + orjson.dumps          {b * 1e3:8.1f} ms  peak RSS {rss_floor:6.1f} MiB"
              f"  (body {int(floor[0][1]) / 1e6:.1f} MB)")
        print(f"  python -c pass                            {e * 1e3:8.1f} ms")
        print(f"  hermes chat -q less the emulator's CPU    {less * 1e3:8.1f} ms")
        print(f"chat_turn rss_mb {rss_ours:.1f}")
        if args.instructions and _instr.available():
            ci = _instr.count_process(chat, env)
            bi = _instr.count_process(base, env)
            if ci and bi:
                print(f"  instructions: chat -q {ci / 1e6:.0f} M, baseline {bi / 1e6:.0f} M")
                print(f"chat_turn instr_ratio {ci / bi:.2f}")
        print(f"chat_turn ratio_less_emulator {less / b:.2f}")
        print(f"chat_turn ratio {o / b:.2f}")


if __name__ == "__main__":
    main()
