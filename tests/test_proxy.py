"""``hermes proxy`` scenarios over real HTTP: tenants, memory bounds and restarts, rejection
learning, byte-for-byte streaming, pass-through, the request log and ``--dry-run``."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import orjson
import pytest
from _cli import cli
from _proxy import ASK, RESULT, TOOLS, Background, openai_loop, openai_step, running_proxy
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from hermes.core.messages import Message, Reasoning, RouteKey, Text, ToolCall
from hermes.proxy import Bounds, SqliteMemory, message_key, tenant_of
from hermes.replay import GEMINI_SKIP_SIGNATURE, PAD
from hermes.store import Store
from hermes.store.requestlog import read_log

DS = "deepseek-v4-pro"


def _client(px: Any, route: str, key: str = "sk-tenant-a") -> openai.OpenAI:
    return openai.OpenAI(base_url=px.url(route), api_key=key, max_retries=0)


def _tool_turns(req: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in req["body"]["messages"] if m.get("role") == "assistant" and m.get("tool_calls")]


# ----------------------------------------------------------------------------- tenants


def test_same_conversation_under_another_key_gets_no_reasoning(emulator: Any) -> None:
    with running_proxy(emulator) as px:
        a = openai_loop(_client(px, "deepseek", "sk-tenant-a"), DS, ("tenant question",), False)
        stolen = [*a, {"role": "user", "content": "and then?"}]
        before = len(emulator.requests("deepseek"))
        # tenant B replays A's exact messages (same ids, same text): accepted, but only padded
        _client(px, "deepseek", "sk-tenant-b").chat.completions.create(model=DS, messages=stolen, tools=TOOLS)
        # tenant A sends the same body: its own reasoning comes back
        _client(px, "deepseek", "sk-tenant-a").chat.completions.create(model=DS, messages=stolen, tools=TOOLS)
        b_req, a_req = emulator.requests("deepseek")[before:]
    assert _tool_turns(b_req)[0]["reasoning_content"] == PAD
    restored = _tool_turns(a_req)[0]["reasoning_content"]
    assert restored != PAD and "tenant question" in restored
    assert not any(restored in str(m) for m in b_req["body"]["messages"])
    assert tenant_of({"authorization": "Bearer sk-tenant-a"}, "deepseek") != \
        tenant_of({"authorization": "Bearer sk-tenant-a"}, "kimi"), "a tenant is per route too"


# ----------------------------------------------------------------------------- memory bounds


def test_memory_keeps_only_the_newest_turns_within_its_size(emulator: Any) -> None:
    with running_proxy(emulator, bounds=Bounds(max_bytes=2500)) as px:
        c = _client(px, "deepseek")
        convs = [openai_loop(c, DS, (f"bounded conversation {i}",), False) for i in range(8)]
        time.sleep(0.2)  # recordings reach the store on a worker thread
        tenant = tenant_of({"authorization": "Bearer sk-tenant-a"}, "deepseek")
        count, size = px.memory.stats(tenant)
        assert 0 < size <= 2500 and count < 16, (count, size)
        before = len(emulator.requests("deepseek"))
        for conv in (convs[0], convs[-1]):
            c.chat.completions.create(model=DS, messages=[*conv, {"role": "user", "content": "more"}], tools=TOOLS)
        oldest, newest = emulator.requests("deepseek")[before:]
    assert _tool_turns(oldest)[0]["reasoning_content"] == PAD, "evicted: the must-echo fallback"
    assert "bounded conversation 7" in _tool_turns(newest)[0]["reasoning_content"]


def test_recognition_survives_reserialised_arguments_and_whitespace() -> None:
    key = RouteKey("kimi", "h", "m", "openai_chat")
    from hermes.proxy import client_key

    calls = Message("assistant", (Reasoning("r", key), ToolCall("functions.f:0", "f", '{"b":1,"a":[1,2]}')))
    sent = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "functions.f:0", "type": "function", "function": {"name": "f", "arguments": '{"a": [1, 2], "b": 1}'}}]}
    assert client_key(sent) == message_key(calls)
    other = {**sent, "tool_calls": [{**sent["tool_calls"][0], "function": {"name": "f", "arguments": '{"a": 2}'}}]}
    assert client_key(other) != message_key(calls), "same id, other call: Kimi ids repeat across conversations"
    text = Message("assistant", (Reasoning("r", key), Text("The answer.")))
    assert client_key({"role": "assistant", "content": "  The answer.\n"}) == message_key(text)
    assert client_key({"role": "assistant", "content": "<think>r</think>The answer."}, think_tags=True) == \
        message_key(text)
    assert client_key({"role": "assistant", "content": ""}) is None


# ----------------------------------------------------------------------------- restart


def _start(home: Path, upstream: str) -> tuple[subprocess.Popen[bytes], str]:
    err = home / f"proxy-{time.monotonic_ns()}.err"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HERMES_HOME"] = str(home)
    home.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "proxy", "--port", "0", "--upstream",
                             f"deepseek={upstream}"], env=env, stdout=subprocess.DEVNULL, stderr=err.open("wb"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        text = err.read_text() if err.exists() else ""
        if "listening on " in text:
            return proc, text.split("listening on ", 1)[1].split()[0].replace("/<route>", "")
        if proc.poll() is not None:
            raise AssertionError(f"proxy exited: {text}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("proxy did not start")


def test_a_restarted_proxy_still_restores(emulator: Any, hermes_home: Path) -> None:
    proc, root = _start(hermes_home, emulator.url("deepseek"))
    try:
        c = openai.OpenAI(base_url=f"{root}/deepseek", api_key="sk-restart", max_retries=0)
        history = openai_loop(c, DS, ("before the restart",), stream=True)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    proc, root = _start(hermes_home, emulator.url("deepseek"))
    try:
        c = openai.OpenAI(base_url=f"{root}/deepseek", api_key="sk-restart", max_retries=0)
        before = len(emulator.requests("deepseek"))
        openai_loop(c, DS, ("after the restart",), stream=False, messages=history)
        first = emulator.requests("deepseek")[before]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    assert "before the restart" in _tool_turns(first)[0]["reasoning_content"]


# ----------------------------------------------------------------------------- fallback


def test_edited_history_gets_the_routes_safe_fallback(emulator: Any) -> None:
    with running_proxy(emulator) as px:
        for route, model in (("deepseek", DS), ("gemini-openai", "gemini-3-pro-preview")):
            c = _client(px, route)
            messages = [{"role": "user", "content": f"edit me on {route}"}]
            call = openai_step(c, model, messages, stream=False)
            call["tool_calls"][0]["function"]["arguments"] = '{"path": "edited"}'  # the client changed it
            call["tool_calls"][0].pop("extra_content", None)
            messages += [call, {"role": "tool", "tool_call_id": call["tool_calls"][0]["id"], "content": RESULT}]
            before = len(emulator.requests(route))
            c.chat.completions.create(model=model, messages=messages, tools=TOOLS)  # accepted
            sent = _tool_turns(emulator.requests(route)[before])[0]
            if route == "deepseek":
                assert sent["reasoning_content"] == PAD
            else:
                assert sent["tool_calls"][0]["extra_content"]["google"]["thought_signature"] == GEMINI_SKIP_SIGNATURE
    notes = [m for r in read_log() if r["event"] == "proxy" for m in r["messages"]]
    assert {"index": 1, "recognised": False, "padded": ["reasoning_content"], "note": "unrecognised: padded"} in notes
    assert any(m.get("padded") == ["tool_calls.extra_content"] and not m["recognised"] for m in notes)


# ----------------------------------------------------------------------------- rejections


def test_unknown_field_rejection_is_learned_and_retried_once(emulator: Any) -> None:
    model = "anthropic/claude-sonnet-4.5"
    emulator.state.set_control("openrouter", reject_fields=["reasoning_details"])
    try:
        with running_proxy(emulator) as px:
            before = len(emulator.requests("openrouter"))
            openai_loop(_client(px, "openrouter"), model, ("drifted provider", "again"), False, extra=ASK)
            sent = emulator.requests("openrouter")[before:]
            caps = px.store.capabilities("openrouter", "127.0.0.1", model)
    finally:
        emulator.state.set_control("openrouter", reject_fields=[])
    # 4 model calls; the first to carry reasoning_details was rejected and sent again without it
    assert len(sent) == 5
    assert "reasoning_details" in _tool_turns(sent[1])[0]
    assert all("reasoning_details" not in m for r in sent[2:] for m in _tool_turns(r))
    assert all("reasoning" not in m for r in sent[2:] for m in _tool_turns(r))
    assert all(m.get("reasoning_content") for r in sent[2:] for m in _tool_turns(r)), "what it still takes"
    assert set(caps["rejected_carriers"]) == {"reasoning", "reasoning_details"}
    events = [r["event"] for r in read_log()]
    assert events.count("learned") == 1
    assert [r["retried"] for r in read_log() if r["event"] == "proxy"].count(True) == 1


def test_a_signature_rejection_through_the_proxy_suppresses_that_blob_and_retries_once(emulator: Any) -> None:
    """A client replays ``reasoning_details`` whose signature no longer verifies: the upstream's
    wrapped 400 is judged against the attempt record of the body the proxy forwarded, the blob
    is suppressed by hash and the request goes once more without it."""
    model = "anthropic/claude-sonnet-4.5"
    details = [{"type": "reasoning.text", "text": "I should list it.", "signature": "EsTAMPERED==",
                "format": "anthropic-claude-v1", "index": 0}]
    messages = [{"role": "user", "content": "list the files"},
                {"role": "assistant", "content": None, "reasoning_details": details, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "list_files", "arguments": '{"path": "."}'}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": RESULT}]
    with running_proxy(emulator) as px:
        before = len(emulator.requests("openrouter"))
        _client(px, "openrouter").chat.completions.create(model=model, messages=messages, tools=TOOLS)
        sent = emulator.requests("openrouter")[before:]
        caps = px.store.capabilities("openrouter", "127.0.0.1", model)
    assert len(sent) == 2
    assert _tool_turns(sent[0])[0]["reasoning_details"] == details
    assert "reasoning_details" not in _tool_turns(sent[1])[0]
    assert len(caps["suppressed_blobs"]) == 1 and "rejected_carriers" not in caps
    assert [r["retried"] for r in read_log() if r["event"] == "proxy"] == [True]


def test_a_complaint_about_a_missing_field_is_relayed_not_retried(emulator: Any) -> None:
    """DeepSeek's must-echo field is never dropped: a rejection naming it goes to the client."""
    emulator.state.set_control("deepseek", reject_fields=["reasoning_content"])
    try:
        with running_proxy(emulator) as px:
            c = _client(px, "deepseek")
            messages = [{"role": "user", "content": "relay the error"}]
            call = openai_step(c, DS, messages, stream=False)
            messages += [call, {"role": "tool", "tool_call_id": call["tool_calls"][0]["id"], "content": RESULT}]
            before = len(emulator.requests("deepseek"))
            with pytest.raises(openai.BadRequestError) as e:
                c.chat.completions.create(model=DS, messages=messages, tools=TOOLS)
            assert len(emulator.requests("deepseek")) == before + 1
            assert "unknown field `reasoning_content`" in e.value.response.text
            assert px.store.capabilities("deepseek", "127.0.0.1", DS) == {}
    finally:
        emulator.state.set_control("deepseek", reject_fields=[])


