"""``hermes chat --system`` / ``-s`` (a habit from ``llm``): the system prompt is stored with the
session's next turn, so a resume in a new process keeps it, and every route is sent it the way
that wire takes one — a system message on chat completions and Responses, the top-level
``system`` on Anthropic Messages and Bedrock Converse, ``systemInstruction`` on Gemini. Real CLI processes, real
HTTP to the loopback emulators; what reached each provider is read from its request log."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from _cli import CANARY, cli

from hermes.core.history import system_prompt
from hermes.store import Store

SYSTEM = "You are Hermes-under-test; answer like a pirate. (sys-7f3a)"
OTHER = "Now answer like a lawyer. (sys-19c2)"


def _new(emulator: Any, name: str, since: int) -> list[dict[str, Any]]:
    return [r["body"] for r in emulator.requests(name)[since:]]


def _chat_system(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "system"]


def _stored(home: Path, sid: str) -> list[str]:
    return [m.text for m in Store(home / "state.db").load(sid) if m.role == "system"]


def test_the_system_prompt_reaches_every_wire_and_a_resume_keeps_it(emulator: Any, hermes_home: Path) -> None:
    n = {p: len(emulator.requests(p)) for p in ("anthropic", "gemini", "deepseek", "openai-responses", "bedrock")}
    r = cli(hermes_home, "chat", "--json", "-q", "hi", "--system", SYSTEM, "-p", "anthropic",
            "-m", "claude-opus-4-6", "-u", emulator.url("anthropic"))
    sid = orjson.loads(r.stdout)["session_id"]
    sent = _new(emulator, "anthropic", n["anthropic"])
    assert len(sent) == 2 and all(b["system"] == SYSTEM for b in sent)  # both steps of the tool loop
    assert all(m["role"] in ("user", "assistant") for b in sent for m in b["messages"])

    # new processes, no --system: the stored prompt goes on, as each wire takes it
    cli(hermes_home, "chat", "-r", sid, "-q", "and now?", "-p", "gemini", "-m", "gemini-3-pro-preview",
        "-u", emulator.url("gemini"))
    sent = _new(emulator, "gemini", n["gemini"])
    assert sent and all(b["systemInstruction"] == {"parts": [{"text": SYSTEM}]} for b in sent)
    assert SYSTEM not in orjson.dumps(sent[0]["contents"]).decode()

    cli(hermes_home, "chat", "-r", sid, "-q", "once more", "-p", "deepseek", "-m", "deepseek-v4",
        "-u", emulator.url("deepseek"))
    sent = _new(emulator, "deepseek", n["deepseek"])
    assert sent and all(b["messages"][0] == {"role": "system", "content": SYSTEM} for b in sent)
    assert all(_chat_system(b) == [SYSTEM] for b in sent)

    cli(hermes_home, "chat", "-r", sid, "-q", "on Responses", "-p", "openai-responses", "-m", "gpt-5",
        "-u", emulator.url("openai-responses"))
    sent = _new(emulator, "openai-responses", n["openai-responses"])
    assert sent and all(b["input"][0] == {"role": "system", "content": [{"type": "input_text", "text": SYSTEM}]}
                        for b in sent)

    cli(hermes_home, "chat", "-r", sid, "-q", "last one", "-p", "bedrock", "-m", "anthropic.claude-opus-4-5-v1:0",
        "-u", emulator.url("bedrock"))
    sent = _new(emulator, "bedrock", n["bedrock"])
    assert sent and all(b["system"] == [{"text": SYSTEM}] for b in sent)
    assert _stored(hermes_home, sid) == [SYSTEM]  # stored once, with the first step
    shown = cli(hermes_home, "sessions", "show", sid).stdout
    assert "#0 system" in shown and SYSTEM in shown
    md = cli(hermes_home, "sessions", "export", sid, "--format", "md").stdout
    assert f"## system\n\n{SYSTEM}\n\n## user\n\nhi" in md


def test_the_repl_takes_it_at_start_and_stores_it_once(emulator: Any, hermes_home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HERMES_HOME=str(hermes_home), HERMES_API_KEY=CANARY)
    since = len(emulator.requests("deepseek"))
    r = subprocess.run([sys.executable, "-m", "hermes", "chat", "-s", SYSTEM, "-p", "deepseek", "-m", "deepseek-v4",
                        "-u", emulator.url("deepseek")], input="hi\nand again\n/quit\n", capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    sent = _new(emulator, "deepseek", since)
    assert len(sent) == 4 and all(_chat_system(b) == [SYSTEM] for b in sent)
    (sid,) = [s.id for s in Store(hermes_home / "state.db").list_sessions()]
    assert _stored(hermes_home, sid) == [SYSTEM]


def test_a_new_system_prompt_on_resume_joins_from_that_turn(emulator: Any, hermes_home: Path) -> None:
    url = emulator.url("anthropic")
    r = cli(hermes_home, "chat", "--json", "-q", "hi", "-s", SYSTEM, "-p", "anthropic", "-m", "claude-opus-4-6",
            "-u", url)
    sid = orjson.loads(r.stdout)["session_id"]
    since = len(emulator.requests("anthropic"))
    cli(hermes_home, "chat", "-r", sid, "-q", "again", "-s", SYSTEM, "-u", url)  # the same prompt: nothing added
    assert _stored(hermes_home, sid) == [SYSTEM]
    cli(hermes_home, "chat", "-r", sid, "-q", "and now?", "-s", OTHER, "-u", url)
    assert _stored(hermes_home, sid) == [SYSTEM, OTHER]
    assert system_prompt(Store(hermes_home / "state.db").load(sid)) == OTHER
    last = _new(emulator, "anthropic", since)[-1]
    assert last["system"] == f"{SYSTEM}\n\n{OTHER}"  # Anthropic takes system text beside the turns only


def test_compaction_keeps_the_system_prompt(emulator: Any, hermes_home: Path) -> None:
    url = emulator.url("deepseek")
    r = cli(hermes_home, "chat", "--json", "-q", "hi", "-s", SYSTEM, "-p", "deepseek", "-m", "deepseek-v4", "-u", url)
    sid = orjson.loads(r.stdout)["session_id"]
    for q in ("second", "third", "fourth"):
        cli(hermes_home, "chat", "-r", sid, "-q", q, "-u", url)
    r = cli(hermes_home, "sessions", "compress", sid, "--budget", "600")
    assert "compacted" in r.stdout + r.stderr
    since = len(emulator.requests("deepseek"))
    cli(hermes_home, "chat", "-r", sid, "-q", "after the checkpoint", "-u", url)
    sent = _new(emulator, "deepseek", since)
    assert sent and all(_chat_system(b) == [SYSTEM] for b in sent)
    assert all("EARLIER" not in s and "summary" not in s.lower() for b in sent for s in _chat_system(b))


def test_an_empty_system_prompt_is_refused_before_anything_is_stored(hermes_home: Path) -> None:
    r = cli(hermes_home, "chat", "-q", "hi", "-s", "  ", "-p", "deepseek", "-m", "deepseek-v4", check=False)
    assert r.returncode == 2 and "--system needs some text" in r.stderr
    assert not (hermes_home / "state.db").exists() or Store(hermes_home / "state.db").list_sessions() == []
