"""The ``hermes`` command leaves out two optional imports its dependencies make for features
it never uses (httpcore's trio support, httpx's own command line) — and nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = r"""
import sys
from hermes.cli import _SkipUnused
sys.meta_path.insert(0, _SkipUnused())
import httpx, httpcore, httpcore._synchronization as sync
print(sync.trio is None, "httpx._main" in sys.modules, "rich" in sys.modules)
import trio  # a plugin tool importing trio still gets it
print(trio.__name__)
"""


def test_only_httpcores_trio_support_and_httpxs_cli_are_skipped() -> None:
    pytest.importorskip("trio")
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False", "False", "trio"]


def test_a_chat_command_process_loads_neither(tmp_path: Path) -> None:
    """A real ``hermes chat -q`` (against a closed port: it builds the HTTP client, tries,
    fails) imports httpx and httpcore without either; the finder is gone afterwards."""
    pytest.importorskip("trio")
    code = ("import sys\n"
            "from hermes.cli import main\n"
            "try:\n    main(['chat', '-q', 'hi', '-p', 'deepseek', '-m', 'deepseek-v4', '-u', 'http://127.0.0.1:9/v1'])\n"
            "except SystemExit:\n    pass\n"
            "import httpcore._synchronization as sync\n"
            "print('httpcore' in sys.modules, 'trio' in sys.modules, 'httpx._main' in sys.modules, sync.trio is None,\n"
            "      any(type(f).__name__ == '_SkipUnused' for f in sys.meta_path))\n")
    env = {**os.environ, "HERMES_HOME": str(tmp_path), "DEEPSEEK_API_KEY": "sk-test-0000"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert "cannot reach" in proc.stderr
    assert proc.stdout.split() == ["True", "False", "False", "True", "False"]
