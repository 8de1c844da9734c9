"""Item 5: no tool call can hang a turn or exhaust memory.

Each attack runs the real toolbox in a child process with a hard timeout and a 1 GiB address
space limit, so the old behaviour (blocking forever on a FIFO, reading ``/dev/zero`` until
MemoryError, a regular expression running for minutes, a background child holding
``run_command``'s pipe) fails the test instead of taking the test run down with it. Then a
hostile provider drives a catastrophic pattern through the gateway: the turn goes on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest
from _harness import gateway, hostile, tool_then_answer

from hermes.config.settings import Config
from hermes.tools.builtins import ToolContext, load_toolbox

CHILD = textwrap.dedent("""
    import json, resource, sys, time
    from pathlib import Path
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    from hermes.core.messages import ToolCall
    from hermes.tools.builtins import ToolContext, load_toolbox
    ws, tool, args, roots = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    import dataclasses
    known = {f.name for f in dataclasses.fields(ToolContext)}  # the same attack runs on older code
    want = dict(cwd=Path(ws), read_roots=tuple(Path(r) for r in roots), allow_commands=True,
                search_timeout_s=1.0, command_timeout_s=30)
    ctx = ToolContext(**{k: v for k, v in want.items() if k in known})
    box = load_toolbox(ctx, plugins=False)
    t = time.monotonic()
    out = box.execute(ToolCall("c", tool, args))
    print(json.dumps({"error": out.is_error, "content": out.content[:2000], "tail": out.content[-300:], "s": time.monotonic() - t}))
""")


def attack(ws: Path, tool: str, args: dict[str, object], roots: tuple[str, ...] = (), limit: float = 8) -> dict:
    r = subprocess.run([sys.executable, "-c", CHILD, str(ws), tool, json.dumps(args), json.dumps(list(roots))],
                       capture_output=True, text=True, timeout=limit, env={**os.environ, "HOME": str(ws)})
    assert r.returncode == 0, r.stderr[-2000:]
    return dict(json.loads(r.stdout))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    (w / "sub").mkdir(parents=True)
    os.mkfifo(w / "pipe")
    os.mkfifo(w / "sub" / "pipe")
    (w / "sub" / "a.txt").write_text("needle\n")
    with open(w / "big.log", "wb") as f:  # 3 GiB, sparse: the old read_file loaded all of it
        f.truncate(3 << 30)
    (w / "evil.txt").write_text("a" * 40 + "!\n")
    return w


def test_fifo_and_devices_are_refused_quickly(ws: Path) -> None:
    out = attack(ws, "read_file", {"path": "pipe"})
    assert out["error"] and "not a regular file" in out["content"]
    out = attack(ws, "read_file", {"path": "/dev/zero"}, roots=("/dev",))
    assert out["error"] and "not a regular file" in out["content"]


def test_huge_file_is_read_only_up_to_the_limit(ws: Path) -> None:
    out = attack(ws, "read_file", {"path": "big.log"})
    assert not out["error"] and out["content"].startswith("big.log is a binary file (3221225472 bytes)")
    (ws / "big.txt").write_bytes(b"x" * (5 << 20))
    out = attack(ws, "read_file", {"path": "big.txt"})
    assert "[file cut: 5,242,880 bytes, showing the first 258,048]" in out["tail"]


def test_search_skips_fifos_and_bounds_time(ws: Path) -> None:
    out = attack(ws, "search_files", {"pattern": "needle"})
    assert not out["error"] and out["content"].splitlines() == [
        "sub/a.txt:1: needle", "[not searched: 1 file: big.log (binary)]",
        "[not followed: 2 links or special files: pipe, sub/pipe]"]
    out = attack(ws, "search_files", {"pattern": "(a+)+$", "regex": True}, limit=20)  # minutes under `re`
    assert not out["error"] and out["content"].startswith("no matches in 2 files") and out["s"] < 5
    out = attack(ws, "search_files", {"pattern": "(a|aa)+$", "regex": True}, limit=20)  # catastrophic anywhere
    assert out["error"] and "took longer than 1 s" in out["content"] and out["s"] < 8
    out = attack(ws, "search_files", {"pattern": "(a+)+$"})  # literal by default: instant, no match
    assert not out["error"] and out["content"].startswith("no matches in 2 files")


def test_run_command_timeout_kills_background_children(ws: Path) -> None:
    out = attack(ws, "run_command", {"command": "sleep 60 & echo started; sleep 60", "timeout": 1}, limit=20)
    assert out["error"] and "timed out after 1 s" in out["content"] and "started" in out["content"]
    assert out["s"] < 8
    out = attack(ws, "run_command", {"command": "yes | head -c 50000000"}, limit=30)
    assert not out["error"] and "[output cut: 50,000,000 bytes" in out["tail"]


def test_a_stuck_tool_does_not_stop_the_gateway_turn(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ws)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-ds-bounded-000111222333")
    box = lambda: load_toolbox(ToolContext(search_timeout_s=1.0), plugins=False)
    with hostile(tool_then_answer("search_files", pattern="(a|aa)+$", regex=True)) as upstream, \
            gateway(tmp_path / "gw", Config(allowed_base_urls=(upstream.root,)), toolbox=box) as base, \
            httpx.Client(base_url=base, timeout=30) as c:
        sid = c.post("/v1/sessions", json={"provider": "deepseek", "model": "m", "base_url": upstream.url}).json()["id"]
        r = c.post(f"/v1/sessions/{sid}/messages", json={"content": "find it"})
        assert r.status_code == 200 and r.json()["stopped"] == "answer", r.text
        tool_msg = upstream.requests[1]["body"]["messages"][-1]
        assert "took longer than 1 s" in tool_msg["content"]
        r = c.post(f"/v1/sessions/{sid}/messages", json={"content": "again"}, )
        assert r.status_code == 200  # the session is not left busy
