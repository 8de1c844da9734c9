"""`hermes gateway` over real HTTP: two gateway processes (one in this process's thread, one a
`python -m hermes gateway` subprocess) share one state.db and talk to the emulators.

What must hold: a turn served by one process replays, in the other, exactly the reasoning
the first stored (checked on the emulator's request log, where the emulators verify every
signature); turns of one session never interleave across processes; every refused request
writes nothing; a stopping gateway finishes its turn.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import orjson
import pytest
from _procs import listening

from hermes.config.settings import Config
from hermes.core.messages import Message
from hermes.store import Store

TOKEN = "gw-test-token-0123456789"
KEYS = {"GEMINI_API_KEY": "test-gemini-key-0001", "OPENAI_API_KEY": "sk-test-openai-0001",
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLETEST01", "AWS_SECRET_ACCESS_KEY": "test-secret-key-not-real-0123456789",
        "AWS_DEFAULT_REGION": "us-west-2", "AWS_REGION": "us-west-2", "AWS_MAX_ATTEMPTS": "1",
        "AWS_EC2_METADATA_DISABLED": "true", "VERTEX_ACCESS_TOKEN": "ya29.test-vertex-token",
        "ANTHROPIC_API_KEY": "sk-ant-test-0001", "DEEPSEEK_API_KEY": "sk-deepseek-test-0001"}
ROUTES = {  # personality -> (provider, model)
    "gemini": ("gemini", "gemini-3-pro-preview"),
    "openai-responses": ("openai-responses", "gpt-5"),
    "bedrock": ("bedrock", "us.anthropic.claude-opus-4-5-20251101-v1:0"),
    "anthropic": ("anthropic", "claude-opus-4-6"),
    "deepseek": ("deepseek", "deepseek-v4-pro"),
}
TEXT_ROUTES = {"bedrock", "anthropic", "deepseek"}
"""Routes that take earlier reasoning back as text (signed blocks, or reasoning_content)."""
TABLES = ("sessions", "turns", "messages", "parts", "blobs", "session_locks")


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "AWS_")) and not k.endswith("_API_KEY")}
    return {**env, **KEYS, "HERMES_HOME": str(home), "HERMES_GATEWAY_TOKEN": TOKEN,
            "AWS_CONFIG_FILE": str(home / "aws-config"), "AWS_SHARED_CREDENTIALS_FILE": str(home / "aws-creds")}


def start_process(home: Path, *args: str, env: dict[str, str] | None = None,
                  launcher: Sequence[str] = ("-m", "hermes")) -> tuple[subprocess.Popen[bytes], str, Path]:
    """`python -m hermes gateway --port 0` (or ``python LAUNCHER... gateway``, e.g. the
    commit-delay fault seam); returns (process, base URL, stderr file)."""
    err = home / f"gateway-{time.monotonic_ns()}.err"
    proc = subprocess.Popen([sys.executable, *launcher, "gateway", "--port", "0", *args],
                            env={**_env(home), **(env or {})}, stdout=subprocess.DEVNULL, stderr=err.open("wb"))
    return proc, listening(proc, err, "gateway"), err


@dataclass
class Cluster:
    home: Path
    a: str
    """In-process gateway (a uvicorn thread)."""
    b: str
    """Subprocess gateway on the same state.db."""
    emu: Any

    def client(self, base: str, token: str | None = TOKEN) -> httpx.Client:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=base, headers=headers, timeout=60)

    def create(self, name: str, base: str | None = None) -> str:
        provider, model = ROUTES[name]
        with self.client(base or self.a) as c:
            r = c.post("/v1/sessions", json={"provider": provider, "model": model, "base_url": self.emu.url(name)})
        assert r.status_code == 201, r.text
        return str(r.json()["id"])

    def store(self) -> Store:
        return Store(self.home / "state.db")

    def counts(self) -> dict[str, int]:
        with sqlite3.connect(self.home / "state.db") as c:
            return {t: c.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES}


@pytest.fixture(scope="module")
def cluster(emulator: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    import uvicorn

    from hermes.gateway import GatewayOptions, create_app
    from hermes.serving.listen import bind

    home = tmp_path_factory.mktemp("gateway-home")
    saved = {k: os.environ.get(k) for k in KEYS}
    os.environ.update(KEYS)  # the in-thread gateway reads keys from this process's environment
    store = Store(home / "state.db")
    app = create_app(store, Config(), GatewayOptions(token=TOKEN, lock_wait_s=60, allowed_base_urls=(emulator.root,)))
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    proc, b, _ = start_process(home, "--lock-wait", "60", "--allow-base-url", emulator.root)
    try:
        yield Cluster(home, f"http://127.0.0.1:{sock.getsockname()[1]}", b, emulator)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
        server.should_exit = True
        thread.join(timeout=10)
        store.close()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in KEYS.items():  # conftest scrubs them per test; the in-thread gateway needs them
        monkeypatch.setenv(k, v)


def sse_events(response: httpx.Response) -> list[tuple[str, Any]]:
    out = []
    for block in response.read().decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines:
            out.append((lines.get("event", ""), orjson.loads(lines["data"])))
    return out


def opaque_payloads(messages: list[Message]) -> list[str]:
    """Every signature / blob stored on assistant reasoning: what the next turn must replay."""
    out: list[str] = []
    for m in messages:
        for r in m.reasoning:
            if r.blob:
                out.append(r.blob)
            if r.native:
                out += [s for s in (r.native.thought_signature,) if s]
                out += [sig for _, sig in r.native.tool_signatures]
    return out


def strings_in(obj: Any) -> set[str]:
    if isinstance(obj, str):
        return {obj}
    if isinstance(obj, dict):
        return set().union(*(strings_in(v) for v in obj.values())) if obj else set()
    if isinstance(obj, list):
        return set().union(*(strings_in(v) for v in obj)) if obj else set()
    return set()


# ----------------------------------------------------------------------------- cross-process replay


@pytest.mark.parametrize("name", list(ROUTES))
def test_turn_in_another_process_replays_stored_reasoning(cluster: Cluster, name: str) -> None:
    sid = cluster.create(name)
    with cluster.client(cluster.a) as c, c.stream("POST", f"/v1/sessions/{sid}/messages",
                                                  json={"content": f"inspect ({name})", "stream": True}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = sse_events(r)
    kinds = [k for k, _ in events]
    assert kinds[-1] == "done" and {"reasoning", "text", "tool_call", "tool_result"} <= set(kinds)
    last_result = len(kinds) - 1 - kinds[::-1].index("tool_result")
    assert kinds.index("tool_call") < kinds.index("tool_result") and "text" in kinds[last_result:]
    done = events[-1][1]
    assert done["stopped"] == "answer" and done["steps"] >= 2 and done["route"] == ROUTES[name][0]
    assert "".join(d["text"] for k, d in events[last_result:] if k == "text") == done["answer"]
    calls = [d for k, d in events if k == "tool_call"]
    assert all(d["id"] and d["name"] and orjson.loads(d["arguments"]) is not None for d in calls)

    with cluster.store() as s:
        turn1 = s.load(sid)
    carried = opaque_payloads(turn1)
    if name in TEXT_ROUTES:
        carried += [r.text for m in turn1 for r in m.reasoning]
    assert carried, "the route stored no reasoning to replay; nothing would prove the replay"
    before = len(cluster.emu.requests(name))
    with cluster.client(cluster.b) as c:  # a different process: it knows the session only from state.db
        r = c.post(f"/v1/sessions/{sid}/messages", json={"content": "and now?"})
    assert r.status_code == 200, r.text
    assert r.json()["stopped"] == "answer" and r.json()["answer"].startswith("Done")
    first = cluster.emu.requests(name)[before]["body"]
    sent = strings_in(first)
    assert all(blob in sent for blob in carried)  # byte-exact, and the emulator verified each one
    with cluster.store() as s:
        after = s.load(sid)
    assert after[: len(turn1)] == turn1 and after[len(turn1)].text == "and now?"


def test_a_turns_system_prompt_is_kept_by_the_session_in_every_process(cluster: Cluster) -> None:
    """``system`` on a turn, as ``hermes chat --system``: stored once with the first step, sent on
    every later request (here by the other process), never for a refused turn."""
    sid = cluster.create("anthropic")
    with cluster.client(cluster.a) as c:
        empty = c.post(f"/v1/sessions/{sid}/messages", json={"content": "hi", "system": "  "})
        assert empty.status_code == 400 and "'system' is empty" in empty.json()["error"]["message"]
        r = c.post(f"/v1/sessions/{sid}/messages", json={"content": "inspect", "system": "Answer tersely (gw)."})
    assert r.status_code == 200, r.text
    before = len(cluster.emu.requests("anthropic"))
    with cluster.client(cluster.b) as c:
        assert c.post(f"/v1/sessions/{sid}/messages", json={"content": "and now?"}).status_code == 200
    later = cluster.emu.requests("anthropic")[before:]
    assert later and all("Answer tersely (gw)." in strings_in(q["body"].get("system")) for q in later)
    with cluster.store() as s:
        history = s.load(sid)
    assert [m.text for m in history if m.role == "system"] == ["Answer tersely (gw)."]


def test_session_view_shows_carriers_not_blobs(cluster: Cluster) -> None:
    sid = cluster.create("openai-responses")
    with cluster.client(cluster.b) as c:
        assert c.post(f"/v1/sessions/{sid}/messages", json={"content": "look"}).status_code == 200
        view = c.get(f"/v1/sessions/{sid}").json()
    with cluster.store() as s:
        history = s.load(sid)
    assert view["session"]["id"] == sid and view["session"]["message_count"] == len(history)
    assert [m["role"] for m in view["messages"]] == [m.role for m in history]
    blobs = [r.blob for m in history for r in m.reasoning if r.blob]
    shown = [p for m in view["messages"] for p in m["parts"] if p["kind"] == "reasoning" and "blob" in p]
    assert len(shown) == len(blobs) > 0
    for part, blob in zip(shown, blobs, strict=True):
        assert part["blob"] == {"blob_kind": "openai.encrypted", "chars": len(blob),
                                "sha256": hashlib.sha256(blob.encode()).hexdigest()[:12]}
    assert not any(b in orjson.dumps(view).decode() for b in blobs)
    assert any("openai.encrypted" in m.get("carriers", []) for m in view["messages"])


# ----------------------------------------------------------------------------- concurrency


def test_eight_clients_one_session_two_processes_never_interleave(cluster: Cluster) -> None:
    sid = cluster.create("openai-responses")
    clients, turns = 8, 25

    def client(i: int) -> list[str]:
        answers = []
        with cluster.client(cluster.a if i % 2 else cluster.b) as c:
            for j in range(turns):
                r = c.post(f"/v1/sessions/{sid}/messages", json={"content": f"c{i} t{j}"})
                assert r.status_code == 200, r.text
                answers.append(r.json()["answer"])
        return answers

    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(client, range(clients)))
    for i, answers in enumerate(results):
        assert all(f"'c{i} t{j}'" in a for j, a in enumerate(answers))
    with cluster.store() as s:
        history = s.load(sid)
        info = s.get_session(sid)
    check_serialised(history, [f"c{i} t{j}" for i in range(clients) for j in range(turns)])
    assert info.message_count == len(history) == clients * turns * 4
    assert cluster.counts()["session_locks"] == 0


def check_serialised(history: list[Message], sent: list[str]) -> None:
    """``sent`` texts are "<client> t<j>": each stored exactly once, each client's in its own
    order, each followed by its own whole tool loop and answer (nothing interleaved)."""
    users = [n for n, m in enumerate(history) if m.role == "user"]
    texts = [history[n].text for n in users]
    assert sorted(texts) == sorted(sent)  # once each
    for client in {t.split(" t")[0] for t in sent}:  # each client's turns in its own order
        mine = [int(t.split(" t")[1]) for t in texts if t.startswith(f"{client} ")]
        assert mine == sorted(mine) == list(range(len(mine)))
    for n, start in enumerate(users):  # every user turn is followed by its own whole tool loop + answer
        end = users[n + 1] if n + 1 < len(users) else len(history)
        loop = history[start + 1:end]
        assert [m.role for m in loop] == ["assistant", "tool", "assistant"]
        assert f"{history[start].text!r}" in loop[-1].text and not loop[-1].tool_calls


def test_thirty_two_sessions_in_parallel(cluster: Cluster) -> None:
    names = ["gemini", "openai-responses"]

    def one(i: int) -> dict[str, Any]:
        base = cluster.a if i % 2 else cluster.b
        sid = cluster.create(names[i % 2], base)
        with cluster.client(base) as c:
            r = c.post(f"/v1/sessions/{sid}/messages", json={"content": f"parallel {i}"})
        assert r.status_code == 200, r.text
        return dict(r.json())

    with ThreadPoolExecutor(32) as pool:
        out = list(pool.map(one, range(32)))
    assert all(o["stopped"] == "answer" and f"'parallel {i}'" in o["answer"] for i, o in enumerate(out))
    assert len({o["session_id"] for o in out}) == 32


def test_busy_session_is_409_then_a_stale_lock_expires(cluster: Cluster) -> None:
    sid = cluster.create("openai-responses")
    with cluster.store() as s:
        assert s.acquire_lock(sid, "another-gateway", 60)
        before = cluster.counts()
        with cluster.client(cluster.b) as c:
            r = c.post(f"/v1/sessions/{sid}/messages", json={"content": "x", "wait_s": 0.2})
        assert r.status_code == 409 and r.json()["error"]["type"] == "busy"
        assert cluster.counts() == before
        assert s.release_lock(sid, "another-gateway")
        assert s.acquire_lock(sid, "crashed-gateway", 0.3)  # a crashed process's lock: short TTL left
    with cluster.client(cluster.a) as c:
        r = c.post(f"/v1/sessions/{sid}/messages", json={"content": "after expiry", "wait_s": 5})
    assert r.status_code == 200, r.text


# ----------------------------------------------------------------------------- refusals write nothing


def test_refused_requests_write_nothing(cluster: Cluster) -> None:
    sid = cluster.create("gemini")
    before, logged = cluster.counts(), len(cluster.emu.requests())
    url = f"/v1/sessions/{sid}/messages"
    with cluster.client(cluster.a, token=None) as anon, cluster.client(cluster.b) as c, \
            cluster.client(cluster.b, token="wrong") as wrong:
        r = anon.post(url, json={"content": "hi"})
        assert r.status_code == 401 and r.json()["error"]["type"] == "unauthorized"
        assert r.headers["www-authenticate"] == "Bearer"
        assert wrong.post(url, json={"content": "hi"}).status_code == 401
        assert anon.get("/healthz").json()["ok"] is True
        r = c.post("/v1/sessions/000000000000/messages", json={"content": "hi"})
        assert r.status_code == 404 and r.json()["error"]["type"] == "not_found"
        assert c.get("/v1/sessions/000000000000").status_code == 404
        assert c.get(f"/v1/sessions/{sid[:4]}").status_code == 404  # no prefix matching over HTTP
        r = c.post(url, content=b'{"content": "' + b"x" * (1 << 20) + b'"}')
        assert r.status_code == 413 and r.json()["error"]["type"] == "too_large"
        chunked = c.post(url, content=iter([b'{"content": "', b"x" * (1 << 20), b'"}']))
        assert chunked.status_code == 413  # no Content-Length: counted while reading
        r = c.post(url, content=b'{"content": "hi"', headers={"content-type": "application/json"})
        err = r.json()["error"]
        assert r.status_code == 400 and err["type"] == "invalid_request" and "not valid JSON" in err["message"]
        assert c.post(url, json=["content"]).status_code == 400
        r = c.post(url, json={"content": 7})
        assert r.status_code == 400 and "'content' must be a str" in r.json()["error"]["message"]
        r = c.post(url, json={"content": "hi", "provider": "nosuch"})
        assert r.status_code == 400 and "nosuch" in r.json()["error"]["message"]
        r = c.post("/v1/sessions", json={"provider": "nosuch", "model": "m"})
        assert r.status_code == 400
        assert c.get("/v1/nowhere").json()["error"]["type"] == "not_found"
    assert cluster.counts() == before and len(cluster.emu.requests()) == logged


def test_missing_provider_key_is_400_before_any_write(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    sid = cluster.create("gemini")
    monkeypatch.delenv("GEMINI_API_KEY")
    before = cluster.counts()
    with cluster.client(cluster.a) as c:
        r = c.post(f"/v1/sessions/{sid}/messages", json={"content": "hi"})
    assert r.status_code == 400 and "no API key" in r.json()["error"]["message"]
    assert KEYS["OPENAI_API_KEY"] not in r.text and cluster.counts() == before


def _turn_then_switch_to_responses(c: Any, cluster: Cluster, sid: str) -> str:
    """One turn on the session's route, then one that switches it to openai-responses;
    returns the model it switched to."""
    provider, model = ROUTES["openai-responses"]
    assert c.post(f"/v1/sessions/{sid}/messages", json={"content": "one"}).status_code == 200
    r = c.post(f"/v1/sessions/{sid}/messages", json={"content": "two", "provider": provider, "model": model,
                                                     "base_url": cluster.emu.url("openai-responses")})
    assert r.status_code == 200 and r.json()["route"] == "openai-responses"
    return model


def test_a_hot_session_is_checked_on_the_route_it_switched_to(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """The early checks of a hot session read the row its last turn left in this process: after
    a turn that switched the route, that is the new route, not the one the turn started on."""
    sid = cluster.create("gemini")
    with cluster.client(cluster.a) as c:
        _turn_then_switch_to_responses(c, cluster, sid)
        monkeypatch.delenv("GEMINI_API_KEY")  # the route the session left: its key no longer matters
        r = c.post(f"/v1/sessions/{sid}/messages", json={"content": "three"})
    assert r.status_code == 200, r.text
    assert r.json()["route"] == "openai-responses"


# ----------------------------------------------------------------------------- switch, branch, compress


def test_switch_provider_then_branch(cluster: Cluster) -> None:
    sid = cluster.create("gemini")
    with cluster.client(cluster.a) as c:
        model = _turn_then_switch_to_responses(c, cluster, sid)
        view = c.get(f"/v1/sessions/{sid}").json()
        assert view["session"]["provider"] == "openai-responses" and view["session"]["model"] == model
        r = c.post(f"/v1/sessions/{sid}/branch", json={"upto_seq": 3, "title": "fork"})
        assert r.status_code == 201
        fork = r.json()["id"]
        fview = c.get(f"/v1/sessions/{fork}").json()
        assert fview["messages"] == view["messages"][:4] and fview["session"]["parent_id"] == sid
        before = len(view["messages"])
        r = c.post(f"/v1/sessions/{sid}/compress", json={"keep_last": 1})
        # the summary is written by the session's current route (the Responses emulator)
        assert r.status_code == 200, r.text
        after = c.get(f"/v1/sessions/{sid}").json()["messages"]
        assert after[:before] == view["messages"]  # nothing deleted: a checkpoint is appended
        assert any(p["kind"] == "compaction" for m in after[before:] for p in m["parts"])
        r = c.post(f"/v1/sessions/{sid}/messages", json={"content": "after the checkpoint"})
        assert r.status_code == 200 and r.json()["stopped"] == "answer"


# ----------------------------------------------------------------------------- OpenAI facade


def test_openai_sdk_talks_to_a_session(cluster: Cluster) -> None:
    sid = cluster.create("gemini")
    client = openai.OpenAI(base_url=cluster.b + "/v1", api_key=TOKEN, default_headers={"X-Hermes-Session": sid},
                           max_retries=0)
    out = client.chat.completions.create(model="hermes", messages=[
        {"role": "system", "content": "ignored: the server keeps the history"},
        {"role": "user", "content": "first question"}])
    assert out.object == "chat.completion" and out.choices[0].finish_reason == "stop"
    assert "'first question'" in (out.choices[0].message.content or "")
    with cluster.store() as s:
        signatures = opaque_payloads(s.load(sid))
    before = len(cluster.emu.requests("gemini"))
    chunks = list(openai_stream(client, cluster.a, sid))
    assert chunks[0].choices[0].delta.role == "assistant" and chunks[-1].choices[0].finish_reason == "stop"
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks)
    assert "'second question'" in text
    assert all(s in strings_in(cluster.emu.requests("gemini")[before]["body"]) for s in signatures)
    with cluster.store() as s:
        users = [m.text for m in s.load(sid) if m.role == "user"]
    assert users == ["first question", "second question"]  # only the last user message is taken
    with pytest.raises(openai.BadRequestError) as e:
        openai.OpenAI(base_url=cluster.a + "/v1", api_key=TOKEN, max_retries=0).chat.completions.create(
            model="hermes", messages=[{"role": "user", "content": "no session"}])
    assert "X-Hermes-Session" in str(e.value)
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=cluster.a + "/v1", api_key="nope", max_retries=0,
                      default_headers={"X-Hermes-Session": sid}).chat.completions.create(
            model="hermes", messages=[{"role": "user", "content": "x"}])


def openai_stream(client: openai.OpenAI, base: str, sid: str) -> Iterator[Any]:
    other = client.with_options(base_url=base + "/v1")  # the other process continues the session
    yield from other.chat.completions.create(model="hermes", stream=True, messages=[
        {"role": "user", "content": "first question"}, {"role": "assistant", "content": "..."},
        {"role": "user", "content": "second question"}])


# ----------------------------------------------------------------------------- process policy


def test_non_loopback_without_token_is_refused(tmp_path: Path) -> None:
    env = {k: v for k, v in _env(tmp_path).items() if k != "HERMES_GATEWAY_TOKEN"}
    r = subprocess.run([sys.executable, "-m", "hermes", "gateway", "--host", "0.0.0.0", "--port", "0"],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "refusing to listen on 0.0.0.0 without a token" in r.stderr
    assert "HERMES_GATEWAY_TOKEN" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "state.db").exists()


def test_a_client_that_hangs_up_mid_turn_still_gets_its_turn_committed_and_the_session_freed(
        cluster: Cluster) -> None:
    """A JSON turn runs in its request's own task: the client leaving must neither cut the turn
    between its store writes nor leave the session's lock or lease held."""
    import socket

    name = "openai-responses"
    sid = cluster.create(name)
    host, port = cluster.a.removeprefix("http://").rsplit(":", 1)
    body = orjson.dumps({"content": "a slow one"})
    before = len(cluster.emu.requests(name))
    cluster.emu.state.set_control(name, delay=0.2)
    try:
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(f"POST /v1/sessions/{sid}/messages HTTP/1.1\r\nHost: {host}:{port}\r\n"
                         f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            deadline = time.monotonic() + 10
            while len(cluster.emu.requests(name)) == before and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(cluster.emu.requests(name)) > before, "the turn never reached the provider"
        # the client is gone while the first model call is still being answered
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with cluster.store() as s:
                roles = [m.role for m in s.load(sid)]
            if roles and roles[-1] == "assistant" and "tool" in roles:
                break
            time.sleep(0.05)
    finally:
        cluster.emu.state.set_control(name, delay=0.0)
    assert roles == ["user", "assistant", "tool", "assistant"], roles
    with cluster.client(cluster.a) as c:
        r = c.post(f"/v1/sessions/{sid}/messages", json={"content": "and again", "wait_s": 2})
        assert r.status_code == 200, r.text
        assert c.get("/healthz").json()["turns_running"] == 0
    with cluster.store() as s:
        assert s.lease_holder(sid) is None
        assert [m.role for m in s.load(sid)][4:] == ["user", "assistant", "tool", "assistant"]


@pytest.mark.parametrize("earlier", [0, 1], ids=["first-turn", "second-turn"])
def test_sigterm_mid_turn_finishes_the_turn(cluster: Cluster, earlier: int) -> None:
    """Also when the turn is a keep-alive connection's second."""
    name = "gemini-vertex"
    proc, base, err = start_process(cluster.home, "--allow-base-url", cluster.emu.root)
    with Store(cluster.home / "state.db") as s:
        sid = s.create_session(provider="gemini-vertex", model="gemini-3-pro-preview",
                               base_url=cluster.emu.url(name))
    cluster.emu.state.set_control(name, delay=0.05)
    before = len(cluster.emu.requests(name))
    result: dict[str, Any] = {}

    def turn() -> None:
        with cluster.client(base) as c:
            for n in range(earlier + 1):
                r = c.post(f"/v1/sessions/{sid}/messages", json={"content": f"slow one {n}"})
                result.update(status=r.status_code, body=r.json())

    try:
        t = threading.Thread(target=turn)
        t.start()
        deadline = time.monotonic() + 10
        while len(cluster.emu.requests(name)) <= before + 3 * earlier and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)  # mid-turn: the first model call is streaming
        assert proc.wait(timeout=30) == 0, err.read_text()
        t.join(timeout=10)
    finally:
        cluster.emu.state.set_control(name, delay=0.0)
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == 200 and result["body"]["stopped"] == "answer"
    with Store(cluster.home / "state.db") as s:
        history = s.load(sid)
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant", "tool", "assistant"] * (earlier + 1)
    assert history[-1].text == result["body"]["answer"]