# ----------------------------------------------------------------------------- streaming relay

_EVENTS = [
    {"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "Split me "}}]},
    {"choices": [{"index": 0, "delta": {"reasoning_content": "across odd cuts."}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_cut", "type": "function",
                                                        "function": {"name": "list_files", "arguments": ""}}]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"path":"."}'}}]}}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
]
_STREAM = b": keep-alive\r\n\r\n" + b"".join(b"data: " + orjson.dumps({"id": "x", **e}) + b"\r\n\r\n"
                                             for e in _EVENTS) + b"data: [DONE]\r\n\r\n"


class _Upstream:
    """An OpenAI-compatible upstream that streams ``_STREAM`` in odd pieces and holds the rest
    until the test has read the first piece through the proxy (so buffering would hang)."""

    def __init__(self) -> None:
        self.first_seen = threading.Event()
        self.bodies: list[Any] = []
        self.cookies: list[str | None] = []
        self.queries: list[bytes] = []

    def app(self) -> Starlette:
        async def chat(request: Request) -> Response:
            body = orjson.loads(await request.body())
            self.bodies.append(body)
            self.queries.append(request.scope["query_string"])
            self.cookies.append(request.headers.get("cookie"))
            if not body.get("stream"):
                # as a CDN in front of a real API does: a cookie for whoever sent this request
                who = request.headers.get("authorization", "")[-8:]
                answer = JSONResponse({"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                                    "finish_reason": "stop"}]},
                                      headers={"set-cookie": f"__cf_bm=for-{who}; Path=/; HttpOnly"})
                answer.raw_headers += [(b"set-cookie", b"_cfuvid=second; Path=/"),
                                       (b"x-region", "Zürich".encode("latin-1"))]  # not ASCII: as sent
                return answer

            async def pieces() -> AsyncIterator[bytes]:
                yield _STREAM[:23]  # mid-way through the first data line
                await asyncio.to_thread(self.first_seen.wait, 10)
                for i in range(23, len(_STREAM), 41):
                    yield _STREAM[i:i + 41]

            return StreamingResponse(pieces(), media_type="text/event-stream", headers={"x-upstream": "kept"})

        async def models(request: Request) -> Response:
            self.queries.append(request.scope["query_string"])
            return JSONResponse({"object": "list", "data": [{"id": "m1", "object": "model"}]},
                                headers={"x-upstream": "models"})

        return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]),
                                 Route("/v1/models", models)])


