"""MCP tools end to end: a real stdio MCP server and a real streamable-HTTP one (both written
here with the ``mcp`` server library, run as separate processes), listed by `hermes mcp list`
and called by the real CLI in one multi-step turn on two routes over the emulators — including
bad arguments, non-text content, and each server crashing mid-turn — while the reasoning of every
step still goes back to the route exactly as stored.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from _cli import cli

from hermes.config.mcp import McpServer, parse_mcp
from hermes.core.errors import ConfigError
from hermes.core.messages import Reasoning, ToolCall
from hermes.store import Store

pytest.importorskip("mcp")

SERVER = '''
import os, sys
import hashlib
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import CallToolResult

app = MCPServer("test-server")
PNG = bytes.fromhex("89504e470d0a1a0a") + bytes(992)


@app.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@app.tool()
def picture() -> Image:
    """A small PNG image."""
    return Image(data=PNG, format="png")


@app.tool()
def fails(reason: str) -> str:
    """Always raises."""
    raise ToolError(f"refused: {reason}")


@app.tool()
def env(name: str) -> str:
    """An environment variable of the server."""
    return f"{name}={os.environ.get(name, '')}"


@app.tool()
def whoami(ctx: Context) -> str:
    """A digest of the Authorization header this call arrived with."""
    request = ctx.request_context.request
    header = request.headers.get("authorization", "") if request is not None else ""
    return hashlib.sha256(header.encode()).hexdigest()[:16]


@app.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then answer."""
    import anyio
    await anyio.sleep(seconds)
    return "awake"


@app.tool()
def wide() -> CallToolResult:
    """Structured content only, holding an integer wider than 64 bits."""
    return CallToolResult(content=[], structured_content={"n": 2**70, "s": "x"})


@app.tool()
def crash() -> str:
    """Kill this server mid-call."""
    os._exit(3)


if __name__ == "__main__":
    with open(sys.argv[1], "a") as f:
        f.write(f"{os.getpid()}\\n")
    if len(sys.argv) > 2:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run("stdio")
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server_py(tmp_path: Path) -> Path:
    path = tmp_path / "mcp_server.py"
    path.write_text(SERVER)
    return path


