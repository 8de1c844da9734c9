"""Request build: plan + render + serialise a 2,000-turn history (tool turns, 2 KB reasoning,
4 KB blobs) for three routes, against orjson.dumps of the same final body, in the same run.

Figures per route:
* cold — a new process's first build of a stored session (``chat -q --resume``, a gateway
  turn on a session this worker has not seen): the history and the session's kept build
  results loaded from the store, then restored into an empty builder and built (``Builder.fill``);
* fresh — the same build with no kept results (a session whose results were never kept);
* step — the agent's rebuild after one more tool step, with the conversation's Builder as
  an agent has it: holding the session's kept runs (restored at the turn's start, or kept at
  the end of the turn before), so only the messages after them are planned and rendered;
* bare step — the same with a builder that holds no runs (every message visited, each reused);
* load — reading the kept results from SQLite vs reading the history itself (``Store.load``);
* rss — peak RSS of a new process that loads the session and builds it from kept results.

    python bench/replay_build.py      # prints `replay_build ratio X.XX` (step, worst route; target ≤ 1.5×)
    python bench/replay_build.py --instructions   # + the same comparisons in instructions (callgrind)
"""

from __future__ import annotations

import base64
import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _instr
from _timing import best_of

from hermes.agent.provider import build_body, get_wire
from hermes.builder import Builder
from hermes.builder.memo import context
from hermes.core.messages import Message, Reasoning, Text, ToolCall, ToolResult
from hermes.replay import Learned, Settings, plan_replay
from hermes.routing.resolve import Resolved, resolve
from hermes.store import Store

ROUTES = [("openrouter", "anthropic/claude-sonnet-4.5"), ("deepseek", "deepseek-v4"), ("anthropic", "claude-opus-5"),
          ("mistral", "mistral-medium-latest")]
SETTINGS = Settings()


def turn(target: Resolved, i: int) -> list[Message]:
    o = target.key
    kind = {"openrouter": "openrouter.details", "anthropic": "anthropic.signature"}.get(target.route.key)
    text = f"step {i}: I should look at the files before answering. " * 36  # ~2 KB
    blob = None
    if kind == "openrouter.details":
        sig = base64.b64encode(os.urandom(3000)).decode()
        blob = orjson.dumps([{"type": "reasoning.text", "text": text, "signature": sig, "index": 0}]).decode()
    elif kind:
        blob = base64.b64encode(os.urandom(3000)).decode()  # 4 KB
    return [Message.user(f"question {i}"),
            Message("assistant", (Reasoning(text, o, blob, kind if blob else None),
                                  ToolCall(f"c{i}", "read_file", '{"path":"a.py"}'))),
            Message("tool", (ToolResult(f"c{i}", "contents of a.py"),)),
            Message("assistant", (Text(f"answer {i}"),))]


def build(target: Resolved, history: list[Message], builder: Builder | None) -> bytes:
    if builder is None:
        wire = get_wire(target.route.wire)
        return orjson.dumps(build_body(wire, plan_replay(history, target, settings=SETTINGS), settings=SETTINGS))
    return orjson.dumps(builder.body(builder.plan(history, target, settings=SETTINGS), settings=SETTINGS))


def stored(target: Resolved, db: Path) -> tuple[Store, str]:
    """A store holding the 2,000-turn session and the results its last build kept."""
    store = Store(db)
    sid = store.create_session(provider=target.route.key, model=target.model)
    history = [m for i in range(2000) for m in turn(target, i)]
    builder = Builder()
    for i in range(0, len(history), 400):  # five stored turns, each kept: a chain of merged runs
        store.append_turn(sid, history[i:i + 400])
        loaded = store.load(sid)
        build(target, loaded, builder)
        builder.keep(store, sid, target, Learned(), loaded)
    return store, sid


def cold(target: Resolved, history: list[Message], rows: list) -> bytes:
    """A new process's build: an empty memo, the kept runs put in, then the request."""
    builder = Builder()
    builder.fill(target, Learned(), rows)
    return build(target, history, builder)


def measure(key: str, model: str, d: Path) -> dict[str, float]:
    target = resolve(key, None, model)
    store, sid = stored(target, d / f"{key}.db")
    history = store.load(sid)
    ctx = context(target, Learned())
    rows = store.load_runs(sid, ctx)
    body = orjson.loads(build(target, history, None))
    baseline = best_of(lambda: orjson.dumps(body), runs=7)
    assert cold(target, history, rows) == orjson.dumps(body)  # the figure is for the very same bytes
    kept = best_of(lambda: cold(target, history, rows), runs=5)
    fresh = best_of(lambda: build(target, history, None), runs=3)
    load = best_of(lambda: store.load(sid), runs=3)
    load_kept = best_of(lambda: store.load_runs(sid, ctx), runs=3)
    bare = best_of(stepper(target, history, Builder()), runs=7)
    with_runs = Builder()
    with_runs.fill(target, Learned(), rows)
    warm = best_of(stepper(target, history, with_runs), runs=7)
    store.close()  # as a finished ``chat -q`` leaves it: the write-ahead log checkpointed
    rss = rss_of(key, d / f"{key}.db", sid)
    print(f"replay_build[{key}]: orjson {baseline * 1e3:.1f} ms · cold build from kept results {kept * 1e3:.1f} ms "
          f"({kept / baseline:.1f}×) · without kept results {fresh * 1e3:.1f} ms ({fresh / baseline:.1f}×) · "
          f"next-step build {warm * 1e3:.1f} ms ({warm / baseline:.2f}×), without runs in the memo "
          f"{bare * 1e3:.1f} ms ({bare / baseline:.2f}×) · kept results load {load_kept * 1e3:.1f} ms "
          f"vs history load {load * 1e3:.1f} ms ({load_kept / load:.2f}×) · peak RSS {rss:.1f} MiB")
    return {"cold": kept / baseline, "fresh": fresh / baseline, "step": warm / baseline, "bare": bare / baseline,
            "load": load_kept / load, "rss": rss}


