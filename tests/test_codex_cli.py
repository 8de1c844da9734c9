"""Codex CLI, unmodified (``@openai/codex`` from the npm registry), headless (``codex exec``),
through ``hermes proxy``'s Responses door on the DeepSeek, Kimi, GLM, Gemini (OpenAI endpoint) and
OpenRouter (Claude and DeepSeek models) emulators; on the native routes too: ``anthropic`` (the
Responses request built as a Messages request, Anthropic's signed thinking blocks carried sealed in
``encrypted_content``) and ``openai-responses`` (OpenAI's own ``/responses``, relayed).

Codex speaks only the Responses API and runs with ``store: false``, carrying each reasoning
item's ``encrypted_content`` back itself. The proxy's memory here keeps nothing (its bound is
one byte), so every restore comes from the envelope Codex carried. The prompt scripts the
emulator's model (``#call=``): two shell commands through Codex's own ``exec_command`` tool,
then the answer — three requests, each accepted, the later ones carrying exactly the reasoning
the route returned for every earlier tool-call turn. Sent straight to the emulator, Codex gets
the route's 404 for ``/responses`` (DeepSeek has no Responses API) and does not run at all; sent
straight to the Anthropic emulator it gets Anthropic's 404 too (Anthropic has no Responses API).

Codex is kept off any network but loopback: ``HTTPS_PROXY`` points at a closed loopback port,
with loopback itself exempt (``NO_PROXY``), and its analytics and update check are off.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from _npm import npm_client
from _proxy import running_proxy

from hermes.emulate import Emulator
from hermes.proxy import Bounds
from hermes.replay import PAD

CODEX = ("@openai/codex", "0.171.0", "codex")
NOTE = "The launch code is heliotrope-42.\n"
PROMPT = ('Read note.txt and tell me what it says. #call=exec_command{"cmd": "cat note.txt"}'
          '#call=exec_command{"cmd": "wc -c note.txt"}')
ROUTES = [("deepseek", "deepseek-v4-pro"), ("kimi", "kimi-k2.6"), ("glm", "glm-5.1"),
          ("gemini-openai", "gemini-3-pro-preview"), ("openrouter", "anthropic/claude-sonnet-4.5"),
          ("openrouter", "deepseek/deepseek-v4")]


@pytest.fixture(scope="module")
def codex() -> Path:
    return npm_client(*CODEX)


def _config(home: Path, base_url: str, model: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    # OpenRouter's models think when asked: Codex asks with an effort (the route's reasoning.effort)
    effort = 'model_reasoning_effort = "medium"\n' if "/" in model else ""
    (home / "config.toml").write_text(f'''{effort}model = "{model}"
model_provider = "hermes"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.hermes]
name = "hermes proxy"
base_url = "{base_url}"
env_key = "HERMES_TEST_KEY"
wire_api = "responses"
''')


def _run(codex: Path, tmp: Path, base_url: str, model: str) -> tuple[int, list[dict[str, Any]], str]:
    """``codex exec --json`` in a work folder holding note.txt: (exit code, its JSON events, stderr)."""
    work, home = tmp / "work", tmp / "codex-home"
    work.mkdir(exist_ok=True)
    (work / "note.txt").write_text(NOTE)
    _config(home, base_url, model)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp), "CODEX_HOME": str(home), "HERMES_TEST_KEY": "sk-codex",
           "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost",
           "TERM": "dumb"}
    done = subprocess.run([str(codex), "exec", "--skip-git-repo-check", "--json", "--dangerously-bypass-approvals-and-sandbox",
                           PROMPT], cwd=work, env=env, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
                          check=False)
    events = []
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            try:
                events.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
    return done.returncode, events, done.stderr


def _items(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e["item"] for e in events if e.get("type") == "item.completed" and e["item"].get("type") == kind]


@pytest.mark.parametrize(("route", "model"), ROUTES, ids=[f"{r}:{m.split('/')[0]}" for r, m in ROUTES])
def test_codex_tool_loop_through_the_responses_door(emulator: Any, codex: Path, tmp_path: Path, route: str,
                                                    model: str) -> None:
    before = len(emulator.requests(route))
    with running_proxy(emulator, bounds=Bounds(max_bytes=1)) as px:  # the memory keeps nothing
        code, events, err = _run(codex, tmp_path, px.url(route) + "/v1", model)
    assert code == 0, err[-2000:]
    sent = emulator.requests(route)[before:]
    assert len(sent) == 3, "two tool calls, then the answer: one request each"
    commands = _items(events, "command_execution")
    assert len(commands) == 2 and all(c["exit_code"] == 0 for c in commands), commands
    answer = _items(events, "agent_message")
    assert answer and "2 scripted tool call(s) made" in answer[-1]["text"]
    last = sent[-1]["body"]["messages"]
    turns = [m for m in last if m["role"] == "assistant"]
    assert len(turns) == 2 and all(m.get("tool_calls") for m in turns)
    # each turn carries what the route returned: the reasoning Codex was shown for that step
    shown = [r["text"] for r in _items(events, "reasoning")]
    assert len(shown) == 3 and PAD not in shown
    assert [m["reasoning_content"] for m in turns] == shown[:2]
    outputs = [m["content"] for m in last if m["role"] == "tool"]
    assert "heliotrope-42" in outputs[0], "Codex ran the command and sent its output back"
    assert sent[1]["body"]["messages"][-2]["reasoning_content"] == turns[0]["reasoning_content"]


def test_codex_straight_to_deepseek_does_not_run(emulator: Any, codex: Path, tmp_path: Path) -> None:
    """Without the proxy Codex reaches DeepSeek's chat-only API, which has no /responses."""
    before = len(emulator.requests("deepseek"))
    code, events, err = _run(codex, tmp_path, emulator.url("deepseek") + "/v1", "deepseek-v4-pro")
    assert code != 0
    assert "404" in err + orjson.dumps(events).decode()
    assert not _items(events, "command_execution")
    assert len(emulator.requests("deepseek")) == before, "no chat request was ever made"


