"""Claude Code, unmodified and headless (``claude -p``), through the Anthropic door on DeepSeek.

The client is installed from the npm registry by this test (``@anthropic-ai/claude-code``, into
``$HERMES_TEST_CLIENTS`` or ``~/.cache/hermes-test-clients``) and run with ``ANTHROPIC_BASE_URL``
pointing at ``hermes proxy``'s ``/deepseek`` route, which forwards to the DeepSeek emulator. The
scripted model reads two files with Claude Code's own ``Read`` tool, then answers: every request
must be accepted, and each tool-call turn must carry back the reasoning DeepSeek returned for it
(Claude Code only ever held it as a ``thinking`` block with a sealed signature).

Skipped when npm or the registry is unavailable, unless ``HERMES_REAL_CLIENTS_REQUIRED=1``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _proxy import running_proxy

from hermes.replay import PAD

VERSION = "2.1.197"
MODEL = "deepseek-v4-pro"


def _skip(why: str) -> None:
    if os.environ.get("HERMES_REAL_CLIENTS_REQUIRED") == "1":
        pytest.fail(why)
    pytest.skip(why)


def _install() -> Path:
    """The ``claude`` binary, installed once per cache directory."""
    root = Path(os.environ.get("HERMES_TEST_CLIENTS") or Path.home() / ".cache" / "hermes-test-clients")
    prefix = root / f"claude-code-{VERSION}"
    exe = prefix / "node_modules" / ".bin" / "claude"

    def works() -> bool:
        try:
            return subprocess.run([str(exe), "--version"], capture_output=True, timeout=60).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    if exe.exists() and works():
        return exe
    if shutil.which("npm") is None:
        _skip("npm is not installed")
    prefix.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix),
                        f"@anthropic-ai/claude-code@{VERSION}"], capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        _skip(f"npm install failed: {r.stderr[-500:]}")
    if not works():  # npm may hold back the package's postinstall (it fetches the native binary)
        subprocess.run(["node", "install.cjs"], cwd=prefix / "node_modules" / "@anthropic-ai" / "claude-code",
                       capture_output=True, timeout=600)
    if not works():
        _skip("claude-code installed but `claude --version` fails")
    return exe


@pytest.fixture(scope="module")
def claude() -> Path:
    return _install()


@pytest.fixture
def proxy(emulator: Any) -> Iterator[Any]:
    with running_proxy(emulator) as px:
        yield px


def _run(claude: Path, base_url: str, workdir: Path, prompt: str) -> subprocess.CompletedProcess[str]:
    home = workdir.parent / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "ANTHROPIC_BASE_URL": base_url,
           "ANTHROPIC_API_KEY": "sk-claude-code-client", "ANTHROPIC_MODEL": MODEL,
           "ANTHROPIC_DEFAULT_HAIKU_MODEL": MODEL, "ANTHROPIC_DEFAULT_SONNET_MODEL": MODEL,
           "ANTHROPIC_DEFAULT_OPUS_MODEL": MODEL, "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
           "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    return subprocess.run([str(claude), "-p", prompt, "--output-format", "json", "--allowedTools", "Read",
                           "--max-turns", "6"], cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=240, stdin=subprocess.DEVNULL)


def test_claude_code_tool_loop_keeps_deepseek_reasoning(claude: Path, emulator: Any, proxy: Any,
                                                       tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    a, b = work / "a.txt", work / "b.txt"
    a.write_text("the first word is marmalade\n")
    b.write_text("the second word is quince\n")
    prompt = (f'#call=Read{{"file_path": "{a}"}} #call=Read{{"file_path": "{b}"}} '
              "read both files and tell me the two words")
    before = len(emulator.requests("deepseek"))
    r = _run(claude, proxy.url("deepseek"), work, prompt)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    out = json.loads(r.stdout)
    assert out["is_error"] is False, out
    assert f"Done ({MODEL}): 2 scripted tool call(s) made." in out["result"]
    reqs = [q for q in emulator.requests("deepseek")[before:] if q["path"].endswith("/chat/completions")]
    assert reqs, "Claude Code's requests reached the route as chat completions"
    loop = [q for q in reqs if any(m.get("role") == "tool" for m in q["body"]["messages"])]
    assert len(loop) >= 2
    last = loop[-1]["body"]["messages"]
    results = [m["content"] for m in last if m.get("role") == "tool"]
    assert any("marmalade" in c for c in results) and any("quince" in c for c in results)  # Read ran
    turns = [m for m in last if m.get("role") == "assistant" and m.get("tool_calls")]
    assert [m["tool_calls"][0]["function"]["name"] for m in turns] == ["Read", "Read"]
    thought = [m.get("reasoning_content") for m in turns]
    assert thought[0].startswith("Step 1 of 2: I will call Read.") and thought[0] != PAD
    assert thought[1].startswith("Step 2 of 2: I will call Read.")
    # the same reasoning on every later request: restored exactly, not re-padded
    earlier = [m.get("reasoning_content") for m in loop[0]["body"]["messages"]
               if m.get("role") == "assistant" and m.get("tool_calls")]
    assert earlier == thought[:1]