@pytest.fixture
def upstream() -> Iterator[tuple[_Upstream, str]]:
    up = _Upstream()
    with Background(app=up.app()) as bg:
        yield up, f"http://127.0.0.1:{bg.port}/v1"


def test_stream_is_relayed_byte_for_byte_without_buffering(emulator: Any, upstream: Any) -> None:
    up, url = upstream
    with running_proxy(emulator, generic=url) as px:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True, "temperature": 0.3,
                "response_format": {"type": "text"}, "x_unknown_field": [1, 2]}
        got = b""
        with httpx.stream("POST", f"{px.url('generic')}/chat/completions", json=body,
                          headers={"authorization": "Bearer sk-stream"}, timeout=20) as r:
            assert r.headers["x-upstream"] == "kept"
            it = r.iter_raw()
            got += next(it)  # arrives while the upstream still holds the rest
            up.first_seen.set()
            for chunk in it:
                got += chunk
        assert got == _STREAM
        assert up.bodies[0] == body, "a request with nothing to put right is forwarded as it was"
        # the side decoder read the odd cuts: the dropped reasoning comes back next time
        call = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_cut", "type": "function", "function": {"name": "list_files", "arguments": '{"path": "."}'}}]}
        nxt = {"model": "m", "messages": [{"role": "user", "content": "hi"}, call,
                                          {"role": "tool", "tool_call_id": "call_cut", "content": "x"}]}
        r2 = httpx.post(f"{px.url('generic')}/chat/completions", json=nxt,
                        headers={"authorization": "Bearer sk-stream"}, timeout=20)
        assert r2.json()["choices"][0]["message"]["content"] == "ok"
        sent = up.bodies[1]["messages"][1]
        assert sent["reasoning_content"] == "Split me across odd cuts."
        assert {k: v for k, v in sent.items() if k != "reasoning_content"} == call
        models = httpx.get(f"{px.url('generic')}/models", timeout=10)
        assert models.json()["data"][0]["id"] == "m1" and models.headers["x-upstream"] == "models"