class _Recording(Emulator):
    """The emulators, with every answer body kept as sent (the signatures it minted)."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: list[tuple[str, bytes]] = []

    def app(self) -> Any:
        inner = super().app()

        async def app(scope: Any, receive: Any, send: Any) -> None:
            chunks: list[bytes] = []

            async def keep(message: Any) -> None:
                if message["type"] == "http.response.body":
                    chunks.append(message.get("body", b""))
                    if not message.get("more_body"):
                        self.answers.append((scope.get("path", ""), b"".join(chunks)))
                await send(message)

            await inner(scope, receive, keep)

        return app


@pytest.fixture(scope="module")
def recording() -> Iterator[_Recording]:
    with _Recording() as emu:
        yield emu


def _minted(emu: _Recording, path: str) -> list[list[dict[str, Any]]]:
    """The thinking blocks of each streamed Messages answer on ``path``, as the emulator sent them."""
    out = []
    for at, raw in emu.answers:
        if at != path:
            continue
        blocks: dict[int, dict[str, Any]] = {}
        for line in raw.decode().splitlines():
            if not line.startswith("data: "):
                continue
            ev = orjson.loads(line[6:])
            if ev.get("type") == "content_block_start" and ev["content_block"]["type"] == "thinking":
                blocks[ev["index"]] = {"type": "thinking", "thinking": "", "signature": ""}
            elif ev.get("type") == "content_block_delta" and ev["index"] in blocks:
                d = ev["delta"]
                if d["type"] == "thinking_delta":
                    blocks[ev["index"]]["thinking"] += d["thinking"]
                elif d["type"] == "signature_delta":
                    blocks[ev["index"]]["signature"] = d["signature"]
        out.append([blocks[i] for i in sorted(blocks)])
    return out


def test_codex_tool_loop_on_anthropic_keeps_its_signed_thinking(recording: _Recording, codex: Path,
                                                                 tmp_path: Path) -> None:
    """Codex on the ``anthropic`` route: every request is a Messages request the emulator accepts
    (it verifies each signature), and every tool-call turn goes back with exactly the signed
    thinking blocks the emulator streamed for it — carried by Codex only as sealed envelopes."""
    model = "claude-sonnet-4-5"
    with running_proxy(recording, bounds=Bounds(max_bytes=1), anthropic=recording.url("anthropic")) as px:
        code, events, err = _run(codex, tmp_path, px.url("anthropic") + "/v1", model)
    assert code == 0, err[-2000:]
    sent = [q for q in recording.requests("anthropic") if q["path"].endswith("/v1/messages")]
    assert len(sent) == 3 and all(q["body"].get("stream") is True for q in sent), "Codex streams: so does the route"
    minted = _minted(recording, "/anthropic/v1/messages")
    assert len(minted) == 3 and all(len(b) == 1 and b[0]["signature"] for b in minted)
    assert "2 scripted tool call(s) made" in _items(events, "agent_message")[-1]["text"]
    last = sent[-1]["body"]["messages"]
    turns = [m for m in last if m["role"] == "assistant"]
    assert len(turns) == 2 and all(any(b["type"] == "tool_use" for b in m["content"]) for m in turns)
    carried = [[b for b in m["content"] if b["type"] == "thinking"] for m in turns]
    assert carried == minted[:2], "each tool-call turn: the very blocks the route signed, byte for byte"
    assert [[b for b in m["content"] if b["type"] == "thinking"] for m in sent[1]["body"]["messages"]
            if m["role"] == "assistant"] == minted[:1]
    shown = [r["text"] for r in _items(events, "reasoning")]
    assert shown[:2] == [b[0]["thinking"] for b in minted[:2]], "Codex was shown the thinking it carried back"
    outputs = [b for m in last if m["role"] == "user" and isinstance(m["content"], list) for b in m["content"]
               if b.get("type") == "tool_result"]
    assert "heliotrope-42" in orjson.dumps(outputs[0]).decode(), "Codex ran the command and sent its output back"


def test_codex_tool_loop_on_openai_responses_relays_its_encrypted_reasoning(recording: _Recording, codex: Path,
                                                                           tmp_path: Path) -> None:
    """Codex on ``openai-responses``: its requests reach OpenAI's own ``/responses`` as Codex sent
    them, and every reasoning item the emulator minted comes back with its ``encrypted_content``
    untouched (the emulator verifies each; a store:false replay without one would be its 404)."""
    model = "gpt-5.4"
    before = len(recording.requests("openai-responses"))
    with running_proxy(recording, bounds=Bounds(max_bytes=1), **{"openai-responses": recording.url("openai-responses")}) as px:
        code, events, err = _run(codex, tmp_path, px.url("openai-responses") + "/v1", model)
    assert code == 0, err[-2000:]
    sent = recording.requests("openai-responses")[before:]
    # Codex's own client_metadata is an unknown parameter to OpenAI's API: refused once, learned,
    # left out of the retry and of every later request (a fresh proxy: nothing learned before)
    assert "client_metadata" in sent[0]["body"]
    sent = sent[1:]
    assert len(sent) == 3 and all(q["path"].endswith("/v1/responses") and "client_metadata" not in q["body"]
                                  for q in sent)
    assert all(q["body"].get("store") is False and "reasoning.encrypted_content" in q["body"]["include"] for q in sent)
    minted = [i for at, raw in recording.answers if at == "/openai-responses/v1/responses"
              for line in raw.decode().splitlines() if line.startswith("data: ")
              for ev in [orjson.loads(line[6:])] if ev.get("type") == "response.output_item.done"
              for i in [ev["item"]] if i["type"] == "reasoning"][-3:]
    back = [i for i in sent[-1]["body"]["input"] if i.get("type") == "reasoning"]
    assert [i["encrypted_content"] for i in back] == [i["encrypted_content"] for i in minted[:2]]
    assert "2 scripted tool call(s) made" in _items(events, "agent_message")[-1]["text"]


def test_codex_straight_to_anthropic_does_not_run(emulator: Any, codex: Path, tmp_path: Path) -> None:
    """Anthropic has no Responses API: Codex pointed at it directly gets its 404, and no Messages
    request is ever made."""
    before = len(emulator.requests("anthropic"))
    code, events, err = _run(codex, tmp_path, emulator.url("anthropic") + "/v1", "claude-sonnet-4-5")
    assert code != 0
    assert "404" in err + orjson.dumps(events).decode()
    assert not _items(events, "command_execution")
    assert not [q for q in emulator.requests("anthropic")[before:] if q["path"].endswith("/v1/messages")]
