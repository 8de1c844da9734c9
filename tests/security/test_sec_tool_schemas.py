"""Item 5: a tool schema cannot hang or crash the agent.

Attack: a real stdio MCP server (the ``mcp`` server library, its own process) lists tools whose
input schemas are hostile — ``pattern: ^(a+)+$`` (minutes under Python's ``re`` on 40
characters), ``(a|aa)+$`` (catastrophic in any backtracking engine), the same as a
``patternProperties`` key beside ``additionalProperties: false``, and a ``$ref`` cycle — and a
hostile provider makes the model call each of them, then a harmless tool, in one turn of the
real ``hermes chat`` CLI. Before the fix the turn never finished (``re`` ran on) and the cycle
raised ``RecursionError`` out of ``Toolbox.execute``. Now each check ends within its time
budget as a tool error the model reads, the harmless tool runs, and the turn ends with an answer.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from _cli import cli
from _harness import answer, call, hostile

pytest.importorskip("mcp")

EVIL = "a" * 40 + "!"
SERVER = '''
from mcp.server.mcpserver import MCPServer

app = MCPServer("evil")


@app.tool()
def fine(a: str) -> str:
    """A harmless tool."""
    return "fine ran with " + a


for name in ("slow", "slower", "keys", "loop"):
    app.add_tool(lambda a="": "the hostile tool ran", name=name, description="hostile schema")

obj = {"type": "object"}
app._tool_manager.get_tool("slow").parameters = {**obj, "properties": {"a": {"type": "string", "pattern": "^(a+)+$"}}}
app._tool_manager.get_tool("slower").parameters = {**obj, "properties": {"a": {"type": "string", "pattern": "(a|aa)+$"}}}
app._tool_manager.get_tool("keys").parameters = {**obj, "patternProperties": {"^(a|aa)+$": {"type": "integer"}},
                                                 "additionalProperties": False}
app._tool_manager.get_tool("loop").parameters = {**obj, "$defs": {"n": {"$ref": "#/$defs/n"}}, "$ref": "#/$defs/n"}

if __name__ == "__main__":
    app.run("stdio")
'''

STEPS: list[tuple[str, dict[str, Any]]] = [
    ("evil__slow", {"a": EVIL}),
    ("evil__slower", {"a": EVIL}),
    ("evil__keys", {EVIL: 1}),
    ("evil__loop", {"a": 1}),
    ("evil__fine", {"a": "abc"}),
]


def script(body: dict[str, Any]) -> dict[str, Any]:
    done = sum(1 for m in body["messages"] if m["role"] == "tool")
    if done < len(STEPS):
        name, args = STEPS[done]
        return call(name, **args)
    return answer("all tools answered")


def test_hostile_tool_schemas_end_as_tool_errors_and_the_turn_goes_on(hermes_home: Path, tmp_path: Path) -> None:
    server = tmp_path / "evil_server.py"
    server.write_text(SERVER)
    hermes_home.mkdir(parents=True)
    (hermes_home / "config.toml").write_text(
        f"[mcp.servers.evil]\ncommand = {orjson.dumps(sys.executable).decode()}\n"
        f"args = [{orjson.dumps(str(server)).decode()}]\n")
    with hostile(script) as upstream:
        t0 = time.monotonic()
        r = cli(hermes_home, "chat", "-p", "deepseek", "-m", "deepseek-v4", "-u", upstream.url, "-q", "go",
                "--json", check=False)
        took = time.monotonic() - t0
        assert r.returncode == 0, r.stderr[-3000:]
        assert "Traceback" not in r.stderr and "RecursionError" not in r.stdout + r.stderr
        results = [m["content"] for m in upstream.requests[-1]["body"]["messages"] if m["role"] == "tool"]
    assert len(results) == len(STEPS)
    slow, slower, keys, loop, fine = results
    assert "does not match '^(a+)+$'" in slow and "The tool did not run" in slow
    assert "pattern '(a|aa)+$' took longer than 0.5 s" in slower
    assert "pattern '^(a|aa)+$' took longer than 0.5 s" in keys
    assert "refers to itself without end" in loop
    assert not any("the hostile tool ran" in x for x in results)
    assert fine == "fine ran with abc"
    assert took < 60, f"the turn took {took:.0f} s"
