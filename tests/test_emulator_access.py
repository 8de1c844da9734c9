"""The emulators answer an unknown model and a bad key as the real providers do, so a 404 or a
401 can be rehearsed offline: in-process (``Emulator``, any key unless given a list) and in the
``hermes emulate`` process users run (only ``sk-emulator`` unless told otherwise)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes.emulate import Emulator

_HI = [{"role": "user", "content": "hi"}]


def _chat(base: str, model: str, key: str = "sk-emulator") -> httpx.Response:
    return httpx.post(f"{base}/chat/completions", json={"model": model, "messages": _HI},
                      headers={"authorization": f"Bearer {key}"}, timeout=30)


def _messages(base: str, model: str, key: str = "sk-emulator") -> httpx.Response:
    return httpx.post(f"{base}/v1/messages", json={"model": model, "max_tokens": 64, "messages": _HI},
                      headers={"x-api-key": key, "anthropic-version": "2023-06-01"}, timeout=30)


def _gemini(base: str, model: str, key: str = "sk-emulator") -> httpx.Response:
    return httpx.post(f"{base}/models/{model}:generateContent", json={"contents": [{"role": "user", "parts": [
        {"text": "hi"}]}]}, headers={"x-goog-api-key": key}, timeout=30)


def test_unknown_models_get_each_providers_answer(emulator: Any) -> None:
    r = _chat(emulator.url("openai"), "gpt-9-turbo-typo")
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
    assert r.json()["error"]["message"] == "The model `gpt-9-turbo-typo` does not exist or you do not have access to it."
    r = _chat(emulator.url("deepseek"), "lab-model")
    assert (r.status_code, r.json()["error"]["message"]) == (400, "Model Not Exist")
    r = _messages(emulator.url("anthropic"), "claud-opus-4-5")
    assert r.status_code == 404
    assert r.json() == {"type": "error", "error": {"type": "not_found_error", "message": "model: claud-opus-4-5"}}
    r = _gemini(emulator.url("gemini"), "gemni-2.5-pro")
    assert r.status_code == 404 and r.json()["error"]["status"] == "NOT_FOUND"
    assert r.json()["error"]["message"].startswith("models/gemni-2.5-pro is not found for API version v1beta")
    r = httpx.post(f"{emulator.url('bedrock')}/model/sonnet/converse", json={"messages": [
        {"role": "user", "content": [{"text": "hi"}]}]}, headers={"authorization": "Bearer bedrock-api-key-1"})
    assert r.status_code == 400 and r.json()["message"] == "The provided model identifier is invalid."
    assert r.headers["x-amzn-errortype"].startswith("ValidationException")
    # profiled models, and a personality's own, are served
    assert _chat(emulator.url("openai"), "gpt-5.1").status_code == 200
    assert _chat(emulator.url("mimo"), "mimo-v2-flash").status_code == 200
    assert _messages(emulator.url("anthropic"), "claude-opus-4-5").status_code == 200


def test_a_test_adds_the_models_it_makes_up(emulator: Any) -> None:
    assert _chat(emulator.url("groq"), "made-up-7b").status_code == 404
    emulator.state.add_models("groq", "made-up-*")
    assert _chat(emulator.url("groq"), "made-up-7b").status_code == 200
    assert _chat(emulator.url("cerebras"), "made-up-7b").status_code == 404  # only where it was added
    r = httpx.post(f"{emulator.root}/_control/cerebras", json={"models": ["made-up-7b"]})
    assert r.status_code == 200 and _chat(emulator.url("cerebras"), "made-up-7b").status_code == 200


def test_a_key_list_refuses_other_keys_as_each_provider_does() -> None:
    with Emulator(["openai", "deepseek", "anthropic", "gemini"], keys=["sk-good"]) as emu:
        r = _chat(emu.url("openai"), "gpt-5.1", key="sk-wrong-key-123456")
        assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
        assert "Incorrect API key provided: sk-" in r.json()["error"]["message"]
        assert "sk-wrong-key-123456" not in r.text  # masked, as OpenAI does
        r = _chat(emu.url("deepseek"), "deepseek-v4", key="sk-wrong-key-123456")
        assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
        assert r.json()["error"]["message"] == "Authentication Fails, Your api key: ****3456 is invalid"
        r = _messages(emu.url("anthropic"), "claude-opus-4-5", key="sk-wrong")
        assert r.status_code == 401 and r.json()["error"] == {"type": "authentication_error",
                                                               "message": "invalid x-api-key"}
        r = _gemini(emu.url("gemini"), "gemini-2.5-pro", key="wrong")
        assert r.status_code == 400 and r.json()["error"]["details"][0]["reason"] == "API_KEY_INVALID"
        assert _chat(emu.url("deepseek"), "deepseek-v4", key="sk-good").status_code == 200


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """``hermes emulate`` as a user starts it, with one made-up model added."""
    err = tmp_path / "emulate.out"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "emulate", "--port", "0", "--model", "lab-*"],
                            stdout=err.open("wb"), stderr=subprocess.STDOUT, env=env)
    try:
        import time

        deadline = time.monotonic() + 30
        while " provider emulators on " not in (text := err.read_text() if err.exists() else ""):
            assert proc.poll() is None and time.monotonic() < deadline, text
            time.sleep(0.05)
        line = next(x for x in text.splitlines() if " provider emulators on " in x)
        root = line.split(" on ", 1)[1].split("/<route>", 1)[0]
        while True:  # the URLs are printed before the server listens
            try:
                httpx.get(f"{root}/_log", timeout=5)
                break
            except httpx.ConnectError:
                assert proc.poll() is None and time.monotonic() < deadline, err.read_text()
                time.sleep(0.05)
        yield root
    finally:
        proc.terminate()
        proc.wait(30)


def test_hermes_emulate_takes_only_its_key_and_its_models(served: str) -> None:
    base = f"{served}/deepseek/v1"
    assert _chat(base, "deepseek-v4", key="sk-real-looking-key-0000").status_code == 401
    assert _chat(base, "deepseek-v4").status_code == 200  # sk-emulator
    assert _chat(base, "lab-model").status_code == 200  # --model lab-*
    assert _chat(base, "deepseek-v4-typo-model").status_code == 200  # the profiles know deepseek*
    assert (_chat(base, "some-model").status_code, _chat(base, "some-model").json()["error"]["message"]) == \
        (400, "Model Not Exist")
    r = _messages(f"{served}/anthropic", "claude-opus-4-5", key="sk-ant-wrong")
    assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"


def test_hermes_emulate_is_quiet_in_a_shared_terminal_unless_asked(served: str, tmp_path: Path) -> None:
    """It usually runs with ``&`` in the terminal the chat uses: three lines at start, none per
    request; ``--urls`` lists every base URL."""
    assert _chat(f"{served}/deepseek/v1", "deepseek-v4").status_code == 200
    assert _chat(f"{served}/deepseek/v1", "deepseek-v4", key="wrong").status_code == 401
    import time

    time.sleep(0.3)
    printed = (tmp_path / "emulate.out").read_text().splitlines()
    assert len(printed) == 3 and not any("HTTP/1.1" in x or x.startswith("INFO") for x in printed), printed
    listed = subprocess.run([sys.executable, "-m", "hermes", "emulate", "--port", "0", "--urls", "--only", "nope"],
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 2 and "unknown personality: nope" in listed.stderr
    r = subprocess.Popen([sys.executable, "-m", "hermes", "emulate", "--port", "0", "--urls", "--only", "deepseek",
                          "--only", "kimi"], stdout=subprocess.PIPE, text=True)
    try:
        assert r.stdout is not None
        first = [r.stdout.readline() for _ in range(2)]
        assert [x.split()[0] for x in first] == ["deepseek", "kimi"] and "/deepseek/v1" in first[0], first
    finally:
        r.terminate()
        r.wait(30)


def test_chat_against_hermes_emulate_rehearses_an_unknown_model(served: str, hermes_home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "HERMES_EMULATE"}
    env.update(HERMES_HOME=str(hermes_home), HERMES_EMULATE=served)
    r = subprocess.run([sys.executable, "-m", "hermes", "chat", "-q", "hi", "-p", "deepseek", "-m", "some-model"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode != 0
    assert "note: some-model is not in the model profiles; the defaults apply" in r.stderr
    assert "Model Not Exist" in r.stderr