@pytest.fixture
def http_server(server_py: Path, tmp_path: Path) -> Iterator[str]:
    """A streamable-HTTP MCP server on loopback, in its own process; yields its URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(server_py), str(tmp_path / "http.pids"), str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("the HTTP MCP server did not start")
    yield f"http://127.0.0.1:{port}/mcp"
    proc.kill()
    proc.wait(10)


def write_config(home: Path, server_py: Path, pids: Path, url: str | None = None, *, extra: str = "") -> None:
    home.mkdir(parents=True, exist_ok=True)
    text = (f'[mcp.servers.local]\ncommand = {orjson.dumps(sys.executable).decode()}\n'
            f'args = [{orjson.dumps(str(server_py)).decode()}, {orjson.dumps(str(pids)).decode()}]\n')
    if url:
        text += f'\n[mcp.servers.web]\nurl = "{url}"\n'
    (home / "config.toml").write_text(text + extra)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# --- config ----------------------------------------------------------------------------------


def test_config_takes_stdio_and_http_servers_and_refuses_secrets_and_mixups() -> None:
    servers = parse_mcp({"servers": {"a": {"command": "srv", "args": ["-x"], "env": {"GH_TOKEN": "$GH_TOKEN"}},
                                     "b": {"url": "http://127.0.0.1:1/mcp", "timeout": 5}}}, "c:1")
    assert servers["a"].transport == "stdio" and servers["a"].args == ("-x",)
    assert servers["b"].transport == "http" and servers["b"].timeout == 5.0
    bad = [
        ({"a": {"command": "srv", "env": {"GH_TOKEN": "ghp_realsecret"}}}, "looks like a secret"),
        ({"a": {"command": "srv", "url": "http://x/mcp"}}, "either 'command'"),
        ({"a": {}}, "either 'command'"),
        ({"a": {"url": "ftp://x"}}, "http:// or https://"),
        ({"a": {"url": "http://[::1/mcp"}}, r"'url' is not a valid URL \(Invalid IPv6 URL\)"),
        ({"a": {"url": "mcp.example.com/mcp"}}, "'url' must start with http:// or https://"),
        ({"a": {"url": "http://mcp.example.com/m cp"}}, "'url' must not contain spaces, control characters"),
        ({"a": {"url": "http://mcp.example.com/\x07"}}, "'url' must not contain spaces, control characters"),
        ({"a": {"url": "https://me:s3cret-tok@mcp.example.com/mcp"}}, "must not carry a user name or password"),
        ({"a": {"url": "http://x/mcp", "args": ["y"]}}, "for stdio servers"),
        ({"a__b": {"command": "srv"}}, "no '__'"),
        ({"a": {"command": "srv", "timeout": 0}}, "positive"),
        ({"a": {"command": "srv", "headers": {}}}, "headers are for HTTP servers"),
        ({"a": {"url": "http://x/mcp", "headers": {"Authorization": "Bearer abc"}}}, "Authorization looks like a secret"),
        ({"a": {"command": "srv", "cmd": "x"}}, "unknown field"),
    ]
    for spec, words in bad:
        with pytest.raises(ConfigError, match=words):
            parse_mcp({"servers": spec}, "c:1")


def test_config_toml_errors_name_the_file_and_line(hermes_home: Path) -> None:
    from hermes.config.settings import load_config

    hermes_home.mkdir(parents=True, exist_ok=True)
    path = hermes_home / "config.toml"
    path.write_text('model = "m"\n\n[mcp.servers.gh]\ncommand = "srv"\nenv = { GH_TOKEN = "ghp_x" }\n')
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}:3: \[mcp.servers.gh\]: env GH_TOKEN looks like"):
        load_config(path)
    path.write_text('[mcp.servers.gh]\ncommand = "srv"\nargs = ["--stdio"]\n')
    assert load_config(path).mcp_servers["gh"].args == ("--stdio",)


def test_env_references_are_read_from_the_environment_and_registered_as_secrets(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes.core.errors import redact

    monkeypatch.setenv("MY_SVC_TOKEN", "tok-5ecret-value-123456")
    env = McpServer("s", command="x", env={"SVC_TOKEN": "${MY_SVC_TOKEN}", "MODE": "fast"}).resolved_env()
    assert env == {"SVC_TOKEN": "tok-5ecret-value-123456", "MODE": "fast"}
    assert "tok-5ecret-value-123456" not in redact("the server said tok-5ecret-value-123456")


def test_non_text_content_becomes_a_one_line_summary() -> None:
    import base64

    from mcp import types

    from hermes.tools.mcp import describe_content

    data = base64.b64encode(bytes(5)).decode()
    blocks = [
        (types.TextContent(text="plain"), "plain"),
        (types.AudioContent(data=data, mime_type="audio/wav"), "[audio: audio/wav, 5 bytes — not shown to the model]"),
        (types.ResourceLink(uri="file:///r.txt", name="r"), "[resource link: file:///r.txt (r)]"),
        (types.EmbeddedResource(resource=types.TextResourceContents(uri="file:///a.md", text="# A")),
         "[resource file:///a.md]\n# A"),
        (types.EmbeddedResource(resource=types.BlobResourceContents(uri="file:///b.pdf", blob=data,
                                                                    mime_type="application/pdf")),
         "[resource file:///b.pdf: application/pdf, 5 bytes — not shown]"),
    ]
    for block, want in blocks:
        assert describe_content(block) == want


# --- the hub, in process -----------------------------------------------------------------------


def test_hub_lists_and_calls_stdio_and_http_tools(server_py: Path, http_server: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes.tools.builtins import Toolbox
    from hermes.tools.mcp import McpHub

    pids = tmp_path / "stdio.pids"
    monkeypatch.setenv("HERMES_TEST_SVC_TOKEN", "svc-5ecret-7f3a9b2c1d")
    monkeypatch.setenv("HERMES_TEST_WEB_TOKEN", "web-5ecret-0a1b2c3d4e")
    hub = McpHub({"local": McpServer("local", command=sys.executable, args=(str(server_py), str(pids)),
                                     env={"SVC_TOKEN": "$HERMES_TEST_SVC_TOKEN", "MODE": "test"}, timeout=1.5),
                  "web": McpServer("web", url=http_server, headers={"Authorization": "Bearer ${HERMES_TEST_WEB_TOKEN}"}),
                  "broken": McpServer("broken", command=str(tmp_path / "no-such-server"))})
    box = Toolbox([], sources=[hub])
    try:
        names = {s.name for s in box.specs}
        assert {"local__add", "local__picture", "local__fails", "local__crash", "web__add", "web__crash"} <= names
        assert not any(n.startswith("broken__") for n in names)
        assert "no-such-server" in hub.failures()["broken"]
        spec = next(s for s in box.specs if s.name == "web__add")
        assert spec.parameters["required"] == ["a", "b"] and spec.description == "Add two integers."

        def run(name: str, args: dict[str, Any]) -> tuple[bool, str]:
            r = box.execute(ToolCall("c", name, orjson.dumps(args).decode()))
            return r.is_error, r.content

        assert run("local__add", {"a": 2, "b": 3}) == (False, "5")
        assert run("web__add", {"a": 40, "b": 2}) == (False, "42")
        # every HTTP request carried the configured header, its token read from the environment
        digest = hashlib.sha256(b"Bearer web-5ecret-0a1b2c3d4e").hexdigest()[:16]
        assert run("web__whoami", {}) == (False, digest)
        is_error, text = run("local__picture", {})
        assert not is_error and text == "[image: image/png, 1,000 bytes — not shown to the model]"
        # structured content is JSON text, whatever the width of its integers
        assert run("local__wide", {}) == (False, '{"n":1180591620717411303424,"s":"x"}')
        is_error, text = run("local__fails", {"reason": "no"})
        assert is_error and "local/fails failed" in text and "refused: no" in text
        # the server got its env; the secret it was given never reaches the model
        assert run("local__env", {"name": "MODE"}) == (False, "MODE=test")
        assert run("local__env", {"name": "SVC_TOKEN"}) == (False, "SVC_TOKEN=***")
        # a call over the server's timeout is the model's error; the server keeps serving
        is_error, text = run("local__sleep", {"seconds": 5})
        assert is_error and text == "error: McpToolError: MCP server 'local': sleep did not answer within 1.5 s"
        assert run("local__sleep", {"seconds": 0}) == (False, "awake")
        (server_pid,) = (int(p) for p in pids.read_text().split())  # one process all along
        assert alive(server_pid)
    finally:
        hub.close()
    deadline = time.monotonic() + 10
    while alive(server_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(server_pid), "the stdio server outlived close()"


def test_a_start_interrupted_by_the_user_is_joined_not_repeated(server_py: Path, tmp_path: Path) -> None:
    from hermes.tools.mcp import McpHub

    pids = tmp_path / "stdio.pids"
    hub = McpHub({"local": McpServer("local", command=sys.executable, args=(str(server_py), str(pids)))})
    try:
        with pytest.raises(TimeoutError):  # what a Ctrl-C during the first request's tool listing does
            hub._wait(hub._start_all(), 0.01)
        assert {t.spec.name for t in hub.tools()} >= {"local__add"}
        assert len(pids.read_text().split()) == 1, "one server process, not one per attempt"
    finally:
        hub.close()


# --- the whole CLI, two routes ------------------------------------------------------------------

STEPS: list[tuple[str, dict[str, Any], str]] = [
    ("local__add", {"a": 2, "b": 3}, "5"),
    ("web__add", {"a": 10, "b": 4}, "14"),
    ("local__add", {"a": "two"}, "error: arguments for local__add do not match its schema:\n"
                                 "- $: 'b' is a required property\n- $.a: 'two' is not of type 'integer'\n"),
    ("local__picture", {}, "[image: image/png"),
    ("local__crash", {}, "error: McpToolError: MCP server 'local' stopped during the call to crash"),
    ("local__add", {"a": 1, "b": 1}, "2"),
    ("web__crash", {}, "error: McpToolError: MCP server 'web' stopped during the call to crash"),
    ("web__add", {"a": 1, "b": 2}, "error: McpToolError: MCP server 'web' could not be started"),
]
ROUTES = {"deepseek": ["-p", "deepseek", "-m", "deepseek-v4"],
          "anthropic": ["-p", "anthropic", "-m", "claude-sonnet-4-5"]}


def replayed_reasoning(personality: str, body: dict[str, Any]) -> list[str]:
    """The reasoning each earlier assistant message carried in this request, as text."""
    out = []
    for m in body["messages"]:
        if m["role"] != "assistant":
            continue
        if personality == "deepseek":
            out.append(m.get("reasoning_content", "<missing>"))
        else:
            out.append("".join(b.get("thinking", "") for b in m["content"] if b.get("type") == "thinking"))
    return out


@pytest.mark.parametrize("route", list(ROUTES))
def test_multistep_turn_calls_mcp_tools_survives_crashes_and_replays_reasoning(
        route: str, emulator: Any, hermes_home: Path, server_py: Path, http_server: str, tmp_path: Path) -> None:
    pids = tmp_path / "stdio.pids"
    write_config(hermes_home, server_py, pids, http_server)

    listing = orjson.loads(cli(hermes_home, "mcp", "list", "--json").stdout)
    assert [s["name"] for s in listing] == ["local", "web"] and not any(s["error"] for s in listing)
    assert {"local__add", "local__crash"} <= {t["name"] for t in listing[0]["tools"]}

    script = " ".join(f"#call={name}{orjson.dumps(args).decode()}" for name, args, _ in STEPS)
    before = len(emulator.requests(route))
    r = cli(hermes_home, "chat", "-q", f"Use the MCP tools. {script}", *ROUTES[route], "-u", emulator.url(route),
            "--json", cwd=tmp_path)
    out = orjson.loads(r.stdout)
    assert out["stopped"] == "answer" and out["steps"] == len(STEPS) + 1, r.stderr
    assert r.stderr == "", "crashes are the model's tool errors, not noise on the user's terminal"
    logs = hermes_home / "logs"
    assert (logs / "mcp-local.log").stat().st_mode & 0o077 == 0 and (logs / "mcp.log").stat().st_mode & 0o077 == 0
    assert f"{len(STEPS)} scripted tool call(s)" in out["answer"]

    stored = Store(hermes_home / "state.db").load(out["session_id"])
    results = [p for m in stored if m.role == "tool" for p in m.parts]
    assert [p.name for p in results] == [name for name, _, _ in STEPS]
    for part, (name, _, want) in zip(results, STEPS, strict=True):
        assert part.content.startswith(want), (name, part.content)
        assert part.is_error == want.startswith("error:")

    # every step's reasoning went back on every later request of the turn, exactly as stored
    stored_reasoning = ["".join(p.text for p in m.parts if isinstance(p, Reasoning))
                        for m in stored if m.role == "assistant"]
    assert all(stored_reasoning[:len(STEPS)])
    requests = [q["body"] for q in emulator.requests(route)[before:]]
    assert len(requests) == len(STEPS) + 1
    for n, body in enumerate(requests):
        assert replayed_reasoning(route, body) == stored_reasoning[:n]

    # the stdio server was restarted once after its crash, and nothing outlives the CLI
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 3  # `mcp list`, the turn, the restart after the crash
    deadline = time.monotonic() + 10
    while any(alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(p) for p in started)


def test_mcp_list_reports_a_server_that_fails_to_start(hermes_home: Path, server_py: Path, tmp_path: Path) -> None:
    write_config(hermes_home, server_py, tmp_path / "p", extra='\n[mcp.servers.gone]\nurl = "http://127.0.0.1:9/mcp"\n')
    r = cli(hermes_home, "mcp", "list", check=False)
    assert r.returncode == 1
    assert "local  (stdio:" in r.stdout and "local__add — Add two integers." in r.stdout
    assert "gone  (http: http://127.0.0.1:9/mcp)  failed: ConnectError" in r.stdout


def test_a_server_that_fails_to_start_leaves_the_turn_running(emulator: Any, hermes_home: Path, server_py: Path,
                                                              tmp_path: Path) -> None:
    (hermes_home).mkdir(parents=True, exist_ok=True)
    (hermes_home / "config.toml").write_text(f'[mcp.servers.gone]\ncommand = "{tmp_path / "missing"}"\n')
    r = cli(hermes_home, "chat", "-q", "hello", "-p", "deepseek", "-m", "deepseek-v4", "-u",
            emulator.url("deepseek"), "--json", cwd=tmp_path)
    assert orjson.loads(r.stdout)["stopped"] == "answer"
    assert "MCP server 'gone' failed to start" in r.stderr
