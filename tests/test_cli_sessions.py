"""Sessions, logs, replay-by-id and the REPL, through the real CLI against the emulators."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
import pytest
from _cli import CANARY, cli


@pytest.fixture
def session(emulator, hermes_home, tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    out = cli(hermes_home, "chat", "-q", "look around", "-p", "openrouter", "-m", "anthropic/claude-sonnet-4.5",
              "-u", emulator.url("openrouter"), "--json", cwd=tmp_path)
    return orjson.loads(out.stdout)["session_id"]


def test_export_then_replay_file_equals_replay_by_id(session, emulator, hermes_home, tmp_path):
    export = tmp_path / "s.jsonl"
    cli(hermes_home, "sessions", "export", session, "-o", str(export))
    assert export.stat().st_mode & 0o077 == 0
    by_file = cli(hermes_home, "replay", str(export), "-p", "deepseek", "-m", "deepseek-v4", "--json").stdout
    by_id = cli(hermes_home, "replay", session, "-p", "deepseek", "-m", "deepseek-v4", "--json").stdout
    assert by_file == by_id
    report = orjson.loads(by_id)
    assert report["messages"][0]["fields"]["reasoning_content"].strip()
    body = orjson.loads(cli(hermes_home, "replay", session, "--body").stdout)  # the session's own route
    assert body["messages"][1]["reasoning_details"], "the exact body carries the details back"
    elsewhere = orjson.loads(cli(hermes_home, "replay", session, "-p", "openrouter", "-m", "anthropic/claude-sonnet-4.5",
                                 "--body").stdout)
    assert "reasoning_details" not in elsewhere["messages"][1], "signed details are bound to the host they came from"


def test_show_prints_carriers_without_blobs(session, hermes_home):
    text = cli(hermes_home, "sessions", "show", session).stdout
    assert "reasoning  from openrouter@127.0.0.1/anthropic/claude-sonnet-4.5" in text
    assert "blob openrouter.details" in text and "sha256:" in text
    data = orjson.loads(cli(hermes_home, "sessions", "show", session, "--json").stdout)
    reasoning = [p for m in data["messages"] for p in m["parts"] if p["kind"] == "reasoning"]
    assert reasoning and all("text" not in p and p["text_chars"] and set(p["blob"]) == {"blob_kind", "chars", "sha256"}
                             for p in reasoning)
    assert all("openrouter.details" in m.get("carriers", []) for m in data["messages"] if m["role"] == "assistant")
    full = orjson.loads(cli(hermes_home, "sessions", "show", session, "--json", "--reasoning").stdout)
    assert all(p["text"] for m in full["messages"] for p in m["parts"] if p["kind"] == "reasoning")
    listed = orjson.loads(cli(hermes_home, "sessions", "list", "--json").stdout)
    assert [s["id"] for s in listed] == [session]


def test_logs_say_which_fields_went_where(session, hermes_home):
    records = [orjson.loads(line) for line in cli(hermes_home, "logs", "--json").stdout.splitlines()]
    requests = [r for r in records if r["event"] == "request" and r["session"] == session]
    assert len(requests) == 2
    second = requests[1]
    assert second["route"] == "openrouter" and set(second["fields"]) >= {"reasoning_content", "reasoning",
                                                                         "reasoning_details"}
    assert second["fields"]["reasoning_details"]["hashes"]
    human = cli(hermes_home, "logs", "--session", session).stdout
    assert "→ openrouter@127.0.0.1/anthropic/claude-sonnet-4.5 step 2 [RC 1×" in human  # steps count from 1


def test_repl_branch_model_and_quit(session, emulator, hermes_home, tmp_path):
    env = {**os.environ, "HERMES_HOME": str(hermes_home), "HERMES_API_KEY": CANARY}
    script = "\n".join(["/sessions", "/branch side quest", "what now?",
                        f"/model deepseek:deepseek-v4 {emulator.url('deepseek')}", "and now?", "/nonsense",
                        "/quit"]) + "\n"
    before = len(emulator.requests("deepseek"))
    parent_before = orjson.loads(cli(hermes_home, "sessions", "list", "--json").stdout)[0]["messages"]
    r = subprocess.run([sys.executable, "-m", "hermes", "chat", "--resume", session, "-u", emulator.url("openrouter")],
                       input=script, capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "on branch" in r.stderr and "unknown command /nonsense" in r.stderr
    assert "now deepseek · deepseek-v4" in r.stderr
    listed = orjson.loads(cli(hermes_home, "sessions", "list", "--json").stdout)
    branch = next(s for s in listed if s["id"] != session)
    assert branch["parent_id"] == session and branch["title"] == "side quest"
    parent = next(s for s in listed if s["id"] == session)
    assert parent["messages"] == parent_before  # the REPL turns went to the branch, not the parent
    assert branch["messages"] > parent_before
    deepseek = emulator.requests("deepseek")[before:]
    assert deepseek, "the /model switch sent the next turn to deepseek"
    first = deepseek[0]["body"]["messages"]
    assistant = [m for m in first if m["role"] == "assistant"]
    assert all(m.get("reasoning_content", "").strip() for m in assistant)
    assert not any("reasoning_details" in m for m in first), "openrouter's signed details never reach deepseek"


def test_delete_asks_and_then_deletes(session, hermes_home):
    r = cli(hermes_home, "sessions", "delete", session, "--yes")
    assert f"deleted {session}" in r.stdout
    assert orjson.loads(cli(hermes_home, "sessions", "list", "--json").stdout) == []


def test_chat_waits_for_the_session_lease_a_gateway_holds(session, emulator, hermes_home, tmp_path):
    """`hermes chat` takes the lease the gateway takes: while another turn holds the session,
    the CLI turn sends nothing; once it is released, the CLI turn runs."""
    import time

    from hermes.store import Store

    store = Store(hermes_home / "state.db")
    assert store.acquire_lock(session, "gateway-worker-turn", 60)
    before = len(emulator.requests("openrouter"))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HERMES_HOME=str(hermes_home), HERMES_API_KEY=CANARY)
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "chat", "-r", session, "-q", "and now?", "--json"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3)  # the CLI is up and polling the lease by now
        assert proc.poll() is None, proc.communicate()
        assert len(emulator.requests("openrouter")) == before, "no request while another turn holds the session"
        assert store.release_lock(session, "gateway-worker-turn")
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert orjson.loads(out)["session_id"] == session
    assert len(emulator.requests("openrouter")) > before
    assert store.acquire_lock(session, "gateway-worker-turn", 60), "the CLI released the lease"