def test_proxy_errors_have_the_openai_shape(emulator: Any) -> None:
    with running_proxy(emulator) as px:
        root = px.url("")[:-1]
        r = httpx.post(f"{root}/no-such-route/chat/completions", json={"model": "m", "messages": []})
        assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_route"
        assert r.json()["error"]["type"] == "not_found_error", "OpenAI's shape: SDKs raise NotFoundError"
        r = httpx.post(f"{root}/anthropic/chat/completions", json={"model": "m", "messages": []})
        assert r.status_code == 400 and "anthropic wire" in r.json()["error"]["message"]
        r = httpx.get(f"{root}/deepseek/models", headers={"authorization": "Bearer k"})
        assert r.status_code == 200 and r.json()["data"][0]["id"] == "deepseek-v4-pro"
        r = httpx.post(f"{root}/deepseek/chat/completions", content=b"{not json")
        assert r.status_code == 400, "the upstream's own answer to a bad body is relayed"
        assert httpx.get(f"{root}/healthz").json() == {"ok": True}


# ----------------------------------------------------------------------------- visibility


def test_logs_show_what_was_restored_padded_and_stripped(emulator: Any, hermes_home: Path) -> None:
    with running_proxy(emulator) as px:
        history = openai_loop(_client(px, "kimi"), "kimi-k2.6", ("log me",), True)
        history[1]["reasoning_content"] = "a client that keeps reasoning"
        _client(px, "mistral").chat.completions.create(model="mistral-medium-3.5",
                                                       messages=[*history, {"role": "user", "content": "x"}])
    out = cli(hermes_home, "logs").stdout
    lines = [ln for ln in out.splitlines() if "proxy:" in ln]
    assert len(lines) == 3
    assert "kimi@127.0.0.1/kimi-k2.6 [1/1 recognised; #1 restored RC | switches thinking]" in lines[1]
    assert "#1 stripped RC" in lines[2] and "HTTP 200" in lines[2]
    raw = (hermes_home / "logs" / "hermes.log").read_text()
    assert "log me" not in raw and "sk-tenant-a" not in raw, "names and counts only: no text, no key"


