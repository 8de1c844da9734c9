"""#36 items 6-8, each through the real ``hermes`` CLI in fresh processes: a route table that
reads at 100 columns, a ledger that shows lessons rather than noise, keys kept in a 0600 file,
piped stdin appended to ``-q``, ``--system``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from _cli import CANARY

from hermes.routes import ROUTES


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
