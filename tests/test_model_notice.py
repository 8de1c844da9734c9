"""A model no profile row knows still goes out with the defaults, but the CLI says so on one line
(with a did-you-mean when a profiled id is close): in ``hermes chat`` and after a REPL ``/model``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

_NOTE = "is not in the model profiles; the defaults apply"


def _chat(home: Path, *args: str, input: str | None = None, emulator: Any) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "HERMES_EMULATE"}
    env.update(HERMES_HOME=str(home), HERMES_EMULATE=emulator.root)
    return subprocess.run([sys.executable, "-m", "hermes", "chat", *args], input=input, capture_output=True,
                          text=True, env=env, timeout=120)


def test_chat_names_a_model_outside_the_profiles_with_a_did_you_mean(emulator: Any, hermes_home: Path) -> None:
    emulator.state.add_models("openrouter", "anthropic/cluade-opus-4-5")
    r = _chat(hermes_home, "-q", "hi", "-p", "openrouter", "-m", "anthropic/cluade-opus-4-5", emulator=emulator)
    assert r.returncode == 0, r.stderr
    notes = [line for line in r.stderr.splitlines() if _NOTE in line]
    assert notes == [f"note: anthropic/cluade-opus-4-5 {_NOTE} (did you mean 'claude-opus-4-5'?)"]

    r = _chat(hermes_home, "-q", "hi", "-p", "openrouter", "-m", "anthropic/claude-opus-4-5", emulator=emulator)
    assert r.returncode == 0, r.stderr
    assert _NOTE not in r.stderr


def test_repl_model_switch_names_a_model_outside_the_profiles(emulator: Any, hermes_home: Path) -> None:
    emulator.state.add_models("deepseek", "lab-model")
    r = _chat(hermes_home, "-p", "deepseek", "-m", "deepseek-v4", emulator=emulator,
              input="/model deepseek:lab-model\nhello\n/model deepseek:deepseek-v4\n/quit\n")
    assert r.returncode == 0, r.stderr
    assert "now deepseek · lab-model\n" f"note: lab-model {_NOTE}\n" in r.stderr
    assert r.stderr.count(_NOTE) == 1  # the session's own deepseek-v4 is profiled: no line for it