def test_dry_run_shows_the_body_the_proxy_would_send(emulator: Any, hermes_home: Path) -> None:
    with running_proxy(emulator) as px:
        history = openai_loop(_client(px, "deepseek", "sk-dry-run"), DS, ("dry run me",), False)
    body = {"model": DS, "messages": [*history, {"role": "user", "content": "next"}], "temperature": 0}
    path = hermes_home / "body.json"
    path.write_bytes(orjson.dumps(body))
    anon = orjson.loads(cli(hermes_home, "proxy", "--dry-run", str(path), "--route", "deepseek").stdout)
    assert anon["changed"] and anon["switches"] == [], "a pad alone: maybe the client runs without thinking"
    assert anon["body"]["messages"][1]["reasoning_content"] == PAD
    assert anon["messages"][0] == {"index": 1, "recognised": False, "padded": ["reasoning_content"],
                                   "note": "unrecognised: padded"}
    os.environ["DRY_RUN_KEY"] = "sk-dry-run"
    try:
        mine = orjson.loads(cli(hermes_home, "proxy", "--dry-run", str(path), "--route", "deepseek",
                                "--api-key-env", "DRY_RUN_KEY").stdout)
    finally:
        del os.environ["DRY_RUN_KEY"]
    assert "dry run me" in mine["body"]["messages"][1]["reasoning_content"]
    assert mine["recognised"] == 2 and mine["body"]["temperature"] == 0
    assert mine["switches"] == ["thinking"] and mine["body"]["thinking"] == {"type": "enabled"}
    bad = cli(hermes_home, "proxy", "--dry-run", str(path), check=False)
    assert bad.returncode != 0 and "--route" in bad.stderr


def test_store_of_the_proxy_is_the_session_store(emulator: Any, hermes_home: Path) -> None:
    with running_proxy(emulator) as px:
        openai_loop(_client(px, "glm"), "glm-5.1", ("where is it kept",), False)
    s = Store()
    try:
        (n,) = s._c.execute("SELECT COUNT(*) FROM proxy_memory").fetchone()
        tenants = {r[0] for r in s._c.execute("SELECT tenant FROM proxy_memory")}
    finally:
        s.close()
    assert n == 2 and tenants == {tenant_of({"authorization": "Bearer sk-tenant-a"}, "glm")}
    assert b"sk-tenant-a" not in (hermes_home / "state.db").read_bytes()


