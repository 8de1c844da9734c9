"""Claude Code, unmodified and headless (``claude -p``), through the Anthropic door of every chat route.

The client is installed from the npm registry by this test (``@anthropic-ai/claude-code``, with
``tests/_npm.py``) and run with ``ANTHROPIC_BASE_URL`` pointing at one ``hermes proxy`` (one per
module) in front of the emulators of DeepSeek, Kimi, GLM, Gemini (OpenAI endpoint), OpenRouter
(DeepSeek and Claude models) and Anthropic itself. The scripted model reads two files with Claude
Code's own ``Read`` tool, then answers: every request must be accepted, and each tool-call turn
must carry back exactly the reasoning the route returned for it — compared with the emulator's
own answers, kept byte for byte (``tests/_recording.py``) — though Claude Code only ever held it
as a ``thinking`` block with a sealed signature.

Streamed and not: Claude Code streams every request; in front of a gateway that answers a
stream with 404 it sends the same request unstreamed (its own fallback), so the ``json`` cases
put such a gateway between Claude Code and the proxy and the whole loop runs unstreamed.

Straight at a chat route's emulator (no proxy) Claude Code's ``/v1/messages`` gets the 404 the
real services give (DeepSeek, Kimi, GLM and Gemini serve no Messages API at their
chat-completions base URL) and the loop never starts.

Skipped when npm or the registry is unavailable, unless ``HERMES_REAL_CLIENTS_REQUIRED=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from _loopback import Seen, Upstream, send_json
from _npm import _unavailable, npm_client
from _proxy import running_proxy
from _recording import Recording, carriers_of, chat_turns, message_turns, refusals

from hermes.replay import GEMINI_SKIP_SIGNATURE, PAD
from hermes.store import Store

VERSION = "2.1.197"
MODEL = "deepseek-v4-pro"


def _install() -> Path:
    """The ``claude`` binary. npm may hold back the package's postinstall (which fetches the
    native binary), so it is run here when ``claude --version`` does not work yet."""
    exe = npm_client("@anthropic-ai/claude-code", VERSION, "claude")

    def works() -> bool:
        try:
            return subprocess.run([str(exe), "--version"], capture_output=True, timeout=60).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    if not works():
        pkg = exe.parent.parent / "@anthropic-ai" / "claude-code"
        subprocess.run(["node", "install.cjs"], cwd=pkg, capture_output=True, timeout=600, check=False)
    if not works():
        _unavailable("claude-code is installed but `claude --version` fails (its postinstall fetches a binary)")
    return exe


@pytest.fixture(scope="module")
def claude() -> Path:
    return _install()


@pytest.fixture(scope="module")
def recording() -> Iterator[Recording]:
    with Recording() as emu:
        yield emu


@pytest.fixture(scope="module")
def proxy(recording: Recording, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One proxy for the module's route cases, on the recording emulators (Anthropic relayed
    too), its memory in a HERMES_HOME of its own (never the machine's ``~/.hermes``)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("HERMES_HOME", str(tmp_path_factory.mktemp("claude-code-proxy-home")))
    try:
        with running_proxy(recording, anthropic=recording.url("anthropic")) as px:
            yield px
    finally:
        mp.undo()


@contextmanager
def _unstreamed(root: str) -> Iterator[str]:
    """A loopback gateway in front of ``root`` that serves no streams: a ``stream: true`` request
    gets a 404 (Anthropic's shape), anything else is passed on and its answer passed back. Claude
    Code answers the 404 by sending the request again unstreamed ("Streaming endpoint returned
    404, falling back to non-streaming mode"), so only unstreamed requests get past."""
    def answer(seen: Seen, handler: Any) -> None:
        if isinstance(seen.body, dict) and seen.body.get("stream"):
            send_json(handler, {"type": "error", "error": {"type": "not_found_error",
                                                           "message": "this gateway serves no streams"}}, 404)
            return
        headers = {k: v for k, v in seen.headers.items()
                   if k not in ("host", "content-length", "connection", "accept-encoding")}
        r = httpx.request(handler.command, root + seen.path, headers=headers, timeout=120,
                          content=None if seen.body is None else orjson.dumps(seen.body))
        send_json(handler, r.content, r.status_code)

    with Upstream(answer) as up:
        yield up.url


def _run(claude: Path, base_url: str, workdir: Path, prompt: str, model: str = MODEL, *,
         continue_: bool = False) -> subprocess.CompletedProcess[str]:
    home = workdir.parent / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "ANTHROPIC_BASE_URL": base_url,
           "ANTHROPIC_API_KEY": "sk-claude-code-client", "ANTHROPIC_MODEL": model,
           "ANTHROPIC_DEFAULT_HAIKU_MODEL": model, "ANTHROPIC_DEFAULT_SONNET_MODEL": model,
           "ANTHROPIC_DEFAULT_OPUS_MODEL": model, "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
           "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    return subprocess.run([str(claude), "-p", prompt, *(["--continue"] * continue_), "--output-format", "json",
                           "--allowedTools", "Read", "--max-turns", "6"], cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=240, stdin=subprocess.DEVNULL)


