"""Item 6: an SDK's automatic retries must not re-run turns.

Attack (what the official ``openai`` SDK does by itself, ``max_retries=2``): the provider
refuses a request (400), or fails (500) after the turn already stored a tool step. Before the
fix both became 502, the SDK sent the request three times, the provider saw three turns and
``state.db`` held the user message three times. Then the same request twice with one
``Idempotency-Key``: one turn, the same answer.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from _harness import answer, call, failing, gateway, hostile

from hermes.config.settings import Config

KEY = "sk-ds-retries-000111222333"


def _users(home: Path, sid: str) -> int:
    with sqlite3.connect(home / "state.db") as db:
        return int(db.execute("SELECT COUNT(*) FROM messages WHERE session_id = ? AND role = 'user'",
                              (sid,)).fetchone()[0])


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _session(base: str, url: str) -> str:
    r = httpx.post(base + "/v1/sessions", json={"provider": "deepseek", "model": "m", "base_url": url})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def test_provider_4xx_is_4xx_and_not_retried(setup: Path) -> None:
    with hostile(lambda body: failing(400, "Invalid 'messages[1].content': too long")) as up, \
            gateway(setup / "gw", Config(allowed_base_urls=(up.root,))) as base:
        sid = _session(base, up.url)
        client = openai.OpenAI(base_url=base + "/v1", api_key="x", default_headers={"X-Hermes-Session": sid})
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(model="hermes", messages=[{"role": "user", "content": "hi"}])
        assert e.value.status_code == 400 and "provider returned HTTP 400" in e.value.message
        assert isinstance(e.value.body, dict) and e.value.body["code"] == "provider_error"
        assert len(up.requests) == 1  # the SDK did not retry
    assert _users(setup / "gw", sid) == 0  # a refused first step stores nothing


def test_failure_after_a_stored_step_says_do_not_retry(setup: Path) -> None:
    def script(body: dict[str, Any]) -> dict[str, Any]:
        return failing(500, "upstream exploded") if body["messages"][-1]["role"] == "tool" else call("list_dir", path=".")

    with hostile(script) as up, gateway(setup / "gw", Config(allowed_base_urls=(up.root,))) as base:
        sid = _session(base, up.url)
        client = openai.OpenAI(base_url=base + "/v1", api_key="x", default_headers={"X-Hermes-Session": sid})
        with pytest.raises(openai.InternalServerError) as e:
            client.chat.completions.create(model="hermes", messages=[{"role": "user", "content": "hi"}])
        assert e.value.response.headers["x-should-retry"] == "false"
        posts = [r for r in up.requests if r["body"]["messages"][-1]["role"] == "user"]
        assert len(posts) == 1, f"the turn ran {len(posts)} times"
    assert _users(setup / "gw", sid) == 1


def test_idempotency_key_returns_the_first_outcome(setup: Path) -> None:
    gate = threading.Event()

    def script(body: dict[str, Any]) -> dict[str, Any]:
        gate.wait(10)  # the first request is still running when the repeat arrives
        return answer(f"answer #{len(up.requests)}")

    with hostile(script) as up, gateway(setup / "gw", Config(allowed_base_urls=(up.root,))) as base:
        sid = _session(base, up.url)
        headers = {"X-Hermes-Session": sid, "Idempotency-Key": "k-1"}
        req = {"model": "hermes", "messages": [{"role": "user", "content": "once"}]}
        out: list[httpx.Response] = []
        threads = [threading.Thread(target=lambda: out.append(httpx.post(base + "/v1/chat/completions", json=req,
                                                                         headers=headers, timeout=30)))
                   for _ in range(2)]
        for t in threads:
            t.start()
        gate.set()
        for t in threads:
            t.join()
        later = httpx.post(base + "/v1/chat/completions", json={**req, "stream": True}, headers=headers, timeout=30)
        other = httpx.post(base + "/v1/chat/completions", json={**req, "messages": [{"role": "user", "content": "x"}]},
                           headers=headers, timeout=30)
    assert [r.status_code for r in out] == [200, 200]
    assert out[0].json()["id"] == out[1].json()["id"] and out[0].json()["choices"][0]["message"]["content"] == "answer #1"
    assert later.status_code == 200 and out[0].json()["id"] in later.text and "answer #1" in later.text
    assert other.status_code == 422 and other.json()["error"]["code"] == "idempotency_mismatch"
    assert len(up.requests) == 1
    assert _users(setup / "gw", sid) == 1


def test_idempotency_key_on_the_native_messages_endpoint(setup: Path) -> None:
    gate = threading.Event()

    def script(body: dict[str, Any]) -> dict[str, Any]:
        gate.wait(10)
        return answer(f"answer #{len(up.requests)}")

    with hostile(script) as up, gateway(setup / "gw", Config(allowed_base_urls=(up.root,))) as base:
        sid = _session(base, up.url)
        url = f"{base}/v1/sessions/{sid}/messages"
        out: list[httpx.Response] = []
        send = lambda: out.append(httpx.post(url, json={"content": "once"}, headers={"Idempotency-Key": "m-1"},
                                             timeout=30))
        threads = [threading.Thread(target=send) for _ in range(3)]
        for t in threads:
            t.start()
        gate.set()
        for t in threads:
            t.join()
        fresh = httpx.post(url, json={"content": "once"}, headers={"Idempotency-Key": "m-2"}, timeout=30)
    assert [r.status_code for r in out] == [200] * 3 and {r.json()["answer"] for r in out} == {"answer #1"}
    assert fresh.json()["answer"] == "answer #2" and len(up.requests) == 2
    assert _users(setup / "gw", sid) == 2
