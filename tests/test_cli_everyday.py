"""#36 items 6-8, each through the real ``hermes`` CLI in fresh processes: a route table that
reads at 100 columns, a ledger that shows lessons rather than noise, keys kept in a 0600 file,
piped stdin appended to ``-q``, ``--system``."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import orjson
import pexpect
from _cli import CANARY
from _loopback import Seen, Upstream

from hermes.routing.routes import ROUTES


def run(home: Path, *args: str, stdin: Any = subprocess.DEVNULL, input: str | None = None,
        env: dict[str, str] | None = None, key: str | None = CANARY,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "HERMES_EMULATE"}
    full.update({"HERMES_HOME": str(home), "COLUMNS": "100", **(env or {})})
    if key is not None:
        full["HERMES_API_KEY"] = key
    return subprocess.run([sys.executable, "-m", "hermes", *args], stdin=None if input is not None else stdin,
                          input=input, capture_output=True, text=True, env=full, timeout=120, cwd=cwd)


# --- hermes routes: one line per route ------------------------------------------------------------


def test_routes_fit_100_columns_one_line_per_route(hermes_home: Path) -> None:
    r = run(hermes_home, "routes")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    starts = [line.split()[0] for line in lines if line and not line.startswith(" ")]
    for row in ROUTES:  # every route on a line of its own, name first, whole
        assert row.key in starts, row.key
    assert len(lines) < len(ROUTES) + 8
    by_key = {line.split()[0]: line for line in lines if line.strip()}
    assert "openai_chat" in by_key["deepseek"] and "RC, must echo" in by_key["deepseek"]
    assert "nothing (strict)" in by_key["mistral"]
    assert "Gemini on Vertex AI" in by_key["gemini-vertex"] and "Anthropic on Vertex AI" in by_key["anthropic-vertex"]


def test_routes_wide_is_the_full_table(hermes_home: Path) -> None:
    r = run(hermes_home, "routes", "--wide", env={"COLUMNS": "250"})
    assert r.returncode == 0, r.stderr
    assert "keep-thinking switches" in r.stdout and "kimi (moonshot, kimi-coding, kimi-coding-cn)" in r.stdout


# --- hermes routes learned: lessons with their evidence ---------------------------------------------


def test_learned_shows_refusals_and_counts_calibrations(hermes_home: Path, emulator: Any, tmp_path: Path) -> None:
    r = run(hermes_home, "chat", "-q", "hi", "-p", "deepseek", "-m", "deepseek-v4", "-u", emulator.url("deepseek"),
            "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    ledger = orjson.loads(run(hermes_home, "routes", "learned", "--json").stdout)
    assert [e["kind"] for e in ledger] == ["token_factor"], "a turn with usage calibrates the estimate"
    text = run(hermes_home, "routes", "learned").stdout
    assert "HTTP ?" not in text and "token_factor" not in text
    assert text.startswith("nothing learned yet") and "1 token-count calibration" in text and "--all" in text
    every = run(hermes_home, "routes", "learned", "--all").stdout
    assert "deepseek @ 127.0.0.1 / deepseek-v4" in every and "token_factor: estimate x" in every
    assert "HTTP ?" not in every


# --- hermes keys: a 0600 file, read by the key lookup ---------------------------------------------

SAVED = "sk-saved-5c4b3a29181706f5e4d3"
ENV_KEY = "sk-env-0a1b2c3d4e5f60718293"


def _answer(seen: Seen, h: BaseHTTPRequestHandler) -> None:
    body = orjson.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": "deepseek-v4",
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                      "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})
    h.send_response(200)
    h.send_header("content-type", "application/json")
    h.send_header("content-length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


def test_keys_set_writes_a_0600_file_the_lookup_reads(hermes_home: Path, tmp_path: Path) -> None:
    r = run(hermes_home, "keys", "set", "deepseek", input=SAVED + "\n", key=None)
    assert r.returncode == 0, r.stderr
    assert SAVED not in r.stdout + r.stderr
    path = hermes_home / "keys.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not (hermes_home / "config.toml").exists()
    listed = run(hermes_home, "keys", "list", key=None)
    assert SAVED not in listed.stdout and "deepseek" in listed.stdout and SAVED[-4:] in listed.stdout
    assert "keys file" in listed.stdout

    with Upstream(_answer) as up:
        chat = ("chat", "-q", "hi", "-p", "deepseek", "-m", "deepseek-v4", "-u", up.url, "--no-stream", "--json")
        assert run(hermes_home, *chat, key=None, cwd=tmp_path).returncode == 0
        assert run(hermes_home, *chat, key=ENV_KEY, cwd=tmp_path).returncode == 0  # HERMES_API_KEY: a catch-all
        assert run(hermes_home, *chat, key=None, env={"DEEPSEEK_API_KEY": ENV_KEY}, cwd=tmp_path).returncode == 0
        sent = [s.headers.get("authorization") for s in up.seen]
    assert sent == [f"Bearer {SAVED}", f"Bearer {SAVED}", f"Bearer {ENV_KEY}"], "the route's variable wins"
    shadowed = run(hermes_home, "keys", "list", key=None, env={"DEEPSEEK_API_KEY": ENV_KEY}).stdout
    assert "DEEPSEEK_API_KEY" in shadowed and "not used" in shadowed and ENV_KEY not in shadowed

    for db in hermes_home.glob("state.db*"):
        assert SAVED.encode() not in db.read_bytes()
    for log in (hermes_home / "logs").glob("*"):
        assert SAVED not in log.read_text()


def test_keys_set_refuses_what_it_cannot_use(hermes_home: Path) -> None:
    r = run(hermes_home, "keys", "set", "deepsek", input=SAVED + "\n")
    assert r.returncode == 1 and "did you mean 'deepseek'" in r.stderr
    r = run(hermes_home, "keys", "set", "deepseek", input="\n")
    assert r.returncode == 1 and "no key given" in r.stderr and not (hermes_home / "keys.json").exists()
    r = run(hermes_home, "keys", "set", "bedrock", input=SAVED + "\n")
    assert r.returncode == 1 and "AWS" in r.stderr


def test_a_keys_file_others_can_read_is_refused(hermes_home: Path) -> None:
    assert run(hermes_home, "keys", "set", "deepseek", input=SAVED + "\n").returncode == 0
    (hermes_home / "keys.json").chmod(0o644)
    r = run(hermes_home, "chat", "-q", "hi", "-p", "deepseek", "-m", "deepseek-v4", key=None)
    assert r.returncode == 1 and "can be read by other users" in r.stderr and "chmod 600" in r.stderr
    assert SAVED not in r.stderr


def test_keys_set_on_a_terminal_never_echoes(hermes_home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HERMES_HOME=str(hermes_home), TERM="xterm")
    child = pexpect.spawn(sys.executable, ["-m", "hermes", "keys", "set", "kimi"], env=env, encoding="utf-8",
                          timeout=60)
    child.expect("key for kimi")
    child.sendline(SAVED)
    child.expect(pexpect.EOF)
    shown = (child.before or "") + (child.after if isinstance(child.after, str) else "")
    assert SAVED not in shown and "saved the key for kimi" in shown
    assert orjson.loads((hermes_home / "keys.json").read_bytes()) == {"kimi": SAVED}


# --- piped stdin follows -q ---------------------------------------------------------------------------


def _user_text(seen: Seen) -> str:
    [user] = [m for m in seen.body["messages"] if m["role"] == "user"]
    return user["content"] if isinstance(user["content"], str) else "".join(p["text"] for p in user["content"])


def test_piped_stdin_is_appended_to_the_question(hermes_home: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("line one\nline two\n")
    with Upstream(_answer) as up:
        chat = ("chat", "-p", "deepseek", "-m", "deepseek-v4", "-u", up.url, "--no-stream", "--json")
        with notes.open() as f:
            r = run(hermes_home, *chat, "-q", "explain this", stdin=f, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        r = run(hermes_home, *chat, "-q", "-", input="what is 2+2?\n", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert run(hermes_home, *chat, "-q", "no pipe", cwd=tmp_path).returncode == 0  # /dev/null: nothing added
        big = run(hermes_home, *chat, "-q", "too much", input="x" * (600 * 1024), cwd=tmp_path)
        texts = [_user_text(s) for s in up.seen]
    assert texts == ["explain this\n\nline one\nline two\n", "what is 2+2?\n", "no pipe"]
    assert big.returncode == 1 and "more than 512 KiB" in big.stderr and "nothing was sent" in big.stderr