ROUTES = [("deepseek", "deepseek-v4-pro"), ("kimi", "kimi-k2.6"), ("glm", "glm-5.1"),
          ("gemini-openai", "gemini-3-pro-preview"), ("openrouter", "deepseek/deepseek-v4"),
          ("openrouter", "anthropic/claude-sonnet-4.5")]


def _sig(call: dict[str, Any]) -> Any:
    return ((call.get("extra_content") or {}).get("google") or {}).get("thought_signature")


def _carried(route: str, m: dict[str, Any]) -> Any:
    """What the route needs back on a tool-call turn (as test_proxy_clients checks it)."""
    if route == "gemini-openai":
        assert all(_sig(c) and _sig(c) != GEMINI_SKIP_SIGNATURE for c in m["tool_calls"]), m
        return [m.get("reasoning_content"), [_sig(c) for c in m["tool_calls"]]]
    if route == "openrouter":
        assert m.get("reasoning_details"), m
        return m["reasoning_details"]
    assert m.get("reasoning_content") and m["reasoning_content"] != PAD, m
    return m["reasoning_content"]


def _tool_turns(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["body"]["messages"] if m.get("role") == "assistant" and m.get("tool_calls")]


def _loop_requests(emulator: Any, route: str, before: int) -> list[dict[str, Any]]:
    reqs = [q for q in emulator.requests(route)[before:] if q["path"].endswith("/chat/completions")]
    return [q for q in reqs if any(m.get("role") == "tool" for m in q["body"]["messages"])]


STREAMED = pytest.mark.parametrize("streamed", [True, False], ids=["stream", "json"])


def _base(proxy: Any, route: str, streamed: bool, gateway: str) -> str:
    return proxy.url(route) if streamed else f"{gateway}/{route}"


@pytest.fixture(scope="module")
def gateway(proxy: Any) -> Iterator[str]:
    """The no-streams gateway in front of the module's proxy (the ``json`` cases)."""
    with _unstreamed(proxy.url("").rstrip("/")) as url:
        yield url


@STREAMED
@pytest.mark.parametrize(("route", "model"), ROUTES, ids=[f"{r}:{m.split('/')[0]}" for r, m in ROUTES])
def test_claude_code_tool_loop_keeps_the_routes_reasoning(claude: Path, recording: Recording, proxy: Any,
                                                          gateway: str, tmp_path: Path, route: str, model: str,
                                                          streamed: bool) -> None:
    work = tmp_path / "work"
    work.mkdir()
    a, b = work / "a.txt", work / "b.txt"
    a.write_text("the first word is marmalade\n")
    b.write_text("the second word is quince\n")
    prompt = (f'#call=Read{{"file_path": "{a}"}} #call=Read{{"file_path": "{b}"}} '
              "read both files and tell me the two words")
    before, answered = len(recording.requests(route)), len(recording.answers)
    r = _run(claude, _base(proxy, route, streamed, gateway), work, prompt, model)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    out = json.loads(r.stdout)
    assert out["is_error"] is False, out
    assert f"Done ({model}): 2 scripted tool call(s) made." in out["result"]
    loop = _loop_requests(recording, route, before)
    assert len(loop) >= 2
    assert refusals(recording, route, answered) == [], "every request accepted, none retried"
    chats = [q for q in recording.requests(route)[before:] if q["path"].endswith("/chat/completions")]
    assert all(bool(q["body"].get("stream")) is streamed for q in chats), "streamed, or not, all the way"
    last = loop[-1]["body"]["messages"]
    results = [str(m["content"]) for m in last if m.get("role") == "tool"]
    assert any("marmalade" in c for c in results) and any("quince" in c for c in results)  # Read ran
    turns = [m for m in last if m.get("role") == "assistant" and m.get("tool_calls")]
    assert [m["tool_calls"][0]["function"]["name"] for m in turns] == ["Read", "Read"]
    carried = [_carried(route, m) for m in turns]
    if route in ("deepseek", "kimi", "glm"):
        assert carried[0].startswith("Step 1 of 2: I will call Read.")
        assert carried[1].startswith("Step 2 of 2: I will call Read.")
    # exactly what the route returned for each of those turns: every carrier, as its answer had it
    minted = chat_turns(recording, route, answered)
    assert [carriers_of(m) for m in turns] == [minted[m["tool_calls"][0]["id"]] for m in turns]
    # the same carriers on every later request: restored exactly, never re-padded
    assert [_carried(route, m) for m in _tool_turns(loop[0])] == carried[:1]


