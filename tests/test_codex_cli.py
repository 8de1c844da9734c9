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
the route returned for every earlier tool-call turn (compared with the emulator's own answers,
kept byte for byte: ``tests/_recording.py``). ``codex exec resume`` through a second ``hermes
proxy`` process — its own empty memory, a copy of the first one's seal key — restores the first
run's turns from Codex's session alone. Sent straight to the emulator, Codex gets the route's 404
for ``/responses`` (DeepSeek, Kimi, GLM and Gemini's OpenAI endpoint have no Responses API) and
does not run at all; sent straight to the Anthropic emulator it gets Anthropic's 404 too.

Codex streams every request (it has no unstreamed mode), so every case here is streamed; the
Responses door unstreamed is tests/test_proxy_responses_door.py's (the openai SDK, ``json``).

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
from _loopback import proxy_process
from _npm import npm_client
from _proxy import running_proxy
from _recording import Recording, carriers_of, chat_turns, refusals

from hermes.proxy import Bounds
from hermes.proxy.seal import KEY_FILE
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


def _config(home: Path, base_url: str, model: str, provider: str = "") -> None:
    """Codex's ``config.toml``: the ``hermes`` provider at ``base_url``, Responses wire
    (``provider``: more lines for that table)."""
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
{provider}''')


def _run(codex: Path, tmp: Path, base_url: str, model: str, *, prompt: str = PROMPT, resume: bool = False,
         provider: str = "") -> tuple[int, list[dict[str, Any]], str]:
    """``codex exec --json`` (``resume``: ``codex exec resume --last``, the session before it
    in ``tmp`` continued) in a work folder holding note.txt: (exit code, its JSON events, stderr)."""
    work, home = tmp / "work", tmp / "codex-home"
    work.mkdir(exist_ok=True)
    (work / "note.txt").write_text(NOTE)
    _config(home, base_url, model, provider)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp), "CODEX_HOME": str(home), "HERMES_TEST_KEY": "sk-codex",
           "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost",
           "TERM": "dumb"}
    done = subprocess.run([str(codex), "exec", *(["resume", "--last"] * resume), "--skip-git-repo-check", "--json",
                           "--dangerously-bypass-approvals-and-sandbox", prompt], cwd=work, env=env,
                          capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL, check=False)
    events = []
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            try:
                events.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
    return done.returncode, events, done.stderr


@pytest.fixture(scope="module")
def recording() -> Iterator[Recording]:
    with Recording() as emu:
        yield emu


@pytest.fixture(scope="module")
def px(recording: Recording, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One proxy for the module's tool loops, on the recording emulators (Anthropic too), whose
    memory keeps nothing (its bound is one byte): every restore comes from an envelope. Its
    state lives in a HERMES_HOME of its own."""
    mp = pytest.MonkeyPatch()
    mp.setenv("HERMES_HOME", str(tmp_path_factory.mktemp("codex-proxy-home")))
    try:
        with running_proxy(recording, bounds=Bounds(max_bytes=1), anthropic=recording.url("anthropic")) as proxy:
            yield proxy
    finally:
        mp.undo()


def _items(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e["item"] for e in events if e.get("type") == "item.completed" and e["item"].get("type") == kind]


def _check_loop(recording: Recording, route: str, sent: list[dict[str, Any]], answered: int,
                events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A two-call Codex loop as the route got it: three requests, each accepted, every tool-call
    turn carrying exactly what the route's answer for it carried. Its assistant tool-call turns."""
    assert len(sent) == 3, "two tool calls, then the answer: one request each"
    assert refusals(recording, route, answered) == [], "every request accepted, none retried"
    assert all(q["body"].get("stream") is True for q in sent), "Codex streams: so does the route"
    commands = _items(events, "command_execution")
    assert len(commands) == 2 and all(c["exit_code"] == 0 for c in commands), commands
    answer = _items(events, "agent_message")
    assert answer and "2 scripted tool call(s) made" in answer[-1]["text"]
    last = sent[-1]["body"]["messages"]
    turns = [m for m in last if m["role"] == "assistant"]
    assert len(turns) == 2 and all(m.get("tool_calls") for m in turns)
    # exactly what the route returned for each turn: every carrier (text, reasoning_details,
    # thought signatures) as its answer had it — Codex held them only as sealed envelopes
    minted = chat_turns(recording, route, answered)
    assert [carriers_of(m) for m in turns] == [minted[m["tool_calls"][0]["id"]] for m in turns]
    # and the text is the reasoning Codex was shown for that step
    shown = [r["text"] for r in _items(events, "reasoning")]
    assert len(shown) == 3 and PAD not in shown
    assert [m["reasoning_content"] for m in turns] == shown[:2]
    outputs = [m["content"] for m in last if m["role"] == "tool"]
    assert "heliotrope-42" in outputs[0], "Codex ran the command and sent its output back"
    assert carriers_of(sent[1]["body"]["messages"][-2]) == carriers_of(turns[0]), "the same on every later request"
    return turns


@pytest.mark.parametrize(("route", "model"), ROUTES, ids=[f"{r}:{m.split('/')[0]}" for r, m in ROUTES])
def test_codex_tool_loop_through_the_responses_door(recording: Recording, px: Any, codex: Path, tmp_path: Path,
                                                    route: str, model: str) -> None:
    before, answered = len(recording.requests(route)), len(recording.answers)
    code, events, err = _run(codex, tmp_path, px.url(route) + "/v1", model)
    assert code == 0, err[-2000:]
    _check_loop(recording, route, recording.requests(route)[before:], answered, events)


def test_codex_resumes_through_another_proxy_process_with_the_same_key(recording: Recording, codex: Path,
                                                                       tmp_path: Path) -> None:
    """``codex exec`` through one proxy, then ``codex exec resume --last`` through another: a
    separate ``hermes proxy`` process with a HERMES_HOME of its own — an empty memory — holding
    only a copy of the first one's seal key, as another worker of the deployment (or the same
    proxy restarted) would. The first run's tool-call turn reaches DeepSeek with exactly the
    reasoning DeepSeek returned for it, opened from the envelope in Codex's own session."""
    route, model = "deepseek", "deepseek-v4-pro"
    answered = len(recording.answers)
    with running_proxy(recording, bounds=Bounds(max_bytes=1)) as first_proxy:
        code, events, err = _run(codex, tmp_path, first_proxy.url(route) + "/v1", model,
                                 prompt='Read note.txt. #call=exec_command{"cmd": "cat note.txt"}')
    assert code == 0, err[-2000:]
    first = [m for m in recording.requests(route)[-1]["body"]["messages"] if m["role"] == "assistant"]
    assert len(first) == 1 and first[0]["tool_calls"]
    minted = chat_turns(recording, route, answered)
    assert carriers_of(first[0]) == minted[first[0]["tool_calls"][0]["id"]]
    home = tmp_path / "other-worker"
    home.mkdir()
    (home / KEY_FILE).write_bytes((Path(os.environ["HERMES_HOME"]) / KEY_FILE).read_bytes())
    (home / KEY_FILE).chmod(0o600)
    before = len(recording.requests(route))
    with proxy_process(home, "--upstream", f"{route}={recording.url(route)}") as other:
        code, events, err = _run(codex, tmp_path, f"{other.root}/{route}/v1", model, resume=True)
    assert code == 0, err[-2000:]
    sent = recording.requests(route)[before:]
    assert len(sent) == 3, "the resumed run: two tool calls, then the answer"
    assert refusals(recording, route, answered) == [], "every request accepted, none retried"
    for q in sent:  # the first run's turn, every carrier, from its envelope alone — on every request
        assert next(m for m in q["body"]["messages"] if m["role"] == "assistant") == first[0]
    assert "2 scripted tool call(s) made" in _items(events, "agent_message")[-1]["text"]


# DeepSeek, Kimi, GLM and Gemini's OpenAI endpoint serve chat-completions only; OpenRouter is
# left out: the real one serves a Responses API (beta) at /api/v1/responses, so Codex straight at
# it would not fail there (its emulator models only chat-completions)
DIRECT = ["deepseek", "kimi", "glm", "gemini-openai"]
NO_RETRIES = "request_max_retries = 0\nstream_max_retries = 0\n"


@pytest.mark.parametrize("route", DIRECT)
def test_codex_straight_at_a_chat_route_does_not_run(emulator: Any, codex: Path, tmp_path: Path, route: str) -> None:
    """Without the proxy Codex posts ``/responses`` under the route's chat-completions base URL:
    the route's 404, the turn fails, no command runs and no chat request is ever made. (Codex's
    own reconnects are turned off in its config: five retries of the same 404 only take time.)"""
    before = len(emulator.requests(route))
    code, events, _ = _run(codex, tmp_path, emulator.url(route), dict(ROUTES)[route], provider=NO_RETRIES)
    assert code != 0
    failed = [e for e in events if e.get("type") == "turn.failed"]
    assert failed and "404" in failed[-1]["error"]["message"], events
    assert f"/{route}/v1/responses" in failed[-1]["error"]["message"], "the route's own URL, not a doubled path"
    assert not _items(events, "command_execution")
    assert emulator.requests(route)[before:] == [], "no request the route serves was ever made"


def _minted(emu: Recording, path: str) -> list[list[dict[str, Any]]]:
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


def test_codex_tool_loop_on_anthropic_keeps_its_signed_thinking(recording: Recording, px: Any, codex: Path,
                                                                 tmp_path: Path) -> None:
    """Codex on the ``anthropic`` route: every request is a Messages request the emulator accepts
    (it verifies each signature), and every tool-call turn goes back with exactly the signed
    thinking blocks the emulator streamed for it — carried by Codex only as sealed envelopes."""
    model = "claude-sonnet-4-5"
    code, events, err = _run(codex, tmp_path, px.url("anthropic") + "/v1", model)
    assert code == 0, err[-2000:]
    sent = [q for q in recording.requests("anthropic") if q["path"].endswith("/v1/messages")]
    assert len(sent) == 3 and all(q["body"].get("stream") is True for q in sent), "Codex streams: so does the route"
    assert refusals(recording, "anthropic") == [], "every request accepted, none retried"
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


def test_codex_tool_loop_on_openai_responses_relays_its_encrypted_reasoning(recording: Recording, codex: Path,
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
    code, events, _ = _run(codex, tmp_path, emulator.url("anthropic") + "/v1", "claude-sonnet-4-5", provider=NO_RETRIES)
    assert code != 0
    failed = [e for e in events if e.get("type") == "turn.failed"]
    assert failed and "404" in failed[-1]["error"]["message"] and "/anthropic/v1/responses" in failed[-1]["error"]["message"]
    assert not _items(events, "command_execution")
    assert not [q for q in emulator.requests("anthropic")[before:] if q["path"].endswith("/v1/messages")]
