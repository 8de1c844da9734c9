"""The rough edges a new user hits on the first day, each fixed and held by a test: ids that
wrap, silent `--json` failures, empty sessions from a closed stdin, an `--api-key` Bedrock
ignores, Vertex look-alikes, docs citing files outside the repo, no sign of slow work."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
from _cli import CANARY, cli
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.cli.sessions import session_table
from hermes.core.messages import Message
from hermes.store import Store
from hermes.store.records import SessionInfo

REPO = Path(__file__).resolve().parent.parent


def run(home: Path, *args: str, stdin: Any = subprocess.DEVNULL, env: dict[str, str] | None = None,
        preexec: Any = None, stderr: Any = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    full.update(HERMES_HOME=str(home), HERMES_API_KEY=CANARY, **(env or {}))
    return subprocess.run([sys.executable, "-m", "hermes", *args], stdin=stdin, stdout=subprocess.PIPE,
                          stderr=stderr, text=True, env=full, timeout=120, preexec_fn=preexec)


# --- sessions list: ids never wrap -------------------------------------------------------------


def test_sessions_list_keeps_every_id_whole_in_80_columns(hermes_home: Path) -> None:
    store = Store(hermes_home / "state.db")
    ids = [store.create_session(provider="openrouter", model="anthropic/claude-sonnet-4.5-" + "x" * 40,
                                title="a long title that goes on and on " * 3) for _ in range(3)]
    for sid in ids:  # `sessions list` shows sessions with messages
        store.append_turn(sid, [Message.user("hi")])
    ids.append(store.branch(ids[0], title="a branch " * 10))
    for cols in ("80", "60"):
        out = run(hermes_home, "sessions", "list", env={"COLUMNS": cols}).stdout.splitlines()
        assert all(len(line) <= int(cols) for line in out), out
        rows = out[1:]
        assert sorted(line.split()[0] for line in rows) == sorted(ids)


ROWS = st.lists(st.builds(
    SessionInfo, id=st.text("0123456789abcdef", min_size=12, max_size=12), title=st.text(max_size=80),
    provider=st.text("abcdefgh-", min_size=1, max_size=20), model=st.text(max_size=60), base_url=st.just(""),
    parent_id=st.none() | st.text("0123456789abcdef", min_size=12, max_size=12), branch_of_seq=st.none(),
    created=st.just(0.0), updated=st.floats(0, 2e9), message_count=st.integers(0, 10**6),
    turn_count=st.just(0)), min_size=1, max_size=5)


@settings(max_examples=200, deadline=None)
@given(ROWS, st.integers(28, 240))
def test_session_table_fits_the_width_and_never_cuts_an_id(rows: list[Any], width: int) -> None:
    lines = session_table(rows, width)
    assert all(len(line) <= width for line in lines)
    for info, line in zip(rows, lines[1:], strict=True):
        assert line.startswith(info.id + "  ")


# --- chat --json: a JSON object on failure, exit code kept ---------------------------------------


def test_chat_json_prints_a_json_error_and_keeps_the_exit_code(emulator: Any, hermes_home: Path) -> None:
    emulator.state.set_control("deepseek", fault="500", times=10)
    try:
        r = run(hermes_home, "chat", "-q", "hi", "-p", "deepseek", "-m", "deepseek-v4", "-u",
                emulator.url("deepseek"), "--json")
    finally:
        emulator.state.set_control("deepseek")
    assert r.returncode == 1
    out = orjson.loads(r.stdout)
    assert "HTTP 500" in out["error"] and out["status"] == 500 and out["type"] == "ProviderHTTPError"
    assert out["session_id"] is None  # the first step never committed: nothing was stored
    assert "hermes: error:" in r.stderr and CANARY not in r.stdout + r.stderr

    r = run(hermes_home, "chat", "-q", "hi", "-p", "vertex-ai", "-m", "m", "--json")
    assert r.returncode == 1
    out = orjson.loads(r.stdout)
    assert out["session_id"] is None and out["error"] == "unknown provider 'vertex-ai'"
    assert "-p anthropic-vertex (or vertex-anthropic) = Anthropic on Vertex AI" in out["hint"]


# --- hermes chat with closed stdin and no -q -----------------------------------------------------


def test_chat_without_query_on_a_closed_or_empty_stdin_does_nothing_and_says_why(emulator: Any,
                                                                                  hermes_home: Path) -> None:
    args = ("chat", "-p", "deepseek", "-m", "deepseek-v4", "-u", emulator.url("deepseek"))
    empty = run(hermes_home, *args)
    closed = run(hermes_home, *args, preexec=lambda: os.close(0))
    for r in (empty, closed):
        assert r.returncode == 1 and "nothing to do: no -q and stdin is closed or empty" in r.stderr
        assert 'pass -q "your question"' in r.stderr
    listed = orjson.loads(cli(hermes_home, "sessions", "list", "--json").stdout)
    assert listed == []

    piped = subprocess.run([sys.executable, "-m", "hermes", *args], input="\n  \nwhat is here?\n",
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "HERMES_HOME": str(hermes_home), "HERMES_API_KEY": CANARY})
    assert piped.returncode == 0, piped.stderr
    (only,) = orjson.loads(cli(hermes_home, "sessions", "list", "--json").stdout)
    stored = Store(hermes_home / "state.db").load(only["id"])
    assert stored[0].role == "user" and stored[0].text == "what is here?"
    assert only["title"] == "what is here?"


# --- --api-key with Bedrock ------------------------------------------------------------------------


def test_api_key_with_bedrock_is_said_to_be_ignored(emulator: Any, hermes_home: Path, aws_env: None) -> None:
    r = run(hermes_home, "chat", "-q", "hi", "-p", "bedrock", "-m", "anthropic.claude-sonnet-4-5-v1:0", "-u",
            emulator.url("bedrock"), "--api-key", "sk-not-for-bedrock-123456", "--json")
    assert r.returncode == 0, r.stderr
    assert "--api-key is ignored for AWS Bedrock Converse: it signs requests with the AWS credential chain" \
        in r.stderr
    assert "sk-not-for-bedrock-123456" not in r.stdout + r.stderr
    r = run(hermes_home, "chat", "-q", "hi", "-p", "deepseek", "-m", "deepseek-v4", "-u",
            emulator.url("deepseek"), "--api-key", "sk-for-deepseek-123456", "--json")
    assert r.returncode == 0 and "ignored" not in r.stderr


# --- Vertex look-alikes -------------------------------------------------------------------------


def test_vertex_and_anthropic_vertex_are_told_apart(hermes_home: Path) -> None:
    table = run(hermes_home, "routes", "--wide", env={"COLUMNS": "250"}).stdout
    rows = {line.split("│")[1].strip(): line for line in table.splitlines() if line.count("│") > 3}
    assert "Gemini on Vertex AI" in rows["gemini-vertex (vertex)"]
    assert "Anthropic on Vertex AI" in rows["anthropic-vertex (vertex-anthropic)"]
    assert "-p vertex is Gemini on Vertex AI, Claude on Vertex AI is -p anthropic-vertex" in " ".join(table.split())

    why = orjson.loads(run(hermes_home, "routes", "explain", "-p", "vertex", "-u",
                           "https://us-east5-aiplatform.googleapis.com/v1", "-m", "gemini-3-pro",
                           "--json").stdout)["why"]
    assert why[:2] == ["--provider 'vertex' names row 'gemini-vertex' (Gemini on Vertex AI)",
                       "not to be confused with 'anthropic-vertex' (Anthropic on Vertex AI, another wire)"]
    r = run(hermes_home, "chat", "-q", "hi", "-p", "google-vertex", "-m", "claude-sonnet-4-5")
    assert r.returncode == 1 and "unknown provider 'google-vertex'" in r.stderr
    assert "-p gemini-vertex (or vertex) = Gemini on Vertex AI" in r.stderr
    assert "-p anthropic-vertex (or vertex-anthropic) = Anthropic on Vertex AI" in r.stderr


# --- docs stand alone -----------------------------------------------------------------------------


def test_docs_and_code_cite_nothing_outside_the_repository() -> None:
    from hermes.rejections import SESSION_KEY

    # spelled in pieces so that this pattern is not itself a citation for repository-wide greps
    notes = "shared" + "/research"
    outside = re.compile(rf"{notes}|research/providers\.md|seed[ -]system|seed\s§")
    files = [REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "hermes").rglob("*.py"),
             *(REPO / "tests").glob("*.py")]
    cited = [f"{f.relative_to(REPO)}:{n}" for f in files if f != Path(__file__)
             for n, line in enumerate(f.read_text().splitlines(), 1) if outside.search(line)]
    assert cited == []
    store_md = (REPO / "docs" / "store.md").read_text()
    assert "reasoning_rejected_carriers" not in store_md and SESSION_KEY in store_md


# --- a spinner for slow work ----------------------------------------------------------------------


def session_with_turns(emulator: Any, home: Path, turns: int) -> str:
    from hermes.agent.loop import Agent
    from hermes.routing.resolve import resolve
    from hermes.tools.builtins import ToolContext, load_toolbox

    store = Store(home / "state.db")
    sid = store.create_session(provider="deepseek", model="deepseek-v4")
    agent = Agent(store, load_toolbox(ToolContext(cwd=home), plugins=False), api_key="k", stream=False)
    for i in range(turns):
        agent.run_turn(sid, f"turn {i}: what is here?", resolve("deepseek", emulator.url("deepseek"), "deepseek-v4"))
    store.update_session(sid, provider="deepseek", model="deepseek-v4", base_url=emulator.url("deepseek"))
    return sid


def test_sessions_compress_shows_a_spinner_on_a_terminal_only(emulator: Any, hermes_home: Path) -> None:
    plain = run(hermes_home, "sessions", "compress", session_with_turns(emulator, hermes_home, 4))
    assert plain.returncode == 0 and plain.stdout.startswith("compacted "), plain.stdout + plain.stderr
    assert plain.stderr == ""

    sid = session_with_turns(emulator, hermes_home, 4)
    main, tty = pty.openpty()
    try:
        r = run(hermes_home, "sessions", "compress", sid, stderr=tty)
        os.close(tty)
        tty = -1
        seen = b""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                chunk = os.read(main, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(main)
        if tty >= 0:
            os.close(tty)
    assert r.returncode == 0 and r.stdout.startswith("compacted ")
    assert f"compressing {sid}: summarising older turns with deepseek · deepseek-v4".encode() in seen