def test_bad_proxy_settings_are_named(hermes_home: Path) -> None:
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "config.toml").write_text('model = "m"\n[proxy]\nport = 80800\n')
    r = cli(hermes_home, "proxy", check=False)
    assert r.returncode == 1 and "config.toml:2: [proxy] port must be 0-65535" in r.stderr
    (hermes_home / "config.toml").write_text('[proxy]\nupstream = { deepseek = "api.deepseek.com" }\n')
    r = cli(hermes_home, "proxy", check=False)
    assert r.returncode == 1 and "upstream 'deepseek' must start with http:// or https://" in r.stderr
    (hermes_home / "config.toml").write_text('[proxy]\nkey = "sk-x"\n')
    r = cli(hermes_home, "proxy", check=False)
    assert r.returncode == 1 and "[proxy] takes host, port" in r.stderr and "sk-x" not in r.stderr
    (hermes_home / "config.toml").unlink()
    r = cli(hermes_home, "proxy", "--upstream", "deepseek", check=False)
    assert r.returncode == 2 and "expected ROUTE=URL" in r.stderr
    r = cli(hermes_home, "proxy", "--env-keys", "--host", "0.0.0.0", "--port", "0", check=False)
    assert r.returncode == 1 and "refusing to listen on 0.0.0.0 with --env-keys" in r.stderr


