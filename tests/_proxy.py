"""Helpers for the proxy tests: an in-process proxy in front of the emulators, and tool loops
written the way real client code writes them (nothing here knows about reasoning)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from hermes.proxy import Bounds, ProxyOptions, ReasoningMemory, open_memory
from hermes.proxy.app import create_app
from hermes.proxy.server import _config
from hermes.serving.listen import bind
from hermes.store import SessionStore, Store

ROUTES = ("deepseek", "kimi", "gemini-openai", "openrouter", "glm", "copilot", "mistral", "generic")
TOOLS = [{"type": "function", "function": {
    "name": "list_files", "description": "List the files under a path.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
RESULT = "README.md hermes/ tests/"
ASK = {"reasoning": {"enabled": True}}
"""How an OpenRouter client asks for reasoning (Claude there thinks only when asked)."""


class Background:
    """An ASGI app (by default the proxy's) on 127.0.0.1 in a background thread, served as
    ``hermes proxy`` serves it."""

    def __init__(self, memory: ReasoningMemory | None = None, ledger: SessionStore | None = None,
                 options: ProxyOptions | None = None, *, app: Any = None) -> None:
        self._sock = bind("127.0.0.1", 0)
        self.port = self._sock.getsockname()[1]
        if app is None:
            if memory is None or ledger is None:
                raise TypeError("Background: the proxy's app needs a memory and a ledger (or pass app=)")
            app = create_app(memory, ledger, options)
        self._server = uvicorn.Server(_config(app, "warning"))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name="hermes-proxy", daemon=True)

    def url(self, route: str) -> str:
        return f"http://127.0.0.1:{self.port}/{route}"

    def __enter__(self) -> Background:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("proxy failed to start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=5)
        self._sock.close()


@contextmanager
def running_proxy(emu: Any, bounds: Bounds = Bounds(), store: Any = None, **upstreams: str) -> Iterator[Background]:
    """A proxy on 127.0.0.1 whose routes forward to the emulator's personalities; its memory
    is kept where ``store`` keeps sessions (default: a fresh ``state.db``)."""
    own = store is None
    store = Store() if own else store
    memory = open_memory(store, bounds)
    ups = {r: emu.url(r) for r in ROUTES}
    ups.update(upstreams)
    try:
        with Background(memory, store, ProxyOptions(upstreams=ups)) as px:
            px.memory = memory  # type: ignore[attr-defined]
            px.store = store  # type: ignore[attr-defined]
            yield px
    finally:
        memory.close()
        if own:
            store.close()


def openai_step(client: Any, model: str, messages: list[dict[str, Any]], stream: bool,
                extra: dict[str, Any] | None = None, seen: list[str] | None = None) -> dict[str, Any]:
    """One model call; the assistant message appended the way most client code does it.
    ``seen``: where the test keeps the ``reasoning_content`` the response carried (the
    message returned never has it)."""
    if not stream:
        resp = client.chat.completions.create(model=model, messages=messages, tools=TOOLS, extra_body=extra)
        if seen is not None:
            seen.append((resp.choices[0].message.model_extra or {}).get("reasoning_content") or "")
        return dict(resp.choices[0].message.model_dump(include={"role", "content", "tool_calls"}))
    content = thought = ""
    calls: dict[int, dict[str, Any]] = {}
    for chunk in client.chat.completions.create(model=model, messages=messages, tools=TOOLS, stream=True,
                                                extra_body=extra):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        content += delta.content or ""
        thought += (delta.model_extra or {}).get("reasoning_content") or ""
        for tc in delta.tool_calls or []:
            c = calls.setdefault(tc.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
            c["id"] = tc.id or c["id"]
            if tc.function:
                c["function"]["name"] += tc.function.name or ""
                c["function"]["arguments"] += tc.function.arguments or ""
    if seen is not None:
        seen.append(thought)
    msg: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        msg["tool_calls"] = [calls[i] for i in sorted(calls)]
    return msg


def openai_loop(client: Any, model: str, questions: tuple[str, ...], stream: bool,
                messages: list[dict[str, Any]] | None = None, extra: dict[str, Any] | None = None
                ) -> list[dict[str, Any]]:
    """A multi-step tool loop per question with the official SDK; raises on any rejection."""
    messages = messages if messages is not None else []
    for q in questions:
        messages.append({"role": "user", "content": q})
        for _ in range(4):
            msg = openai_step(client, model, messages, stream, extra)
            messages.append(msg)
            if not msg.get("tool_calls"):
                break
            for c in msg["tool_calls"]:
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": RESULT})
    return messages


def langchain_loop(base_url: str, model: str, questions: tuple[str, ...], stream: bool,
                   extra: dict[str, Any] | None = None) -> list[Any]:
    """The same loop with langchain-openai's ChatOpenAI, as its docs show it."""
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(base_url=base_url, api_key="sk-langchain-client", model=model, max_retries=0,
                     streaming=stream, extra_body=extra).bind_tools(TOOLS)
    msgs: list[Any] = []
    for q in questions:
        msgs.append(HumanMessage(q))
        for _ in range(4):
            if stream:
                ai: Any = None
                for chunk in llm.stream(msgs):
                    ai = chunk if ai is None else ai + chunk
            else:
                ai = llm.invoke(msgs)
            msgs.append(ai)
            if not ai.tool_calls:
                break
            for tc in ai.tool_calls:
                msgs.append(ToolMessage(RESULT, tool_call_id=tc["id"]))
    return msgs


def assistant_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["body"]["messages"] if m.get("role") == "assistant"]
