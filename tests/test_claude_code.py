"""Claude Code, unmodified and headless (``claude -p``), through the Anthropic door on DeepSeek.

The client is installed from the npm registry by this test (``@anthropic-ai/claude-code``, with
``tests/_npm.py``) and run with ``ANTHROPIC_BASE_URL``
pointing at ``hermes proxy``'s ``/deepseek`` route, which forwards to the DeepSeek emulator. The
scripted model reads two files with Claude Code's own ``Read`` tool, then answers: every request
must be accepted, and each tool-call turn must carry back the reasoning DeepSeek returned for it
(Claude Code only ever held it as a ``thinking`` block with a sealed signature).

Skipped when npm or the registry is unavailable, unless ``HERMES_REAL_CLIENTS_REQUIRED=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _npm import _unavailable, npm_client
from _proxy import running_proxy

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


@pytest.fixture
def proxy(emulator: Any) -> Iterator[Any]:
    with running_proxy(emulator) as px:
        yield px


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


@pytest.mark.parametrize(("route", "model"), ROUTES, ids=[f"{r}:{m.split('/')[0]}" for r, m in ROUTES])
def test_claude_code_tool_loop_keeps_the_routes_reasoning(claude: Path, emulator: Any, proxy: Any, tmp_path: Path,
                                                          route: str, model: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    a, b = work / "a.txt", work / "b.txt"
    a.write_text("the first word is marmalade\n")
    b.write_text("the second word is quince\n")
    prompt = (f'#call=Read{{"file_path": "{a}"}} #call=Read{{"file_path": "{b}"}} '
              "read both files and tell me the two words")
    before = len(emulator.requests(route))
    r = _run(claude, proxy.url(route), work, prompt, model)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    out = json.loads(r.stdout)
    assert out["is_error"] is False, out
    assert f"Done ({model}): 2 scripted tool call(s) made." in out["result"]
    loop = _loop_requests(emulator, route, before)
    assert len(loop) >= 2
    last = loop[-1]["body"]["messages"]
    results = [str(m["content"]) for m in last if m.get("role") == "tool"]
    assert any("marmalade" in c for c in results) and any("quince" in c for c in results)  # Read ran
    turns = [m for m in last if m.get("role") == "assistant" and m.get("tool_calls")]
    assert [m["tool_calls"][0]["function"]["name"] for m in turns] == ["Read", "Read"]
    carried = [_carried(route, m) for m in turns]
    if route in ("deepseek", "kimi", "glm"):
        assert carried[0].startswith("Step 1 of 2: I will call Read.")
        assert carried[1].startswith("Step 2 of 2: I will call Read.")
    # the same carriers on every later request: restored exactly, never re-padded
    assert [_carried(route, m) for m in _tool_turns(loop[0])] == carried[:1]


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


def test_claude_code_on_anthropic_itself_keeps_its_signatures(claude: Path, emulator: Any, tmp_path: Path) -> None:
    """The ``anthropic`` route relays as it is: Anthropic's own signatures go back untouched (the
    emulator verifies them and refuses any other)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("the first word is marmalade\n")
    model = "claude-sonnet-4-5"
    with running_proxy(emulator, anthropic=emulator.url("anthropic")) as px:
        before = len(emulator.requests("anthropic"))
        r = _run(claude, px.url("anthropic"), work, f'#call=Read{{"file_path": "{work / "a.txt"}"}} read it', model)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    assert f"Done ({model}): 1 scripted tool call(s) made." in json.loads(r.stdout)["result"]
    sent = [q for q in emulator.requests("anthropic")[before:] if q["path"].endswith("/v1/messages")]
    sigs = [b["signature"] for q in sent for m in q["body"]["messages"] if m["role"] == "assistant"
            and isinstance(m["content"], list) for b in m["content"] if b.get("type") == "thinking"]
    assert sigs and not any(s.startswith("hseal1") for s in sigs)


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
