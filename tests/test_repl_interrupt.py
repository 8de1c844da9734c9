"""Ctrl-C in the REPL under a real pseudo-terminal: an approved command's whole process group
dies and the turn is cancelled; Ctrl-C at the ``[y/N]`` prompt cancels the turn; closing the
terminal leaves no process behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest
from _pty import PROMPT, alive, plain, repl, wait_file

# the shell writes its own pid and a background child's, then becomes `sleep 61`
_COMMAND = "sleep 62 & echo $! > bg.pid; echo $$ > sh.pid; exec sleep 61"
_LINE = 'go #call=run_command' + json.dumps({"command": _COMMAND})


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Path]:
    d = tmp_path / "ws"
    d.mkdir()
    yield d
    for name in ("sh.pid", "bg.pid"):  # never leave a sleeper behind, whatever the outcome
        with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
            os.kill(int((d / name).read_text()), signal.SIGKILL)


def _start(emulator: Any, hermes_home: Path, ws: Path) -> Any:
    return repl(hermes_home, ws, "-p", "deepseek", "-m", "deepseek-v4", "-u", emulator.url("deepseek"))


def _gone(pids: list[int], timeout: float = 5) -> bool:
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _approve(child: Any, ws: Path) -> list[int]:
    child.sendline(_LINE)
    child.expect(r"\[y/N\]")
    child.sendline("y")
    return [int(wait_file(ws / "sh.pid")), int(wait_file(ws / "bg.pid"))]


def test_ctrl_c_kills_the_approved_command_group_and_cancels_the_turn(emulator: Any, hermes_home: Path,
                                                                       ws: Path) -> None:
    child = _start(emulator, hermes_home, ws)
    pids = _approve(child, ws)
    assert all(alive(p) for p in pids)
    child.sendintr()
    child.expect("turn cancelled")
    child.expect(PROMPT)
    assert _gone(pids), f"still running after Ctrl-C: {[p for p in pids if alive(p)]}"
    assert "Done (" not in plain(child)  # the turn did not go on to an answer
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    assert _gone(pids)


def test_ctrl_c_at_the_prompt_cancels_the_turn_not_just_the_command(emulator: Any, hermes_home: Path,
                                                                     ws: Path) -> None:
    child = _start(emulator, hermes_home, ws)
    child.sendline(_LINE)
    child.expect(r"\[y/N\]")
    child.sendintr()
    child.expect("turn cancelled")
    child.expect(PROMPT)
    shown = plain(child)
    assert "Abort" not in shown and "Done (" not in shown, shown
    assert not (ws / "sh.pid").exists()
    child.sendline("/quit")
    child.expect(pexpect.EOF)


def test_closing_the_terminal_leaves_no_process_behind(emulator: Any, hermes_home: Path, ws: Path) -> None:
    child = _start(emulator, hermes_home, ws)
    pids = _approve(child, ws)
    child.close(force=False)  # hang up: the REPL gets SIGHUP as when a terminal window closes
    assert _gone(pids, timeout=10), f"outlived the REPL: {[p for p in pids if alive(p)]}"
