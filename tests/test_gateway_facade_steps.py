"""The facade keeps each model call's reasoning its own (#36 item 7): a tool turn of two steps
answers with the steps' reasoning apart — a blank line between them in the message and in the
stream, and one entry per step in ``hermes.reasoning_steps`` — never run together. Over real
HTTP against a running gateway and the DeepSeek emulator, which reasons on every step."""

from __future__ import annotations

from pathlib import Path

import httpx
import orjson
import pytest
from _harness import gateway

from hermes.config.settings import Config


def _stream_deltas(resp: httpx.Response) -> tuple[str, str]:
    reasoning = text = ""
    for line in resp.iter_lines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        for choice in orjson.loads(line[6:]).get("choices", []):
            reasoning += choice["delta"].get("reasoning_content") or ""
            text += choice["delta"].get("content") or ""
    return reasoning, text


def test_two_steps_reasoning_stays_apart(emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-facade-test-0001")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("hello\n")
    cfg = Config(provider="deepseek", model="deepseek-v4-pro", base_url=emulator.url("deepseek"))
    ask = {"model": "hermes", "messages": [{"role": "user", "content": "What is in this directory?"}]}
    with gateway(tmp_path / "gw", cfg, provider_stream=True) as base, httpx.Client(base_url=base, timeout=60) as c:
        start = len(emulator.requests("deepseek"))
        r = c.post("/v1/chat/completions", json=ask)
        assert r.status_code == 200, r.text
        body = r.json()
        steps = body["hermes"]["reasoning_steps"]
        assert body["hermes"]["steps"] == 2 and len(steps) == 2 and all(s.strip() for s in steps)
        assert body["choices"][0]["message"]["reasoning_content"] == "\n\n".join(steps)
        with c.stream("POST", "/v1/chat/completions", json={**ask, "stream": True},
                      headers={"X-Hermes-Session": r.headers["x-hermes-session"]}) as s:
            reasoning, text = _stream_deltas(s)
    assert len(emulator.requests("deepseek")) - start == 4, "two model calls per turn"
    first, second = reasoning.split("\n\n", 1)  # the streamed deltas: one step's, a blank line, the next's
    assert first.strip() and second.strip() and "\n\n" not in second
    assert text.strip()
