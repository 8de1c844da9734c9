"""Bad input and crashes through the CLI: a clear one-line message and no lost data."""

from __future__ import annotations

import os
import pwd
import signal
import sqlite3
import subprocess
import sys
import time

import orjson
from _cli import cli

from hermes.core.messages import dumps
from hermes.store import Store
from hermes.tools.builtins import MAX_OUTPUT, Tool, Toolbox, builtin_tools
from hermes.wire import ToolSpec


def test_unknown_session_id(hermes_home):
    r = cli(hermes_home, "chat", "--resume", "nosuchsession", "-q", "hi", "-p", "deepseek", "-m", "m", check=False)
    assert r.returncode == 1 and "unknown session 'nosuchsession'" in r.stderr and "Traceback" not in r.stderr
    r = cli(hermes_home, "sessions", "show", "nosuchsession", check=False)
    assert r.returncode == 1 and "hermes sessions list" in r.stderr


def test_corrupt_config_names_file_and_line(hermes_home):
    hermes_home.mkdir(parents=True)
    (hermes_home / "config.toml").write_text('provider = "deepseek"\nmodel = \n')
    r = cli(hermes_home, "chat", "-q", "hi", check=False)
    assert r.returncode == 1 and f"{hermes_home / 'config.toml'}:2:" in r.stderr
    (hermes_home / "config.toml").write_text('provider = "deepseek"\napi_key = "sk-x"\n')
    r = cli(hermes_home, "chat", "-q", "hi", check=False)
    assert r.returncode == 1 and "does not belong in config.toml" in r.stderr
    assert not (hermes_home / "state.db").exists() or Store(hermes_home / "state.db").list_sessions() == []


def test_state_db_from_a_newer_schema_is_refused_untouched(hermes_home):
    hermes_home.mkdir(parents=True)
    db = hermes_home / "state.db"
    Store(db).close()
    c = sqlite3.connect(db)
    with c:
        c.execute("INSERT INTO _migrations (name, applied) VALUES ('m999_future', 0)")
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()
    before = db.read_bytes()
    r = cli(hermes_home, "sessions", "list", check=False)
    assert r.returncode == 1 and "newer Hermes" in r.stderr
    assert db.read_bytes() == before


def test_read_only_home_is_a_clear_error(tmp_path):
    """Root ignores permission bits, so the CLI runs in a forked child that became ``nobody``."""
    home = tmp_path / "ro-home"
    home.mkdir()
    home.chmod(0o555)
    tmp_path.chmod(0o755)
    nobody = pwd.getpwnam("nobody")
    import hermes.cli.sessions  # noqa: F401  # nobody cannot read root's site-packages: import first
    from hermes.cli import main

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: become nobody, run the CLI, report (exit code, stderr) through the pipe
        code = 99
        try:
            os.setuid(nobody.pw_uid)
            os.environ["HERMES_HOME"] = str(home)
            sys.stderr = os.fdopen(write_fd, "w")
            try:
                main(["sessions", "list"])
                code = 0
            except SystemExit as e:
                code = int(e.code or 0)
            sys.stderr.flush()
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        err = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 1, err
    assert "hermes: error:" in err and str(home) in err and "Traceback" not in err
    assert list(home.iterdir()) == []


def test_a_tool_returning_10_mb_is_cut_with_a_note(tmp_path):
    big = Tool(ToolSpec("big"), lambda args, ctx: "x" * 10_000_000)
    from hermes.core.messages import ToolCall
    from hermes.tools.builtins import ToolContext

    box = Toolbox([*builtin_tools(), big], ToolContext(cwd=tmp_path))

    r = box.execute(ToolCall("c1", "big", "{}"))
    assert len(r.content) < MAX_OUTPUT + 200 and "output truncated: 10,000,000 characters" in r.content
    bad = box.execute(ToolCall("c2", "nosuch", "{}"))
    assert bad.is_error and "unknown tool 'nosuch'" in bad.content
    worse = box.execute(ToolCall("c3", "read_file", "{not json"))
    assert worse.is_error and "bad arguments" in worse.content
    missing = box.execute(ToolCall("c4", "read_file", orjson.dumps({"path": str(tmp_path / "none")}).decode()))
    assert missing.is_error and "FileNotFoundError" in missing.content


def assert_whole_steps(msgs) -> None:
    """Only whole steps: a tool-calling assistant message is always followed by its results."""
    for i, m in enumerate(msgs):
        if m.role == "assistant" and m.tool_calls:
            assert i + 1 < len(msgs) and msgs[i + 1].role == "tool", "a step was stored half-way"
            assert {c.id for c in m.tool_calls} == {r.call_id for r in msgs[i + 1].parts}
        if m.role == "user" and i + 1 < len(msgs):
            assert msgs[i + 1].role == "assistant"
    assert not msgs or msgs[-1].role != "user", "a user message was stored without its first step"


def test_kill_9_mid_stream_leaves_whole_turns_only(emulator, hermes_home, tmp_path):
    args = ["-p", "anthropic", "-m", "claude-opus-5", "-u", emulator.url("anthropic")]
    sid = orjson.loads(cli(hermes_home, "chat", "-q", "first", *args, "--json", cwd=tmp_path).stdout)["session_id"]
    db = hermes_home / "state.db"
    before = [dumps(m) for m in Store(db).load(sid)]
    env = {**os.environ, "HERMES_HOME": str(hermes_home), "HERMES_API_KEY": "k"}
    emulator.state.set_control("anthropic", fault="slow", times=-1, delay=0.3)
    try:
        for attempt in range(3):
            seen = len(emulator.requests("anthropic"))
            proc = subprocess.Popen([sys.executable, "-m", "hermes", "chat", "--resume", sid, "-q", f"second {attempt}",
                                     "--stream"], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            deadline = time.monotonic() + 30
            while len(emulator.requests("anthropic")) <= seen and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.2 + 0.3 * attempt)  # somewhere inside the slow stream
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
            assert proc.returncode == -signal.SIGKILL, "the turn finished before it could be killed"
            store = Store(db)
            after = store.load(sid)
            assert [dumps(m) for m in after[: len(before)]] == before
            assert_whole_steps(after[len(before):])
            before = [dumps(m) for m in after]
            with sqlite3.connect(db) as c:
                assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            store.close()
    finally:
        emulator.state.set_control("anthropic", delay=0.0)