def test_env_keys_fill_in_a_missing_key_only(emulator: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes.proxy import ProxyOptions

    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-from-the-proxy-env")
    seen: list[str] = []

    async def echo(request: Request) -> Response:
        seen.append(request.headers.get("authorization", ""))
        return JSONResponse({"object": "list", "data": []})

    with Background(app=Starlette(routes=[Route("/v1/models", echo)])) as up:
        opts = ProxyOptions(upstreams={"deepseek": f"http://127.0.0.1:{up.port}/v1"}, env_keys=True)
        mem, store = SqliteMemory(), Store()
        try:
            with Background(mem, store, opts) as px:
                httpx.get(f"{px.url('deepseek')}/models")
                httpx.get(f"{px.url('deepseek')}/models", headers={"authorization": "Bearer sk-client-own"})
        finally:
            mem.close()
            store.close()
    assert seen == ["Bearer sk-from-the-proxy-env", "Bearer sk-client-own"]


def test_an_unreadable_memory_costs_the_restore_not_the_request(emulator: Any) -> None:
    with running_proxy(emulator) as px:
        c = _client(px, "deepseek")
        history = openai_loop(c, DS, ("memory goes away",), False)
        time.sleep(0.2)
        px.memory.close()  # the store is gone from under the proxy
        before = len(emulator.requests("deepseek"))
        c.chat.completions.create(model=DS, messages=[*history, {"role": "user", "content": "still?"}], tools=TOOLS)
        sent = emulator.requests("deepseek")[before]
    assert _tool_turns(sent)[0]["reasoning_content"] == PAD, "the route's fallback, and an answer"
    errors = [r for r in read_log() if r["event"] == "proxy_error"]
    assert errors and all("sk-" not in r["error"] for r in errors)


def test_web_pages_cannot_use_the_proxy(emulator: Any) -> None:
    """The gateway's browser guard: a rebound name or a foreign page's Origin is refused before
    anything is forwarded; clients that are not browsers (no Origin) are unaffected."""
    with running_proxy(emulator) as px:
        before = len(emulator.requests("deepseek"))
        body = {"model": DS, "messages": [{"role": "user", "content": "hi"}]}
        r = httpx.post(f"{px.url('deepseek')}/chat/completions", json=body, headers={"host": "evil.example"})
        assert r.status_code == 421
        r = httpx.post(f"{px.url('deepseek')}/chat/completions", json=body,
                       headers={"origin": "https://evil.example", "authorization": "Bearer k"})
        assert r.status_code == 403
        assert len(emulator.requests("deepseek")) == before
        r = httpx.post(f"{px.url('deepseek')}/chat/completions", json=body, headers={"authorization": "Bearer k"})
        assert r.status_code == 200


def test_a_custom_route_from_routes_toml_is_served(hermes_home: Path) -> None:
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "routes.toml").write_text(
        '[[route]]\nkey = "mylab"\nwire = "openai_chat"\ncarriers = ["reasoning_content"]\nmust_echo = true\n')
    body = {"model": "lab-model", "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "r"}]}
    path = hermes_home / "lab.json"
    path.write_bytes(orjson.dumps(body))
    r = cli(hermes_home, "proxy", "--dry-run", str(path), "--route", "mylab", check=False)
    assert r.returncode != 0 and "--upstream mylab=URL" in r.stderr, "a row without a base URL needs one"
    out = orjson.loads(cli(hermes_home, "proxy", "--dry-run", str(path), "--route", "mylab",
                           "--upstream", "mylab=http://10.0.0.5:8000/v1").stdout)
    assert out["route"] == "mylab" and out["upstream"] == "http://10.0.0.5:8000/v1/chat/completions"
    assert out["body"]["messages"][1]["reasoning_content"] == PAD, "the row's own must-echo rule"


def test_the_proxy_serves_the_web_view_and_its_live_tail_shows_restores(emulator: Any, hermes_home: Path) -> None:
    with running_proxy(emulator) as px:
        openai_loop(_client(px, "kimi"), "kimi-k2.6", ("see me",), False)
        root = px.url("ui").rsplit("/ui", 1)[0]
        page = httpx.get(f"{root}/ui/", timeout=10)
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        with httpx.stream("GET", f"{root}/ui/live/events", headers={"Last-Event-ID": "0"}, timeout=20) as r:
            seen = "".join(r.iter_text())
        assert "kimi-k2.6" in seen and "restored" in seen, "the live tail shows the proxy's records"
        assert "sk-tenant-a" not in page.text + seen
        routed = httpx.get(f"{root}/ui/", headers={"Host": "evil.example"}, timeout=10)
        assert routed.status_code in (403, 421), "the guard covers the pages too"


def test_an_upstream_cookie_goes_back_to_its_client_and_to_no_other_tenant(emulator: Any, upstream: Any) -> None:
    """The proxy relays ``Set-Cookie`` to the client that got it — each cookie in a header of
    its own, every header's bytes as sent — and keeps no cookie jar of its own: a cookie the
    upstream set for one tenant's request is never sent with another tenant's; a client's own
    ``Cookie`` header is forwarded as it came."""
    up, url = upstream
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with running_proxy(emulator, generic=url) as px:
        chat = f"{px.url('generic')}/chat/completions"
        a = httpx.post(chat, json=body, headers={"authorization": "Bearer sk-tenant-aaaaaaaa"}, timeout=20)
        # each cookie in a header of its own, as the upstream sent them (not joined with commas)
        assert a.headers.get_list("set-cookie") == ["__cf_bm=for-aaaaaaaa; Path=/; HttpOnly", "_cfuvid=second; Path=/"]
        assert (b"x-region", "Zürich".encode("latin-1")) in a.headers.raw
        httpx.post(chat, json=body, headers={"authorization": "Bearer sk-tenant-bbbbbbbb"}, timeout=20)
        httpx.post(chat, json=body, headers={"authorization": "Bearer sk-tenant-bbbbbbbb",
                                             "cookie": "mine=1"}, timeout=20)
    assert up.cookies == [None, None, "mine=1"]


def test_a_query_string_reaches_the_upstream_byte_for_byte(emulator: Any, upstream: Any) -> None:
    """Azure-style ``?api-version=…`` and anything percent-encoded pass through untouched, on a
    chat request (rewritten) and on a relayed one."""
    up, url = upstream
    query = "api-version=2024-10-21&path=a%2Fb%20c&empty="
    with running_proxy(emulator, generic=url) as px:
        chat = httpx.post(f"{px.url('generic')}/chat/completions?{query}", timeout=20,
                          json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
                          headers={"authorization": "Bearer sk-query-0000"})
        models = httpx.get(f"{px.url('generic')}/models?{query}", timeout=20)
        plain = httpx.get(f"{px.url('generic')}/models", timeout=20)
    assert chat.status_code == models.status_code == plain.status_code == 200
    assert up.queries == [query.encode(), query.encode(), b""]
