"""Run the real ``hermes`` CLI in a fresh process, the way a user (or CI) would."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

CANARY = "sk-canary-9f8e7d6c5b4a39281706"


def cli(home: Path, *args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HERMES_HOME=str(home), HERMES_API_KEY=CANARY, AWS_ACCESS_KEY_ID="AKIDEXAMPLE",
               AWS_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", AWS_REGION="us-east-1")
    r = subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=env,
                       cwd=cwd, timeout=120, stdin=subprocess.DEVNULL)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def stored_sessions(home: Path) -> list[tuple[str, str]]:
    """(id, base_url) of every session in ``home/state.db`` (none if there is no file)."""
    db = home / "state.db"
    if not db.exists():
        return []
    with sqlite3.connect(db) as c:
        return c.execute("SELECT id, base_url FROM sessions").fetchall()
