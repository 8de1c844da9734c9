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
