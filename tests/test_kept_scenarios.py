"""Kept build results as a user meets them: ``hermes chat -q --resume`` in a new process,
against the emulators over loopback.

A session is stored by one process; the next turn runs in a new process that builds its
first request from the kept runs. The same turn is run from a copy of the
same home whose kept results were removed (a build that plans and renders everything). The
provider receives the same request — the reasoning of every earlier turn included, byte for
byte — and the log says the first one was built from kept results.
"""

from __future__ import annotations

import shutil
import sqlite3

import orjson
import pytest
from _cli import cli

from hermes.store.requestlog import read_log

ROUTES = {
    "deepseek": (["-p", "deepseek", "-m", "deepseek-v4"], "deepseek"),
    "openrouter": (["-p", "openrouter", "-m", "anthropic/claude-sonnet-4.5"], "openrouter"),
    "anthropic": (["-p", "anthropic", "-m", "claude-opus-5"], "anthropic"),
}


def _requests_logged(home, sid):
    return [r for r in read_log(sid, home / "logs" / "hermes.log") if r.get("event") == "request"]


def _first_request(emulator, personality, home, cwd, sid, stream):
    """(the body the provider received first, its log record) for one resumed turn."""
    before, logged = len(emulator.requests(personality)), len(_requests_logged(home, sid))
    cli(home, "chat", "--resume", sid, "-q", "And then?", stream, "--json", cwd=cwd)
    return emulator.requests(personality)[before]["body"], _requests_logged(home, sid)[logged]


def _reasoning(body):
    """Every reasoning value the body carries, in order (chat fields or thinking blocks)."""
    out = []
    for m in body["messages"]:
        if m.get("role") != "assistant":
            continue
        out += [m[k] for k in ("reasoning_content", "reasoning", "reasoning_details") if k in m]
        if isinstance(m.get("content"), list):
            out += [(b.get("thinking"), b.get("signature")) for b in m["content"] if b.get("type") == "thinking"]
    return out


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
@pytest.mark.parametrize("route", list(ROUTES))
def test_resumed_turn_from_kept_results_sends_what_a_full_build_sends(route, stream, emulator, hermes_home,
                                                                      tmp_path):
    flags, personality = ROUTES[route]
    (tmp_path / "notes.txt").write_text("hello\n")
    url = ["-u", emulator.url(personality)]
    sid = orjson.loads(cli(hermes_home, "chat", "-q", "What is here?", *flags, *url, stream, "--json",
                           cwd=tmp_path).stdout)["session_id"]
    cli(hermes_home, "chat", "--resume", sid, "-q", "And the notes?", stream, "--json", cwd=tmp_path)
    with sqlite3.connect(hermes_home / "state.db") as db:
        kept = db.execute("SELECT COUNT(*) FROM kept_runs WHERE session_id = ?", (sid,)).fetchone()[0]
    assert kept > 0, "the turns kept no build results"

    bare = tmp_path / "bare-home"  # the same session, without its kept results
    shutil.copytree(hermes_home, bare)
    with sqlite3.connect(bare / "state.db") as db:
        db.execute("DELETE FROM kept_runs")

    from_kept, log_kept = _first_request(emulator, personality, hermes_home, tmp_path, sid, stream)
    full, log_full = _first_request(emulator, personality, bare, tmp_path, sid, stream)
    assert orjson.dumps(from_kept) == orjson.dumps(full)
    assert _reasoning(from_kept) and _reasoning(from_kept) == _reasoning(full)
    assert log_kept["kept"] > 0  # built from kept results ...
    assert log_full["kept"] == 0  # ... and the other one planned everything
    assert {k: v for k, v in log_kept.items() if k not in ("ts", "ms", "kept")} == \
        {k: v for k, v in log_full.items() if k not in ("ts", "ms", "kept")}  # and is logged the same


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_a_session_moved_to_mistral_resumes_from_kept_results(stream, emulator, hermes_home, tmp_path):
    """A session started on DeepSeek (its ids ``call_…``) goes on on Mistral, which takes only
    nine-character ids: every earlier id is renamed in Mistral's requests, the turn keeps build
    results with those ids, and the next turn, in a new process, sends what a full build sends."""
    (tmp_path / "notes.txt").write_text("hello\n")
    deepseek = [*ROUTES["deepseek"][0], "-u", emulator.url("deepseek")]
    mistral = ["-p", "mistral", "-m", "mistral-medium-latest", "-u", emulator.url("mistral")]
    sid = orjson.loads(cli(hermes_home, "chat", "-q", "What is here?", *deepseek, stream, "--json",
                           cwd=tmp_path).stdout)["session_id"]
    cli(hermes_home, "chat", "--resume", sid, "-q", "And the notes?", *mistral, stream, "--json", cwd=tmp_path)
    bare = tmp_path / "bare-home"
    shutil.copytree(hermes_home, bare)
    with sqlite3.connect(bare / "state.db") as db:
        assert db.execute("SELECT COUNT(*) FROM kept_runs WHERE session_id = ?", (sid,)).fetchone()[0] > 0
        db.execute("DELETE FROM kept_runs")

    sent = []
    for home in (hermes_home, bare):
        before, logged = len(emulator.requests("mistral")), len(_requests_logged(home, sid))
        cli(home, "chat", "--resume", sid, "-q", "And then?", *mistral, stream, "--json", cwd=tmp_path)
        sent.append((emulator.requests("mistral")[before]["body"], _requests_logged(home, sid)[logged]))
    (from_kept, log_kept), (full, log_full) = sent
    assert orjson.dumps(from_kept) == orjson.dumps(full)
    assert log_kept["kept"] > 0 and log_full["kept"] == 0
    ids = [c["id"] for m in from_kept["messages"] for c in m.get("tool_calls") or ()]
    ids += [m["tool_call_id"] for m in from_kept["messages"] if m["role"] == "tool"]
    assert ids and all(len(i) == 9 and i.isalnum() for i in ids)
