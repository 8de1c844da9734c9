"""`hermes sessions export --format md`: a session to read — text, reasoning, tool calls and
results in fences nothing inside can close — with opaque payloads counted, never copied."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from _cli import CANARY
from hypothesis import given
from hypothesis import strategies as st

from hermes.cli.markdown import fenced, session_markdown
from hermes.core.messages import Message, Reasoning, RouteKey, Text, ToolCall, ToolResult
from hermes.store.records import SessionInfo


@given(st.text(alphabet="`a\n", max_size=40))
def test_a_fence_is_longer_than_any_backtick_run_inside(text: str) -> None:
    block = fenced(text)
    fence = block.split("\n", 1)[0]
    assert set(fence) == {"`"} and fence * 1 not in text and block.endswith(fence)


def test_a_session_reads_as_markdown_without_its_opaque_payloads() -> None:
    origin = RouteKey("anthropic", "api.anthropic.com", "m", "anthropic")
    info = SessionInfo("abcdef012345", 0.0, 0.0, "fix the bug", "anthropic", "m", "", None, None, 4, 2)
    history = [Message.user("fix the bug"),
               Message("assistant", (Reasoning("look at app.py first", origin, "SIGNATURE-BLOB", "anthropic.signature"),
                                     ToolCall("c1", "read_file", '{"path": "app.py"}'))),
               Message("tool", (ToolResult("c1", "```\nprint('hi')\n```", "read_file"),)),
               Message("assistant", (Text("It prints hi."),))]
    md = session_markdown(info, history)
    assert md.startswith("# fix the bug\n") and "## user\n\nfix the bug" in md
    assert "<details><summary>reasoning</summary>\n\nlook at app.py first" in md
    assert "**→ read_file**\n\n```json\n{\"path\": \"app.py\"}\n```" in md
    assert "````\n```\nprint('hi')\n```\n````" in md and "It prints hi." in md
    assert "SIGNATURE-BLOB" not in md and "1 opaque reasoning payload(s) kept for replay" in md


def test_export_md_from_the_cli(emulator: Any, hermes_home: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HERMES_HOME=str(hermes_home), HERMES_API_KEY=CANARY)
    run = lambda *a: subprocess.run([sys.executable, "-m", "hermes", *a], capture_output=True, text=True,
                                    env=env, timeout=120, stdin=subprocess.DEVNULL)
    r = run("chat", "--json", "-q", "what is here?", "-p", "deepseek", "-m", "deepseek-v4", "-u", emulator.url("deepseek"))
    sid = orjson.loads(r.stdout)["session_id"]
    out = tmp_path / "s.md"
    r = run("sessions", "export", sid[:6], "--format", "md", "-o", str(out))
    assert r.returncode == 0 and "wrote 4 messages" in r.stderr
    md = out.read_text()
    assert "## user\n\nwhat is here?" in md and "**→ list_dir**" in md and "Done (deepseek-v4)" in md
    assert oct(out.stat().st_mode & 0o777) == "0o600"
