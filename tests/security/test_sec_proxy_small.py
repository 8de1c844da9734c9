"""Issue 32 item 8, the smaller proxy holes, each attacked over loopback HTTP:

* a client inventing a model name per request must not grow the proxy's per-model memos
  (resolved targets, learned rejections) without bound;
* the upstream's own ``Date`` and ``Server`` headers are not relayed next to the proxy's
  server's, so a client never sees two of either;
* a gzip answer the proxy decoded (a chat answer it read whole) goes out without
  ``Content-Encoding: gzip``; one it relays raw (a stream, any other path) keeps it.

Every answer that reaches client B is checked for client A's reasoning.
"""

from __future__ import annotations

import gzip
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx
import orjson
from _loopback import Seen, Upstream, proxy_process
from _proxy import Background

from hermes.proxy import ProxyOptions, SqliteMemory, create_app
from hermes.store import Store

MODEL = "deepseek-v4-pro"


def _chat(seen: Seen) -> bytes:
    who = seen.headers.get("authorization", "").removeprefix("Bearer ")
    model = seen.body["model"] if seen.body else MODEL
    if seen.body and seen.body.get("stream"):
        return b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in (
            {"choices": [{"index": 0, "delta": {"reasoning_content": f"thought of {who}"}}]},
            {"choices": [{"index": 0, "delta": {"content": f"answer for {who}"}, "finish_reason": "stop"}]})
        ) + b"data: [DONE]\n\n"
    return orjson.dumps({"id": "x", "object": "chat.completion", "model": model, "choices": [{
        "index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": f"answer for {who}", "reasoning_content": f"thought of {who}"}}]})


def _answer(seen: Seen, handler: BaseHTTPRequestHandler, *, gzipped: bool = True) -> None:
    """Always gzip (as a CDN in front of an API may, whatever ``Accept-Encoding`` said), with
    the upstream's own ``Date`` and ``Server``."""
    stream = bool(seen.body and seen.body.get("stream"))
    raw = _chat(seen) if seen.path.endswith("/chat/completions") else b'{"object":"list","data":[]}'
    body = gzip.compress(raw) if gzipped else raw
    handler.send_response_only(200)
    handler.send_header("date", "Mon, 01 Jan 1990 00:00:00 GMT")
    handler.send_header("server", "upstream-cdn/1.0")
    handler.send_header("content-type", "text/event-stream" if stream else "application/json")
    if gzipped:
        handler.send_header("content-encoding", "gzip")
    handler.send_header("content-length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def test_upstream_date_server_and_encoding_headers_reach_the_client_once_and_right(tmp_path: Path) -> None:
    with Upstream(_answer) as up, proxy_process(tmp_path / "home", "--upstream", f"deepseek={up.url}") as px:
        base = f"{px.root}/deepseek"
        alice = {"authorization": "Bearer sk-alice-0000000000000000"}
        bob = {"authorization": "Bearer sk-bob-00000000000000000"}
        body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
        answers = {
            "json": httpx.post(f"{base}/chat/completions", headers=alice, json=body, timeout=30),
            "stream": httpx.post(f"{base}/chat/completions", headers=alice, json={**body, "stream": True}, timeout=30),
            "relay": httpx.get(f"{base}/models", headers=alice, timeout=30),
            "bob": httpx.post(f"{base}/chat/completions", headers=bob, json=body, timeout=30),
        }
    for what, r in answers.items():
        assert r.status_code == 200, (what, r.text)
        for name in ("date", "server"):
            assert len(r.headers.get_list(name)) == 1, (what, name, r.headers.raw)
        assert "1990" not in r.headers["date"] and "upstream-cdn" not in r.headers["server"], (what, r.headers)
    # every answer is decoded on its way in: plain bytes, never labelled gzip
    for r in answers.values():
        assert "content-encoding" not in r.headers, r.headers.raw
    assert answers["json"].json()["choices"][0]["message"]["content"] == "answer for sk-alice-0000000000000000"
    assert b"[DONE]" in answers["stream"].content and answers["relay"].json()["object"] == "list"
    assert "alice" not in answers["bob"].text and "bob" in answers["bob"].text


def test_invented_model_names_do_not_grow_the_proxy_without_bound(tmp_path: Path) -> None:
    """1,100 model names a client makes up: every per-model memo stays at its 1,024 bound."""

    def plain(seen: Seen, handler: BaseHTTPRequestHandler) -> None:
        _answer(seen, handler, gzipped=False)

    mem, store = SqliteMemory(tmp_path / "state.db"), Store(tmp_path / "state.db")
    try:
        with Upstream(plain) as up:
            app = create_app(mem, store, ProxyOptions(upstreams={"deepseek": up.url}))
            with Background(app=app) as px, httpx.Client(base_url=px.url("deepseek"), timeout=30) as c:
                for i in range(1100):
                    r = c.post("/chat/completions", headers={"authorization": "Bearer sk-model-inventor-0000"},
                               json={"model": f"deepseek-invented-{i}", "messages": [{"role": "user", "content": "x"}]})
                    assert r.status_code == 200, r.text
                proxy = app.state.proxy
                assert len(proxy._lessons) <= 1024 and len(proxy._targets) <= 1024, \
                    (len(proxy._lessons), len(proxy._targets))
                r = c.post("/chat/completions", headers={"authorization": "Bearer sk-bob-00000000000000000"},
                           json={"model": MODEL, "messages": [{"role": "user", "content": "x"}]})
                assert r.status_code == 200 and "inventor" not in r.text
    finally:
        mem.close()
        store.close()
