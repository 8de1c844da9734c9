"""Small things a new user trips on: the CLI checks what config.toml checks (with a
did-you-mean), steps count from 1 in the log as on screen, failed requests are logged, a short
session id finds its log, two steps' text never runs together, and Ctrl-C stops `hermes ui`
without `Aborted!`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from _cli import CANARY

from hermes.cli.chat import _Printer
from hermes.core.events import Streamed, Waiting
from hermes.core.stream import TextDelta, ToolCallDelta


def _run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HERMES_HOME=str(home), HERMES_API_KEY=CANARY)
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_effort_and_settings_are_checked_with_a_did_you_mean(hermes_home: Path) -> None:
    r = _run(hermes_home, "chat", "-q", "hi", "-p", "deepseek", "-m", "deepseek-v4", "--effort", "hihg")
    assert r.returncode == 2 and "did you mean 'high'?" in r.stderr
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "config.toml").write_text('efort = "high"\n')
    r = _run(hermes_home, "chat", "-q", "hi")
    assert r.returncode == 1 and "unknown setting 'efort'" in r.stderr and "did you mean 'effort'?" in r.stderr
    (hermes_home / "config.toml").write_text('max_steps = "x"\n')
    r = _run(hermes_home, "chat", "-q", "hi")
    assert r.returncode == 1 and "'max_steps' must be a whole number" in r.stderr


def test_logs_count_steps_from_one_find_short_ids_and_keep_failures(emulator: Any, hermes_home: Path) -> None:
    r = _run(hermes_home, "chat", "--json", "-q", "hi", "-p", "deepseek", "-m", "deepseek-v4",
             "-u", emulator.url("deepseek"))
    assert r.returncode == 0, r.stderr
    sid = orjson.loads(r.stdout)["session_id"]
    shown = _run(hermes_home, "logs", "--json", "-s", sid[:5])
    records = [orjson.loads(line) for line in shown.stdout.splitlines()]
    assert [(x["event"], x["step"]) for x in records] == [("request", 1), ("request", 2)]
    assert all(x["session"] == sid for x in records)
    assert " step 1 " in _run(hermes_home, "logs", "-s", sid[:5]).stdout

    r = _run(hermes_home, "chat", "-q", "hi", "-p", "deepseek", "-m", "deepseek-v4", "-u", "http://127.0.0.1:1/v1")
    assert r.returncode == 1
    failed = [orjson.loads(line) for line in _run(hermes_home, "logs", "--json").stdout.splitlines()][-1]
    assert (failed["event"], failed["kind"], failed["step"], failed["status"]) == (
        "request_failed", "ProviderConnectionError", 1, None)
    assert "ProviderConnectionError: deepseek: cannot reach" in _run(hermes_home, "logs", "-n", "1").stdout


def test_two_steps_text_never_runs_together(capsys: pytest.CaptureFixture[str]) -> None:
    p = _Printer(quiet=False, show_reasoning=True)
    p(Waiting("deepseek", "m", 0))
    p(Streamed(TextDelta("t", "Let me look.")))
    p(Streamed(ToolCallDelta("c", "id", "list_dir")))
    p(Waiting("deepseek", "m", 1))
    p(Streamed(TextDelta("t", "Step two says a thing.")))
    p(Waiting("deepseek", "m", 2))
    p(Streamed(TextDelta("t", "Done.")))
    p.end_turn("Done.")
    out, err = capsys.readouterr()
    assert out == "Let me look.\nStep two says a thing.\nDone.\n"
    assert "→ list_dir" in err


def test_ctrl_c_stops_the_ui_without_aborted(hermes_home: Path) -> None:
    env = {**os.environ, "HERMES_HOME": str(hermes_home)}
    p = subprocess.Popen([sys.executable, "-m", "hermes", "ui", "--port", "0"], env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert p.stdout is not None
        url = p.stdout.readline()
        assert url.startswith("http://127.0.0.1:"), url
        time.sleep(0.2)
        p.send_signal(signal.SIGINT)
        _out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert "Aborted" not in err and p.returncode in (0, 130), (p.returncode, err)