def stepper(target: Resolved, history: list[Message], builder: Builder) -> Callable[[], None]:
    """The agent's next tool step, again and again: the conversation grows by one step's
    messages and its request is built with ``memo`` (built once for ``history`` first)."""
    build(target, history, builder)
    grown = list(history)

    def step() -> None:
        grown.extend(turn(target, len(grown)))
        build(target, grown, builder)

    return step


def rss_of(key: str, db: Path, sid: str) -> float:
    """Peak RSS (MiB) of a new process that loads the session and builds it from kept results."""
    out = subprocess.run([sys.executable, __file__, "--rss", key, str(db), sid], capture_output=True, text=True,
                         check=True)
    return float(out.stdout.split()[-1])


def rss_worker(key: str, db: str, sid: str) -> None:
    target = resolve(key, None, dict(ROUTES)[key])
    with Store(Path(db)) as store:
        history = store.load(sid)
        cold(target, history, store.load_runs(sid, context(target, Learned())))
    # VmHWM, not ru_maxrss: after fork + exec ru_maxrss can still hold the (large) parent's peak
    status = Path("/proc/self/status").read_text()
    hwm = next((line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")), None)
    print(int(hwm) / 1024 if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def count_worker(route: int, what: str, db: str = "", sid: str = "") -> None:
    """Under callgrind (see ``_instr.count_region``): one build or one ``orjson.dumps``."""
    key, model = ROUTES[route]
    target = resolve(key, None, model)
    get_wire(target.route.wire)  # imported before the region: module imports are process start (chat_turn.py)
    if what in ("kept", "step"):  # history and kept runs from the store
        with Store(Path(db)) as store:
            history = store.load(sid)
            rows = store.load_runs(sid, context(target, Learned()))
        if what == "kept":  # a new process's first build
            _instr.region(lambda: cold(target, history, rows))
        else:  # the next tool step's rebuild with the agent's memo (holding the session's runs)
            builder = Builder()
            builder.fill(target, Learned(), rows)
            _instr.region(stepper(target, history, builder))
        return
    history = [m for i in range(2000) for m in turn(target, i)]
    if what == "cold":
        _instr.region(lambda: build(target, history, None))
    elif what == "bare":  # the same with a memo holding no runs
        _instr.region(stepper(target, history, Builder()))
    else:
        body = orjson.loads(build(target, history, None))
        _instr.region(lambda: orjson.dumps(body))


def instructions(d: Path) -> None:
    ratios, steps, fresh, bares = [], [], [], []
    for i, (key, model) in enumerate(ROUTES):
        _, sid = stored(resolve(key, None, model), d / f"i{key}.db")
        argv = [_instr.python(), __file__, "--count", str(i)]
        kept, step = (_instr.count_region([*argv, w, str(d / f"i{key}.db"), sid]) for w in ("kept", "step"))
        full, bare, base = (_instr.count_region([*argv, w]) for w in ("cold", "bare", "dumps"))
        if kept and full and step and bare and base:
            print(f"replay_build[{key}]: instructions cold build from kept results {kept / 1e6:.0f} M, without "
                  f"{full / 1e6:.0f} M, next-step build {step / 1e6:.1f} M (without runs {bare / 1e6:.1f} M), "
                  f"orjson.dumps {base / 1e6:.1f} M ({kept / base:.2f}×, {full / base:.1f}×, {step / base:.2f}× "
                  f"({bare / base:.2f}×))")
            ratios.append(kept / base)
            fresh.append(full / base)
            steps.append(step / base)
            bares.append(bare / base)
    if ratios:
        print(f"replay_build instr_ratio {max(ratios):.2f}  (cold build from kept results, worst route)")
        print(f"replay_build fresh_instr_ratio {max(fresh):.2f}  (cold build without kept results, worst route)")
        print(f"replay_build step_instr_ratio {max(steps):.2f}  (next-step build, worst route)")
        print(f"replay_build bare_step_instr_ratio {max(bares):.2f}  (next-step build without runs, worst route)")


def main() -> None:
    if sys.argv[1:2] == ["--count"]:
        count_worker(int(sys.argv[2]), sys.argv[3], *sys.argv[4:6])
        return
    if sys.argv[1:2] == ["--rss"]:
        rss_worker(*sys.argv[2:5])
        return
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        results = [measure(key, model, d) for key, model in ROUTES]
        print(f"replay_build cold_ratio {max(r['cold'] for r in results):.2f}  "
              "(new process's first build, from kept results, worst route; target ≤ 3×)")
        print(f"replay_build fresh_ratio {max(r['fresh'] for r in results):.2f}  (the same without kept results)")
        print(f"replay_build load_ratio {max(r['load'] for r in results):.2f}  "
              "(reading the kept results vs reading the history)")
        print(f"replay_build rss_mb {max(r['rss'] for r in results):.1f}  (peak RSS of that new process)")
        if "--instructions" in sys.argv and _instr.available():
            instructions(d)
        print(f"replay_build bare_step_ratio {max(r['bare'] for r in results):.2f}  "
              "(next-step build with a memo holding no runs, worst route)")
        print(f"replay_build ratio {max(r['step'] for r in results):.2f}  "
              "(next-step build, worst route; target ≤ 1.5×)")


if __name__ == "__main__":
    main()
