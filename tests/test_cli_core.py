"""`hermes routes`, `hermes routes explain` and `hermes replay FILE` as a user runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from hermes.core.messages import Message, Reasoning, RouteKey, ToolCall, ToolResult, dumps


def run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HERMES_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=env, timeout=60)


def files_under(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*")) if path.exists() else []


@pytest.fixture
def history_file(tmp_path: Path) -> Path:
    o = RouteKey("openrouter", "openrouter.ai", "anthropic/claude-sonnet-4.5", "openai_chat")
    details = orjson.dumps([{"type": "reasoning.text", "text": "list files", "signature": "EsSIG", "index": 0}]).decode()
    msgs = [Message.user("what is here?"),
            Message("assistant", (Reasoning("list files", o, details, "openrouter.details"), ToolCall("c1", "ls", "{}"))),
            Message("tool", (ToolResult("c1", "a.py"),)),
            Message("assistant", (ToolCall("c2", "ls", "{}"),))]
    f = tmp_path / "history.jsonl"
    f.write_bytes(b"\n".join(dumps(m) for m in msgs) + b"\n")
    return f


def test_help_reads_well(hermes_home):
    r = run("--help", home=hermes_home)
    assert r.returncode == 0
    for cmd in ("chat", "sessions", "replay", "routes", "logs", "emulate", "demo", "gateway", "mcp"):
        assert cmd in r.stdout


def test_routes_json_lists_every_row(hermes_home):
    r = run("routes", "--json", home=hermes_home)
    rows = orjson.loads(r.stdout)
    keys = {row["key"] for row in rows}
    assert {"deepseek", "openrouter", "mistral", "anthropic", "bedrock", "gemini", "copilot", "local"} <= keys
    deepseek = next(row for row in rows if row["key"] == "deepseek")
    assert deepseek["must_echo"] and deepseek["carriers"] == ["reasoning_content"]


def test_routes_explain_says_why(hermes_home):
    r = run("routes", "explain", "--base-url", "https://nousresearch.com.evil.io/v1", "--model", "m", home=hermes_home)
    assert r.returncode == 0
    assert "generic" in r.stdout and "matches no row" in r.stdout


def test_routes_explain_shows_the_model_profile(hermes_home):
    r = run("routes", "explain", "-u", "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5",
            "-m", "claude-opus-4-6", home=hermes_home)
    assert r.returncode == 0, r.stderr
    assert "anthropic-vertex" in r.stdout and "adaptive" in r.stdout and "context 200,000 tokens" in r.stdout
    data = orjson.loads(run("routes", "explain", "-p", "glm", "-m", "glm-5.1", "--json", home=hermes_home).stdout)
    assert data["profile"]["efforts"] == [] and data["route"]["thinking_off"] == {"thinking": {"type": "disabled"}}


def test_replay_file_prints_exact_fields_per_route(history_file, hermes_home):
    r = run("replay", str(history_file), "--provider", "deepseek", "--model", "deepseek-v4", "--json", home=hermes_home)
    assert r.returncode == 0, r.stderr
    report = orjson.loads(r.stdout)
    first, second = report["messages"]
    assert first["fields"] == {"reasoning_content": "list files"}
    assert second["fields"] == {"reasoning_content": " "}
    assert second["decisions"][0]["action"] == "pad"
    r = run("replay", str(history_file), "-p", "openrouter", "-m", "anthropic/claude-sonnet-4.5", "--json", home=hermes_home)
    first = orjson.loads(r.stdout)["messages"][0]
    assert set(first["fields"]) == {"reasoning_content", "reasoning", "reasoning_details"}
    assert first["fields"]["reasoning_details"][0]["signature"] == "EsSIG"
    r = run("replay", str(history_file), "-p", "mistral", "-m", "mistral-medium", home=hermes_home)
    assert "strict schema" in r.stdout and "reasoning_content:" not in r.stdout


def test_bad_inputs_are_one_line_errors_and_write_nothing(tmp_path, history_file, hermes_home):
    hermes_home.mkdir(parents=True, exist_ok=True)
    before = files_under(hermes_home)
    r = run("replay", str(history_file), "--provider", "nosuch", "--model", "m", home=hermes_home)
    assert r.returncode == 1 and r.stderr.startswith("hermes: error: unknown provider 'nosuch'")
    assert r.stderr.count("\n") <= 2 and "Traceback" not in r.stderr

    bad = tmp_path / "bad.jsonl"
    lines = history_file.read_text().splitlines()
    lines[2] = '{"v":1,"role":"tool","parts":[{"kind":"tool_result","call_id":7}]}'
    bad.write_text("\n".join(lines) + "\n")
    r = run("replay", str(bad), "-p", "deepseek", "-m", "m", home=hermes_home)
    assert r.returncode == 1 and f"{bad}:3:" in r.stderr and "call_id" in r.stderr

    (hermes_home / "routes.toml").write_text('[[route]]\nkey = "x"\nwire = "openai_chat"\ncarriers = ["bogus"]\n')
    before = files_under(hermes_home)
    r = run("routes", home=hermes_home)
    assert r.returncode == 1 and f"{hermes_home / 'routes.toml'}:1:" in r.stderr and "bogus" in r.stderr
    assert files_under(hermes_home) == before

    r = run("replay", str(tmp_path / "missing.jsonl"), "-p", "deepseek", "-m", "m", home=hermes_home)
    assert r.returncode == 1 and "hermes: error:" in r.stderr
