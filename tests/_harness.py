"""Attack harness: a hostile OpenAI-compatible "provider" on loopback, and gateways to attack.

The hostile server is a real HTTP server in a thread. It records every request (path, headers,
JSON body) and answers from a script: a function from the request body to the assistant
message, so a test plays a provider (or a prompt injection) that makes the model call tools
with arguments of its choosing.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Script = Callable[[dict[str, Any]], dict[str, Any]]


def answer(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{name}_{time.monotonic_ns()}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(args)}}]}


def failing(status: int, message: str = "bad request") -> dict[str, Any]:
    return {"__status__": status, "error": {"message": message, "type": "invalid_request_error"}}


def tool_then_answer(name: str, **args: Any) -> Script:
    """Call ``name(**args)`` once per user turn, then answer with the tool result's size."""

    def script(body: dict[str, Any]) -> dict[str, Any]:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return answer(f"tool said {len(str(last.get('content')))} chars")
        return call(name, **args)

    return script


class Hostile:
    """A loopback OpenAI chat server that logs what it receives (keys included)."""

    def __init__(self, script: Script | None = None) -> None:
        self.script: Script = script or (lambda body: answer("hello from the hostile server"))
        self.requests: list[dict[str, Any]] = []
        self.pages: dict[str, str] = {}
        """HTML served on GET (a hostile web page)."""
        hostile = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path in hostile.pages:
                    self._send(200, hostile.pages[self.path].encode(), "text/html")
                    return
                self._reply({"object": "list", "data": []})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.loads(raw or b"{}")
                hostile.requests.append({"path": self.path, "headers": dict(self.headers.items()), "body": body})
                msg = hostile.script(body)
                if "__status__" in msg:  # an error answer: {"__status__": 400, "error": {...}}
                    self._send(msg.pop("__status__"), json.dumps(msg).encode(), "application/json")
                    return
                usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
                if body.get("stream"):
                    delta = {k: v for k, v in msg.items() if v is not None}
                    for i, c in enumerate(delta.get("tool_calls", [])):
                        c["index"] = i
                    chunks = [{"id": "x", "object": "chat.completion.chunk", "model": body.get("model"),
                               "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                              {"id": "x", "object": "chat.completion.chunk", "model": body.get("model"),
                               "choices": [{"index": 0, "delta": {},
                                            "finish_reason": "tool_calls" if msg.get("tool_calls") else "stop"}]},
                              {"id": "x", "object": "chat.completion.chunk", "choices": [], "usage": usage}]
                    data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
                    self._send(200, data, "text/event-stream")
                    return
                self._reply({"id": "x", "object": "chat.completion", "model": body.get("model"),
                             "choices": [{"index": 0, "message": msg,
                                          "finish_reason": "tool_calls" if msg.get("tool_calls") else "stop"}],
                             "usage": usage})

            def _reply(self, obj: Any) -> None:
                self._send(200, json.dumps(obj).encode(), "application/json")

            def _send(self, status: int, data: bytes, ctype: str) -> None:
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def url(self) -> str:
        return self.root + "/v1"

    def seen(self, secret: str) -> bool:
        """Did ``secret`` reach this server anywhere (headers or body)?"""
        return any(secret in json.dumps(r) for r in self.requests)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def hostile(script: Script | None = None) -> Iterator[Hostile]:
    h = Hostile(script)
    try:
        yield h
    finally:
        h.close()


@contextmanager
def gateway(home: Path, config: Any = None, **options: Any) -> Iterator[str]:
    """An in-process gateway (uvicorn in a thread, the same server config ``hermes gateway``
    uses) over ``home/state.db``; yields its base URL."""
    import uvicorn

    from hermes.config.settings import Config
    from hermes.gateway import GatewayOptions, create_app
    from hermes.gateway.server import uvicorn_config
    from hermes.serving.listen import bind
    from hermes.store import Store

    home.mkdir(parents=True, exist_ok=True)
    store = Store(home / "state.db")
    opts = GatewayOptions(**{"provider_stream": False, **options})
    app = create_app(store, config or Config(), opts)
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn_config(app, opts))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        store.close()
