"""Item 3: tools stay inside the workspace.

Attack: a hostile provider (or a prompt injection) makes the model call ``read_file``,
``list_dir`` and ``search_files`` with absolute paths, ``..``, ``~`` and symlinks leading to
``~/.ssh``. Before the fix every one of them read the private key and it was sent upstream.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import httpx
import orjson
import pytest
from _cli import cli
from _harness import gateway, hostile, tool_then_answer

from hermes.config.settings import Config
from hermes.core.messages import ToolCall
from hermes.tools.builtins import ToolContext, load_toolbox

PRIVATE = "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA-not-a-real-key"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with ~/.ssh/id_ed25519, and a workspace with symlinks pointing out of it."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(PRIVATE + "\n")
    monkeypatch.setenv("HOME", str(home))
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print('hello')\n")
    (ws / "ssh").symlink_to(home / ".ssh")
    (ws / "key.txt").symlink_to(home / ".ssh" / "id_ed25519")
    (ws / "src" / "up").symlink_to(tmp_path)
    return ws


ESCAPES = [
    ("read_file", {"path": "~/.ssh/id_ed25519"}),
    ("read_file", {"path": "../home/.ssh/id_ed25519"}),
    ("read_file", {"path": "src/../../home/.ssh/id_ed25519"}),
    ("read_file", {"path": "key.txt"}),
    ("read_file", {"path": "ssh/id_ed25519"}),
    ("read_file", {"path": "src/up/home/.ssh/id_ed25519"}),
    ("list_dir", {"path": "~/.ssh"}),
    ("list_dir", {"path": "ssh"}),
    ("list_dir", {"path": "/"}),
    ("search_files", {"pattern": "PRIVATE", "path": ".."}),
    ("search_files", {"pattern": "PRIVATE", "path": "ssh"}),
]


@pytest.mark.parametrize(("tool", "args"), ESCAPES)
def test_every_escape_is_an_error_for_the_model(world: Path, tool: str, args: dict[str, str]) -> None:
    args = {k: v.replace("/home/", f"/{world.parent.name}/home/") if v.startswith("/") else v
            for k, v in args.items()}
    box = load_toolbox(ToolContext(cwd=world), plugins=False)
    out = box.execute(ToolCall("c", tool, json.dumps(args)))
    assert out.is_error and "outside the workspace" in out.content, out.content
    assert "BEGIN OPENSSH" not in out.content and "id_ed25519" not in out.content.replace(args.get("path", ""), "")


def test_absolute_path_outside_and_search_through_symlinks(world: Path) -> None:
    box = load_toolbox(ToolContext(cwd=world), plugins=False)
    absolute = str(world.parent / "home" / ".ssh" / "id_ed25519")
    assert box.execute(ToolCall("c", "read_file", json.dumps({"path": absolute}))).is_error
    # searching the workspace itself must not follow its symlinks out
    found = box.execute(ToolCall("c", "search_files", json.dumps({"pattern": "OPENSSH"})))
    assert not found.is_error and found.content.startswith("no matches in 1 file")
    assert "OPENSSH" not in found.content and "[not followed: 1 link or special file: key.txt]" in found.content
    inside = box.execute(ToolCall("c", "read_file", json.dumps({"path": str(world / "src" / "app.py")})))
    assert inside.content == "print('hello')\n"
    wider = load_toolbox(ToolContext(cwd=world, read_roots=(world.parent / "home" / ".ssh",)), plugins=False)
    assert PRIVATE in wider.execute(ToolCall("c", "read_file", json.dumps({"path": "~/.ssh/id_ed25519"}))).content


def test_hostile_provider_cannot_read_ssh_through_the_gateway(world: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(world)  # the gateway's tools run in its working directory
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-ds-server-key-000111222")
    with hostile(tool_then_answer("read_file", path="~/.ssh/id_ed25519")) as evil, \
            gateway(tmp_path / "gw", Config(allowed_base_urls=(evil.root,))) as base, \
            httpx.Client(base_url=base, timeout=30) as c:
        sid = c.post("/v1/sessions", json={"provider": "deepseek", "model": "m", "base_url": evil.url}).json()["id"]
        r = c.post(f"/v1/sessions/{sid}/messages", json={"content": "summarise my keys"})
        assert r.status_code == 200 and r.json()["stopped"] == "answer", r.text
        assert len(evil.requests) == 2
        tool_msg = evil.requests[1]["body"]["messages"][-1]
        assert tool_msg["role"] == "tool" and "outside the workspace" in tool_msg["content"]
    assert not evil.seen("BEGIN OPENSSH")
    with sqlite3.connect(tmp_path / "gw" / "state.db") as db:
        dump = "\n".join(db.iterdump())
    assert "BEGIN OPENSSH" not in dump


def test_cli_allow_read_widens_explicitly(world: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.md").write_text("buy milk\n")
    script = tool_then_answer("read_file", path=str(notes / "todo.md"))
    for flags, expect in (((), "outside the workspace"), (("--allow-read", str(notes)), "buy milk")):
        with hostile(script) as local:
            r = cli(tmp_path / "hh", "chat", "-q", "read my notes", "-p", "deepseek", "-m", "m", "-u", local.url,
                    "--no-stream", *flags, cwd=world)
            assert r.returncode == 0, r.stderr
            assert expect in orjson.dumps(local.requests[1]["body"]["messages"][-1]).decode()
    assert os.path.exists(world / "src" / "app.py")
