"""The real ``hermes chat`` REPL under a pseudo-terminal (pexpect), as a user types it."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import pexpect
from _cli import CANARY

__all__ = ["PROMPT", "alive", "plain", "repl", "wait_file"]

PROMPT = "you>"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\r")


def repl(home: Path, cwd: Path, *args: str, key: str | None = CANARY, env: dict[str, str] | None = None) -> Any:
    """``hermes chat ARGS`` on a pty, waiting at its first prompt (the transcript is in ``.log``)."""
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    base.update(HERMES_HOME=str(home), TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", COLUMNS="200")
    if key is not None:
        base["HERMES_API_KEY"] = key
    base.update(env or {})
    child = pexpect.spawn(sys.executable, ["-m", "hermes", "chat", *args], env=base, cwd=str(cwd),
                          encoding="utf-8", timeout=30, dimensions=(50, 200))
    child.log = []

    class _Tee:
        def write(self, s: str) -> None:
            child.log.append(s)

        def flush(self) -> None:
            pass

    child.logfile_read = _Tee()
    child.expect(PROMPT)
    return child


def plain(child: Any) -> str:
    """What the terminal showed so far, without escape sequences."""
    return _ANSI.sub("", "".join(child.log))


def wait_file(path: Path, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path.name} never appeared")


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its parent to reap it counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
