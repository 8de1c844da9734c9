"""`hermes demo` is the README's offline main job: it must run start to finish on a clean machine."""

from __future__ import annotations

from _cli import cli


def test_demo_runs_offline_and_shows_what_went_where(hermes_home, tmp_path):
    r = cli(hermes_home, "demo", "--home", str(tmp_path / "demo-home"))
    out = r.stdout
    assert "Every request was accepted" in out
    for route in ("deepseek", "openrouter", "anthropic", "gemini", "mistral"):
        assert route in out
    assert "RC×" in out and "RD×" in out and "thinking block×" in out and "thoughtSignature×" in out
    sessions = cli(tmp_path / "demo-home", "sessions", "list", "--json").stdout
    assert sessions.count('"id"') == 2  # the session and its branch


def test_demo_shows_each_stage_as_it_runs(hermes_home, tmp_path):
    """#36 item 7: a line per stage on stderr while the demo runs, before its table; stdout keeps
    only the table."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HERMES_HOME"] = str(hermes_home)
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "demo", "--home", str(tmp_path / "d")], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append(line)
            if line.startswith("[1/6]"):
                assert proc.poll() is None, "the first stage is shown while the others still run"
        assert proc.wait(timeout=120) == 0, "".join(lines)
    finally:
        proc.kill()
    stages = [i for i, line in enumerate(lines) if line.startswith("[")]
    table = next(i for i, line in enumerate(lines) if "What each request carried back" in line)
    assert len(stages) == 6 and max(stages) < table
    assert "DeepSeek turn with a tool call" in lines[stages[0]] and "2 requests" in lines[stages[0]]
