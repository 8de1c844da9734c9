"""The gateway's OpenAI-compatible agent facade, used by the official ``openai`` SDK the way
real clients use it: list models, start without a session header (the gateway creates one and
says which), keep the header, read real token usage — streaming with
``stream_options.include_usage`` too — against the DeepSeek emulator."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import openai
import pytest
from _harness import gateway

from hermes.config.settings import Config


def test_sdk_starts_a_session_then_keeps_it(emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-facade-test-0001")
    monkeypatch.chdir(tmp_path)
    cfg = Config(provider="deepseek", model="deepseek-v4-pro", base_url=emulator.url("deepseek"))
    with gateway(tmp_path / "gw", cfg, provider_stream=True) as base:
        client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0)
        assert {"hermes", "deepseek-v4-pro"} <= {m.id for m in client.models.list()}

        raw = client.chat.completions.with_raw_response.create(
            model="hermes", messages=[{"role": "user", "content": "first"}])
        sid = raw.headers["x-hermes-session"]
        first = raw.parse()
        assert "'first'" in (first.choices[0].message.content or "")
        assert first.usage is not None and first.usage.prompt_tokens > 0 and first.usage.completion_tokens > 0
        assert first.usage.total_tokens == first.usage.prompt_tokens + first.usage.completion_tokens

        kept = client.with_options(default_headers={"X-Hermes-Session": sid})
        chunks = list(kept.chat.completions.create(model="hermes", stream=True,
                                                   stream_options={"include_usage": True},
                                                   messages=[{"role": "user", "content": "second"}]))
        assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
        assert all(c.usage is None for c in chunks[:-1])
        assert "'second'" in "".join(c.choices[0].delta.content or "" for c in chunks[:-1])
        plain = list(kept.chat.completions.create(model="hermes", stream=True,
                                                  messages=[{"role": "user", "content": "third"}]))
        assert all(c.choices for c in plain)  # no usage chunk unless asked for

        with pytest.raises(openai.NotFoundError):
            client.with_options(default_headers={"X-Hermes-Session": "000000000000"}).chat.completions.create(
                model="hermes", messages=[{"role": "user", "content": "x"}])
        with pytest.raises(openai.BadRequestError):
            kept.chat.completions.create(model="hermes", messages=[{"role": "user", "content": "  "}])
    with sqlite3.connect(tmp_path / "gw" / "state.db") as db:
        sessions = db.execute("SELECT id FROM sessions").fetchall()
        users = [r[0] for r in db.execute("SELECT p.text FROM parts p JOIN messages m ON m.session_id = p.session_id "
                                          "AND m.seq = p.seq WHERE m.role = 'user' ORDER BY m.seq")]
    assert sessions == [(sid,)] and users == ["first", "second", "third"]


def test_without_a_default_route_the_error_says_what_to_do(tmp_path: Path) -> None:
    with gateway(tmp_path / "gw") as base:
        client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0)
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(model="hermes", messages=[{"role": "user", "content": "x"}])
    assert "X-Hermes-Session" in e.value.message and "config.toml" in e.value.message


def test_history_without_a_session_and_client_tools_are_refused_not_dropped(
        emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 36 item 10: an agent framework that sends its own history or its own tools gets a
    400 saying what to do, in OpenAI's shape, and nothing is stored."""
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-facade-test-0001")
    monkeypatch.chdir(tmp_path)
    cfg = Config(provider="deepseek", model="deepseek-v4-pro", base_url=emulator.url("deepseek"))
    history = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "an answer"},
               {"role": "user", "content": "second"}]
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}
    with gateway(tmp_path / "gw", cfg) as base:
        client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0)
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(model="hermes", messages=history)  # type: ignore[arg-type]
        assert "X-Hermes-Session" in e.value.message and "hermes proxy" in e.value.message
        assert e.value.body["type"] == "invalid_request_error"  # type: ignore[index]
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(model="hermes", messages=[{"role": "user", "content": "x"}],
                                           tools=[tool])  # type: ignore[list-item]
        assert "tools" in e.value.message and "hermes proxy" in e.value.message
        raw = client.chat.completions.with_raw_response.create(
            model="hermes", messages=[{"role": "user", "content": "first"}])
        kept = client.with_options(default_headers={"X-Hermes-Session": raw.headers["x-hermes-session"]})
        answer = kept.chat.completions.create(model="hermes", messages=history)  # type: ignore[arg-type]
        assert "'second'" in (answer.choices[0].message.content or "")
    with sqlite3.connect(tmp_path / "gw" / "state.db") as db:
        assert db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 1