@pytest.mark.parametrize("route", ["deepseek", "kimi", "glm", "gemini-openai"])
def test_claude_code_straight_at_a_chat_route_does_not_run(claude: Path, emulator: Any, tmp_path: Path,
                                                           route: str) -> None:
    """Without the proxy Claude Code posts ``/v1/messages`` under the route's chat-completions
    base URL, where DeepSeek, Kimi, GLM and Gemini serve no Messages API: their 404 (streamed,
    then Claude Code's unstreamed retry), which Claude Code reports as "an issue with the
    selected model" — the failure issue #34 saw — and no tool is ever called.
    (OpenRouter is left out: the real one serves Anthropic's Messages API at ``/api/v1/messages``,
    so a direct run would not fail there; its emulator models only chat-completions.)"""
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("the first word is marmalade\n")
    model = dict(ROUTES)[route]
    before = len(emulator.requests(route))
    r = _run(claude, emulator.url(route), work, f'#call=Read{{"file_path": "{work / "a.txt"}"}} read it', model)
    assert r.returncode != 0, (r.stdout[-2000:], r.stderr[-2000:])
    out = json.loads(r.stdout)
    # what the issue saw against the real services: "an issue with the selected model"
    assert out["is_error"] is True and out["api_error_status"] == 404, out
    assert f"There's an issue with the selected model ({model})" in out["result"], out
    assert "marmalade" not in r.stdout, "the file was never read: the loop never started"
    assert emulator.requests(route)[before:] == [], "no request the route serves was ever made"


def test_claude_code_continues_through_another_proxy_with_an_empty_memory(claude: Path, emulator: Any,
                                                                          tmp_path: Path) -> None:
    """``claude -p`` through one proxy, then ``claude -p --continue`` through another with its
    own empty memory (same ``HERMES_HOME`` key): the first session's reasoning comes back from
    the thinking blocks' signatures alone."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("the first word is marmalade\n")
    (work / "b.txt").write_text("the second word is quince\n")
    with running_proxy(emulator) as first:
        r = _run(claude, first.url("deepseek"), work, f'#call=Read{{"file_path": "{work / "a.txt"}"}} read it')
        assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    sent_first = _tool_turns(_loop_requests(emulator, "deepseek", 0)[-1])
    other = Store(tmp_path / "empty.db")
    try:
        with running_proxy(emulator, store=other) as second:
            before = len(emulator.requests("deepseek"))
            r = _run(claude, second.url("deepseek"), work,
                     f'#call=Read{{"file_path": "{work / "b.txt"}"}} now read this one', continue_=True)
            assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    finally:
        other.close()
    first_request = next(q for q in emulator.requests("deepseek")[before:] if q["path"].endswith("/chat/completions")
                         and _tool_turns(q))
    restored = _tool_turns(first_request)[0]
    assert restored["reasoning_content"] == sent_first[0]["reasoning_content"] != PAD


@STREAMED
def test_claude_code_on_anthropic_itself_keeps_its_signatures(claude: Path, recording: Recording, proxy: Any,
                                                              gateway: str, tmp_path: Path, streamed: bool) -> None:
    """The ``anthropic`` route relays as it is: each tool-call turn goes back with the very
    thinking blocks Anthropic answered with, its own signatures untouched (the emulator verifies
    them and refuses any other)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("the first word is marmalade\n")
    (work / "b.txt").write_text("the second word is quince\n")
    model = "claude-sonnet-4-5"
    prompt = (f'#call=Read{{"file_path": "{work / "a.txt"}"}} #call=Read{{"file_path": "{work / "b.txt"}"}} '
              "read both files and tell me the two words")
    before, answered = len(recording.requests("anthropic")), len(recording.answers)
    r = _run(claude, _base(proxy, "anthropic", streamed, gateway), work, prompt, model)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    assert f"Done ({model}): 2 scripted tool call(s) made." in json.loads(r.stdout)["result"]
    sent = [q for q in recording.requests("anthropic")[before:] if q["path"].endswith("/v1/messages")]
    assert sent and all(bool(q["body"].get("stream")) is streamed for q in sent)
    assert refusals(recording, "anthropic", answered) == [], "every request accepted, none retried"
    turns = [m["content"] for m in sent[-1]["body"]["messages"] if m["role"] == "assistant"
             and isinstance(m["content"], list) and any(b.get("type") == "tool_use" for b in m["content"])]
    assert len(turns) == 2
    minted = message_turns(recording, "anthropic", answered)
    back = [[b for b in t if b.get("type") in ("thinking", "redacted_thinking")] for t in turns]
    assert all(back) and not any(b["signature"].startswith("hseal1") for t in back for b in t)
    assert back == [minted[next(b["id"] for b in t if b["type"] == "tool_use")] for t in turns]


