"""Secrets: a distinct canary key per provider, a full CLI scenario across every route, and
then not one canary anywhere Hermes writes or prints.

Each route gets its own canary: through the route's own environment variable (``key_env``),
or ``--api-key`` (every fourth route, a route whose variable another route already uses, and
the keyless local servers); Bedrock's canary is the AWS secret key. The scenario, in fresh
CLI processes: a tool-calling turn on every route, resumes, exports (stdout and ``-o``),
``sessions show/list``, ``logs --json``, failing requests (HTTP 500 after
retries, a plain-text 400, a 401 from a key sent in the wrong header via a
``routes.toml`` row, a refused connection). Then: every file under HERMES_HOME — state.db
with its ``-wal``/``-shm`` (a reader holds the database open so they persist), every log
file — the export files and every stdout/stderr hold no canary; state.db, its companions and
the logs are 0600 and the directories 0700. The emulator's request log strips auth headers,
so a tee on its ASGI app (memory only) proves each canary was really sent.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from hermes.routing.routes import ROUTES, Route
from hermes.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from crash_loop import TeeEmulator

FACTS = pytest.importorskip("hermes.emulate.chat_rules").FACTS
MODEL = {"copilot": "gemini-3-pro-preview", "gemini-openai": "gemini-3-pro-preview", "openai": "gpt-oss-120b",
         "anthropic": "claude-opus-5", "anthropic-vertex": "claude-opus-4-6", "anthropic-foundry": "claude-opus-5",
         "bedrock": "anthropic.claude-sonnet-4-5-v1:0", "gemini": "gemini-3-pro-preview",
         "gemini-vertex": "gemini-3-pro-preview", "openai-responses": "gpt-5", "xai-responses": "grok-4",
         "deepseek-anthropic": "deepseek-v4-pro", "kimi-anthropic": "kimi-k2.6", "mimo-anthropic": "mimo-v2.5-pro",
         "minimax-anthropic": "MiniMax-M3"}
AUTH_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "api-key")
MISCONFIGURED = """
[[route]]
key = "misconfigured"
wire = "openai_responses"
auth = "x-api-key"
key_env = ["MISCONFIGURED_API_KEY"]
"""


@dataclass(frozen=True)
class Plan:
    route: Route
    canary: str
    via: str
    """``env:NAME``, ``flag`` or ``aws``."""


def _canary(tag: str) -> str:
    return f"sk-canary-{tag}-{secrets.token_hex(12)}"


def plans(routes: list[Route]) -> list[Plan]:
    out: list[Plan] = []
    used: set[str] = set()
    for i, r in enumerate(routes):
        canary = _canary(r.key)
        if r.auth == "aws":
            out.append(Plan(r, canary, "aws"))
        elif not r.key_env or i % 4 == 0 or r.key_env[0] in used:
            out.append(Plan(r, canary, "flag"))
        else:
            used.add(r.key_env[0])
            out.append(Plan(r, canary, f"env:{r.key_env[0]}"))
    return out


@pytest.fixture(scope="module")
def tee() -> Iterator[TeeEmulator]:
    with TeeEmulator() as emu:
        yield emu


def test_no_canary_reaches_disk_or_output(tee: TeeEmulator, hermes_home: Path, tmp_path: Path) -> None:
    from hermes.emulate.core import PERSONALITIES

    emu = tee
    routes = [r for r in ROUTES if r.key in PERSONALITIES]
    plan = plans(routes)
    fallback, misconf = _canary("hermes-fallback"), _canary("misconfigured")
    canaries = [p.canary for p in plan] + [fallback, misconf]
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("hello\n")
    hermes_home.mkdir(mode=0o700, exist_ok=True)
    (hermes_home / "routes.toml").write_text(MISCONFIGURED)
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN"))}
    env.update(HERMES_HOME=str(hermes_home), HERMES_API_KEY=fallback, MISCONFIGURED_API_KEY=misconf,
               AWS_ACCESS_KEY_ID="AKIDCANARYEXAMPLE", AWS_REGION="us-east-1")
    for p in plan:
        if p.via.startswith("env:"):
            env[p.via[4:]] = p.canary
        elif p.via == "aws":
            env["AWS_SECRET_ACCESS_KEY"] = p.canary
    runs: list[subprocess.CompletedProcess[str]] = []

    def cli(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        r = subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=env,
                           cwd=work, timeout=120)
        runs.append(r)
        if ok:
            assert r.returncode == 0, f"hermes {' '.join(a for a in args if a not in canaries)}: {r.stderr[-400:]}"
        return r

    def first_turn(p: Plan) -> str:
        key = p.route.key
        args = ["chat", "-q", f"what is here? ({key})", "-p", key, "-m", MODEL.get(key) or FACTS[key].models[0],
                "-u", emu.url(key), "--json"]
        if p.via == "flag":
            args += ["--api-key", p.canary]
        out = orjson.loads(cli(*args).stdout)
        assert out["stopped"] == "answer"
        return str(out["session_id"])

    with ThreadPoolExecutor(2) as pool:
        sids = dict(zip([p.route.key for p in plan], pool.map(first_turn, plan), strict=True))

    reader = Store(hermes_home / "state.db")  # holds the db open: -wal/-shm persist to be grepped
    try:
        resumed = [p for p in plan if p.route.key in ("deepseek", "anthropic", "bedrock", "openai-responses")]

        def resume(p: Plan) -> None:
            extra = ["--api-key", p.canary] if p.via == "flag" else []
            cli("chat", "--resume", sids[p.route.key], "-q", "and then?", "--no-stream", "--json", *extra)

        with ThreadPoolExecutor(2) as pool:
            list(pool.map(resume, resumed))
        sid = sids["anthropic"]
        cli("sessions", "export", sid)
        cli("sessions", "export", sids["gemini"], "-o", str(tmp_path / "gemini.jsonl"))
        cli("sessions", "show", sid, "--reasoning")
        cli("sessions", "list", "--json")

        by_key = {p.route.key: p for p in plan}
        for name, fault in {"deepseek": "500", "mistral": "text4xx"}.items():
            emu.state.set_control(name, fault=fault, times=10)
            extra = ["--api-key", by_key[name].canary] if by_key[name].via == "flag" else []
            r = cli("chat", "--resume", sids[name], "-q", "fail please", *extra, ok=False)
            assert r.returncode != 0, f"{name}: fault {fault} did not fail the run"
            emu.state.set_control(name, fault=None)
        r = cli("chat", "-q", "wrong header", "-p", "misconfigured", "-m", "gpt-5", "-u",
                emu.url("openai-responses"), ok=False)
        assert r.returncode != 0 and "401" in r.stderr, r.stderr[-300:]
        r = cli("chat", "-q", "nobody home", "-p", "deepseek", "-m", "deepseek-v4", "-u", "http://127.0.0.1:9/v1",
                "--api-key", plan[0].canary, ok=False)
        assert r.returncode != 0
        cli("logs", "--json", "-n", "500")

        # The keys were really used: each personality received its own canary (and only it).
        sent: dict[str, set[str]] = {}
        for cap in emu.captures:
            who = "misconfigured-target" if "x-api-key" in cap.headers and cap.personality == "openai-responses" \
                else cap.personality
            sent.setdefault(who, set()).update(
                v.removeprefix("Bearer ") for k, v in cap.headers.items() if k in AUTH_HEADERS)
        for p in plan:
            if p.via != "aws":
                assert sent.get(p.route.key) == {p.canary}, f"{p.route.key} ({p.via}) got {sent.get(p.route.key)}"
        assert misconf in sent["misconfigured-target"]
        assert any(v.startswith("AWS4-HMAC-SHA256 Credential=AKIDCANARYEXAMPLE/")
                   for c in emu.captures if c.personality == "bedrock" for v in c.headers.values())

        files = [f for f in hermes_home.rglob("*") if f.is_file()] + [tmp_path / "gemini.jsonl"]
        names = {f.name for f in files}
        assert {"state.db", "state.db-wal", "state.db-shm", "hermes.log"} <= names, names
        hits = [(str(f), c[:24]) for f in files for c in canaries if c.encode() in f.read_bytes()]
        hits += [("stdout/stderr", c[:24]) for r in runs for c in canaries if c in r.stdout or c in r.stderr]
        print(f"secrets: {len(canaries)} canaries, {len(runs)} CLI runs, {len(files)} files grepped, "
              f"{len(hits)} hits")
        assert not hits, hits
        for f in hermes_home.rglob("*"):
            if f.name.startswith("state.db") or f.parent.name == "logs":
                assert f.stat().st_mode & 0o777 == (0o700 if f.is_dir() else 0o600), f"{f}: {oct(f.stat().st_mode)}"
        assert (hermes_home / "logs").stat().st_mode & 0o777 == 0o700
    finally:
        reader.close()
