"""The REPL under a pseudo-terminal shows the hints ``hermes chat -q`` shows, and takes a key:
``/key`` asks without echo, keeps it for the session (or saves it with ``save``), never writes
it to the history file, state.db or the log (#36 item 6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pexpect
from _pty import plain, repl

KEY = "sk-typed-7e6d5c4b3a2918070f1e"


def test_a_repl_without_a_key_starts_and_takes_one(hermes_home: Path, tmp_path: Path, emulator: Any) -> None:
    child = repl(hermes_home, tmp_path, "-p", "deepseek", "-m", "deepseek-v4", "-u", emulator.url("deepseek"),
                 key=None)
    start = plain(child)
    assert "no API key for DeepSeek" in start and "/key" in start and "DEEPSEEK_API_KEY" in start
    assert "--api-key" not in start, "the REPL's hint names what the REPL can do"
    child.sendline("hello")
    child.expect("no API key for DeepSeek", timeout=90)
    child.expect("type /key")
    child.sendline(f"/key {KEY}")  # pasted on the line by mistake: refused, and never in the history file
    child.expect("not taken from the command line", timeout=90)
    child.sendline("/key")
    child.expect("not echoed", timeout=90)
    child.sendline(KEY)
    child.expect("kept for this session only", timeout=90)
    before = len(emulator.requests("deepseek"))
    child.sendline("what is here?")
    child.expect("answered .what is here", timeout=90)  # the emulator's answer
    child.sendline("/quit")
    child.expect(pexpect.EOF, timeout=60)
    child.close()
    shown = plain(child)
    assert all(f"/key {KEY}" in line for line in shown.splitlines() if KEY in line), \
        "only the refused command line showed it, never the no-echo prompt"
    history = (hermes_home / "repl_history").read_text()
    assert KEY not in history and "what is here?" in history
    assert not (hermes_home / "keys.json").exists(), "kept for the session, not saved"
    assert KEY.encode() not in (hermes_home / "state.db").read_bytes()
    assert len(emulator.requests("deepseek")) > before, "the turn went out with the key"


def test_key_save_writes_the_keys_file(hermes_home: Path, tmp_path: Path) -> None:
    child = repl(hermes_home, tmp_path, "-p", "kimi", "-m", "kimi-k2-thinking", key=None)
    child.sendline("/key save")
    child.expect("not echoed", timeout=90)
    child.sendline(KEY)
    child.expect("saved in", timeout=90)
    child.sendline("/quit")
    child.expect(pexpect.EOF, timeout=60)
    child.close()
    assert KEY not in plain(child)
    assert orjson.loads((hermes_home / "keys.json").read_bytes()) == {"kimi": KEY}
    assert (hermes_home / "keys.json").stat().st_mode & 0o077 == 0


def test_repl_hints_match_the_cli(hermes_home: Path, tmp_path: Path) -> None:
    child = repl(hermes_home, tmp_path, "-p", "deepseek", "-m", "deepseek-v4", key=None,
                 env={"DEEPSEEK_API_KEY": KEY})
    child.sendline("/model deepsek:deepseek-v4")
    child.expect("did you mean 'deepseek'?", timeout=90)
    child.sendline("/effort hihg")
    child.expect("'hihg' is not an effort", timeout=90)
    child.expect("did you mean 'high'?")
    child.sendline("/effort high")
    child.expect("effort high for the next turns", timeout=90)
    child.sendline("/model anthropic:claude-opus-5")  # no key for it: the REPL's way to give one
    child.expect("no API key for Anthropic", timeout=90)
    child.expect("type /key")
    child.sendline("/quit")
    child.expect(pexpect.EOF, timeout=60)
    child.close()
