"""Issue 32 item 4: a huge upstream answer must not exhaust the proxy.

A real ``hermes proxy --max-upstream-body 256 KiB`` in front of a loopback upstream that
answers client A with far more than that — 128 MiB of JSON with its length declared, the same
without a length (chunked), and a 32 MiB stream of reasoning deltas that would finish with a
tool call. Each is refused or cut: a 502 ``upstream_too_large`` for JSON, a stream ended short
of its finish. Meanwhile and afterwards client B (another key) is answered with its own answer
— never A's bytes left in a pooled connection — the proxy's peak memory grows by far less
than one answer, and nothing of A's answers is recorded.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx
import openai
import orjson
import pytest
from _loopback import Seen, Upstream, log_records, proxy_process, send_json

LIMIT = 256 << 10
MODEL = "deepseek-v4-pro"
SECRET = "alice-private-thought "


def _chunked(handler: BaseHTTPRequestHandler, content_type: str, parts: object, length: int | None = None) -> None:
    """Writes ``parts`` (an iterable of bytes) as the answer until the peer goes away."""
    handler.send_response(200)
    handler.send_header("content-type", content_type)
    if length is None:
        handler.send_header("transfer-encoding", "chunked")
    else:
        handler.send_header("content-length", str(length))
    handler.end_headers()
    try:
        for part in parts:  # type: ignore[attr-defined]
            handler.wfile.write(part if length is not None else b"%x\r\n%s\r\n" % (len(part), part))
        if length is None:
            handler.wfile.write(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        handler.close_connection = True


def _answer(seen: Seen, handler: BaseHTTPRequestHandler) -> None:
    what = seen.body["messages"][-1]["content"]
    block = (SECRET * 2000).encode()  # ~44 KB
    if what == "bob-big":
        send_json(handler, {"id": "b", "object": "chat.completion", "model": MODEL, "choices": [{
            "index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "a long answer for bob",
                                                              "reasoning_content": "bob thinks " * 15_000}}]})
    elif what == "bob":
        send_json(handler, {"id": "b", "object": "chat.completion", "model": MODEL, "choices": [{
            "index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "answer for bob",
                                                              "reasoning_content": "bob's own thought"}}]})
    elif what == "json-declared":
        head = b'{"id":"a","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"'
        n = (128 << 20) // len(block)
        _chunked(handler, "application/json", (head, *(block for _ in range(n)), b'"}}]}'),
                 length=len(head) + n * len(block) + 5)
    elif what == "json-chunked":
        head = b'{"id":"a","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"'
        _chunked(handler, "application/json",
                 (head, *(block for _ in range((128 << 20) // len(block))), b'"}}]}'))
    else:  # a stream of reasoning that would end in a tool call, if anyone read that far
        def events() -> object:
            delta = orjson.dumps({"choices": [{"index": 0, "delta": {"reasoning_content": SECRET * 200}}]})
            for _ in range((32 << 20) // len(delta)):
                yield b"data: " + delta + b"\n\n"
            yield b"data: " + orjson.dumps({"choices": [{"index": 0, "finish_reason": "tool_calls", "delta": {
                "tool_calls": [{"index": 0, "id": "call_0", "type": "function",
                                "function": {"name": "read_file", "arguments": "{}"}}]}}]}) + b"\n\n"
            yield b"data: [DONE]\n\n"
        _chunked(handler, "text/event-stream", events())


def _peak_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")))


@pytest.mark.timeout(300)
def test_a_huge_upstream_answer_is_refused_or_cut_and_the_proxy_serves_others(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Upstream(_answer) as up, proxy_process(home, "--upstream", f"deepseek={up.url}", "--max-upstream-body",
                                                str(LIMIT), "--memory-mb", "0.1") as px:
        url = f"{px.root}/deepseek/chat/completions"

        def post(who: str, what: str) -> httpx.Response:
            return httpx.post(url, timeout=60, headers={"authorization": f"Bearer sk-{who}-0000000000000000"},
                              json={"model": MODEL, "messages": [{"role": "user", "content": what}]})

        def bob() -> None:
            b = post("bob", "bob")
            assert b.status_code == 200 and b.json()["choices"][0]["message"]["content"] == "answer for bob"
            assert "alice" not in b.text

        bob()  # warm: the upstream connection is in the pool, bob's turn is recorded
        peak = _peak_kib(px.pid)
        for what in ("json-declared", "json-chunked"):
            r = post("alice", what)
            assert r.status_code == 502, (what, r.status_code, r.text[:200])
            err = r.json()["error"]
            assert err["code"] == "upstream_too_large" and str(LIMIT) in err["message"], err
            assert SECRET not in r.text
            bob()

        # a stream: relayed as it comes, ended with an error event short of its finish, while
        # another client is served meanwhile
        received = b""
        bob_s: list[float] = []

        def bob_meanwhile() -> None:
            t0 = time.monotonic()
            bob()
            bob_s.append(time.monotonic() - t0)

        t = threading.Thread(target=bob_meanwhile)
        with httpx.stream("POST", url, timeout=60, headers={"authorization": "Bearer sk-alice-0000000000000000"},
                          json={"model": MODEL, "stream": True,
                                "messages": [{"role": "user", "content": "stream"}]}) as s:
            assert s.status_code == 200
            for chunk in s.iter_raw():
                if not received:
                    t.start()
                received += chunk
        t.join()
        body, _, last = received.rpartition(b"data: ")
        assert orjson.loads(last)["error"]["code"] == "upstream_too_large", last[:300]
        assert LIMIT // 2 < len(body) <= LIMIT and b"[DONE]" not in received and b"finish_reason" not in received
        assert bob_s and bob_s[0] < 5, bob_s

        # what a client using the official SDK sees
        client = openai.OpenAI(base_url=f"{px.root}/deepseek", api_key="sk-alice-0000000000000000", max_retries=0)
        with pytest.raises(openai.APIError, match="exceeds 262144 bytes"):
            for _ in client.chat.completions.create(model=MODEL, stream=True,
                                                    messages=[{"role": "user", "content": "stream"}]):
                pass
        with pytest.raises(openai.APIStatusError, match="exceeds 262144 bytes") as e:
            client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "json-chunked"}])
        assert e.value.status_code == 502

        # an answer within the bound but larger than the tenant's whole memory: relayed, not
        # kept, and bob's earlier recording stays
        big = post("bob", "bob-big")
        assert big.status_code == 200 and len(big.content) > 100_000
        time.sleep(0.5)  # the recording is written after the reply
        again = httpx.post(url, timeout=60, headers={"authorization": "Bearer sk-bob-0000000000000000"}, json={
            "model": MODEL, "messages": [{"role": "user", "content": "bob"},
                                         {"role": "assistant", "content": "answer for bob"},
                                         {"role": "user", "content": "bob"}]})
        assert again.status_code == 200 and "alice" not in again.text
        assert up.seen[-1].body["messages"][1].get("reasoning_content") == "bob's own thought", \
            "bob's earlier turn is still restored"
        grew = _peak_kib(px.pid) - peak
        assert grew < 32 << 10, f"the proxy's peak memory grew by {grew} KiB"

    with sqlite3.connect(home / "state.db") as db:
        rows = db.execute("SELECT size FROM proxy_memory").fetchall()
    # bob's first turn and the answer to his follow-up (another conversation, so another key)
    assert len(rows) == 2 and all(size < 4096 for (size,) in rows), f"only bob's small turns are kept: {rows}"
    wal = home / "state.db-wal"
    assert not wal.exists() or wal.stat().st_size < 4 << 20, wal.stat().st_size
    errors = [r["error"] for r in log_records(home, "proxy_error")]
    assert sum(str(LIMIT) in e for e in errors) == 5, errors
    assert any("is not kept" in e for e in errors), errors