VENDORS = [("deepseek-anthropic", "deepseek-v4-pro"), ("kimi-anthropic", "kimi-k2.6"),
           ("mimo-anthropic", "mimo-v2.5-pro"), ("minimax-anthropic", "MiniMax-M3")]


def _vendor_turns(emulator: Any, name: str, before: int) -> list[list[dict[str, Any]]]:
    """The assistant tool turns of the last loop request the vendor's emulator got."""
    reqs = [q for q in emulator.requests(name)[before:] if q["path"].endswith("/v1/messages")
            and any(isinstance(m["content"], list) and any(b.get("type") == "tool_result" for b in m["content"])
                    for m in q["body"]["messages"])]
    assert reqs
    return [m["content"] for m in reqs[-1]["body"]["messages"] if m["role"] == "assistant"
            and isinstance(m["content"], list) and any(b.get("type") == "tool_use" for b in m["content"])]


@pytest.mark.parametrize("via", ["proxy", "direct"])
@pytest.mark.parametrize(("route", "model"), VENDORS, ids=[r for r, _ in VENDORS])
def test_claude_code_on_a_vendors_anthropic_api(claude: Path, emulator: Any, tmp_path: Path, route: str, model: str,
                                                via: str) -> None:
    """The vendors' Anthropic-compatible APIs: Claude Code returns each thinking block as it got
    it, so it works straight at them (DeepSeek, Kimi, MiMo and MiniMax document this setup) and
    through ``/<route>`` — where, on a must-echo route, the blocks go on as unsigned text."""
    work = tmp_path / "work"
    work.mkdir()
    a, b = work / "a.txt", work / "b.txt"
    a.write_text("the first word is marmalade\n")
    b.write_text("the second word is quince\n")
    prompt = (f'#call=Read{{"file_path": "{a}"}} #call=Read{{"file_path": "{b}"}} '
              "read both files and tell me the two words")
    before = len(emulator.requests(route))
    with running_proxy(emulator, **{route: emulator.url(route)}) as px:
        r = _run(claude, px.url(route) if via == "proxy" else emulator.url(route), work, prompt, model)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    out = json.loads(r.stdout)
    assert out["is_error"] is False and f"Done ({model}): 2 scripted tool call(s) made." in out["result"], out
    turns = _vendor_turns(emulator, route, before)
    assert [[x["name"] for x in t if x["type"] == "tool_use"] for t in turns] == [["Read"], ["Read"]]
    thinking = [next(x for x in t if x["type"] == "thinking") for t in turns]
    assert thinking[0]["thinking"].startswith("Step 1 of 2: I will call Read.")
    assert thinking[1]["thinking"].startswith("Step 2 of 2: I will call Read.")
    signed = [("signature" in x) for x in thinking]
    assert signed == ([False, False] if via == "proxy" and route != "minimax-anthropic" else [True, True])
