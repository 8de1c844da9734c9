"""MCP servers' tools offered to the model next to the built-ins, as ``SERVER__tool``.

The agent loop is synchronous; the official ``mcp`` client is asyncio. ``McpHub`` owns one
background thread running an event loop, and one long-lived task per server that holds the
client session open (anyio needs a session entered and left in the same task). Tool calls
from any thread are submitted to that loop and waited for with the server's timeout.

Life cycle, and what the model sees when it goes wrong:

* A server starts the first time the toolbox lists its tools (the first request of a chat),
  all servers at once. One that fails to start is reported to the user (``failures``) and
  offers no tools; the others work.
* A server that dies or drops the connection during a call gives the model an error result
  naming the server and the cause; the turn goes on. The next call starts it again, at most
  ``MAX_RESTARTS`` times per process; after that its tools answer with an error.
* ``close`` (registered with ``atexit``) ends every session — for stdio that closes the
  server's stdin, then terminates and kills it if it lingers — and stops the loop.

A stdio server's stderr goes to ``$HERMES_HOME/logs/mcp-NAME.log`` and the client library's own
warnings to ``logs/mcp.log`` (both 0600), never to the terminal.
Results become text: text blocks as they are, other content as a one-line summary (an image's
type and size, a resource's URI), structured content as JSON when there is no text.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from ..config.mcp import McpServer
from ..core.errors import redact
from ..core.events import AgentEvent, EventSink, McpFailed, McpStarted, McpStarting
from ..wire import ToolSpec
from .builtins import Tool, ToolContext

__all__ = ["MAX_RESTARTS", "McpHub", "McpToolError", "ServerInfo", "describe_content", "tool_name"]

MAX_RESTARTS = 3
START_TIMEOUT = 30.0
"""Seconds a server gets to start and list its tools."""
SEP = "__"


class McpToolError(Exception):
    """Why an MCP tool call gave no result; the message is what the model reads."""


def tool_name(server: str, tool: str) -> str:
    """The name the model sees; providers allow ``[a-zA-Z0-9_-]{1,64}``."""
    safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in tool)
    return f"{server}{SEP}{safe}"[:64]


@dataclass
class ServerInfo:
    """What ``hermes mcp list`` and the chat show about one server."""

    config: McpServer
    tools: list[Any] = field(default_factory=list)
    """``mcp.types.Tool`` rows as the server listed them."""
    error: str | None = None
    """Why the server is not running (failed to start, died), or None."""
    restarts: int = 0


@dataclass
class _Conn:
    info: ServerInfo
    client: Any = None
    stop: asyncio.Event | None = None
    dead: asyncio.Event | None = None
    task: asyncio.Task[None] | None = None
    ready: asyncio.Future[None] | None = None
    started: bool = False
    inflight: set[asyncio.Task[Any]] = field(default_factory=set)
    """Calls waiting on this session; ended with an error if the session ends first."""


def _cause(e: BaseException) -> str:
    """One line for an exception, unwrapping task-group exception groups."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    text = str(e) or type(e).__name__
    return redact(f"{type(e).__name__}: {text}" if type(e).__name__ not in text else text)[:300]


def _b64_size(data: str) -> int:
    """Decoded size of base64 ``data`` without decoding it."""
    data = data.strip()
    return len(data) * 3 // 4 - data[-2:].count("=")


def describe_content(block: Any) -> str:
    """Text of one content block; a one-line summary for anything that is not text."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mime_type}, {_b64_size(block.data):,} bytes — not shown to the model]"
    if kind == "resource_link":
        return f"[resource link: {block.uri}" + (f" ({block.name})" if getattr(block, "name", None) else "") + "]"
    if kind == "resource":
        res = block.resource
        text = getattr(res, "text", None)
        if text is not None:
            return f"[resource {res.uri}]\n{text}"
        mime = getattr(res, "mime_type", None) or "binary"
        return f"[resource {res.uri}: {mime}, {_b64_size(getattr(res, 'blob', '')):,} bytes — not shown]"
    return f"[{kind or type(block).__name__} content — not shown]"


@contextlib.asynccontextmanager
async def _http_with_headers(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """A streamable-HTTP transport whose every request carries ``headers`` (e.g. a bearer token)."""
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    async with create_mcp_http_client(headers=headers) as http, streamable_http_client(url, http_client=http) as s:
        yield s


def _structured_text(value: Any) -> str:
    """Structured content as JSON text. The standard library, not orjson: a server may send
    integers wider than 64 bits, which orjson refuses; what even this cannot write becomes a
    one-line note instead of an exception."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as e:
        return f"[structured content that cannot be written as JSON ({type(e).__name__}) — not shown]"


def _result_text(result: Any) -> str:
    parts = [describe_content(b) for b in result.content or []]
    if not parts and result.structured_content is not None:
        parts.append(_structured_text(result.structured_content))
    return "\n".join(parts) or "(no output)"


class McpHub:
    """Client sessions to the configured MCP servers, on one background asyncio loop."""

    def __init__(self, servers: Mapping[str, McpServer], *, log_dir: Any = None,
                 on_event: EventSink | None = None) -> None:
        self.servers = {name: ServerInfo(cfg) for name, cfg in servers.items()}
        self.log_dir = log_dir
        self.on_event = on_event
        self._conns = {name: _Conn(info) for name, info in self.servers.items()}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    # --- the background loop ------------------------------------------------------------
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise McpToolError("MCP tools are shut down (Hermes is exiting)")
            if self._loop is None:
                self._quiet_library_logs()
                loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=loop.run_forever, name="hermes-mcp", daemon=True)
                self._thread.start()
                self._loop = loop
                atexit.register(self.close)
            return self._loop

    def _wait(self, coro: Any, timeout: float) -> Any:
        fut: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())
        try:
            return fut.result(timeout)
        except BaseException:  # timeout, Ctrl-C: do not leave the call running on the loop
            fut.cancel()
            raise

    # --- starting and stopping servers ------------------------------------------------------
    def _transport(self, cfg: McpServer) -> tuple[Any, Any]:
        """(what ``mcp.Client`` connects to, the stderr log file to close afterwards)."""
        if cfg.url:
            return (_http_with_headers(cfg.url, cfg.resolved_headers()) if cfg.headers else cfg.url), None
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(command=cfg.command or "", args=list(cfg.args), env=cfg.resolved_env(),
                                       cwd=cfg.cwd)
        errlog = self._logfile(f"mcp-{cfg.name}.log")
        return stdio_client(params, errlog=errlog), errlog

    def _logfile(self, filename: str) -> Any:
        """``$HERMES_HOME/logs/FILENAME``, appended to, readable by the user only."""
        import os

        from ..config.paths import user_dir

        log_dir = self.log_dir or user_dir() / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(log_dir / filename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return os.fdopen(fd, "a", buffering=1)

    def _quiet_library_logs(self) -> None:
        """The ``mcp`` library's own warnings (a failed session DELETE, a broken pipe) go to
        ``logs/mcp.log`` instead of Python's last-resort handler on the user's terminal."""
        import logging

        logger = logging.getLogger("mcp")
        if not logger.handlers:
            handler = logging.StreamHandler(self._logfile("mcp.log"))
            handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
            logger.addHandler(handler)
            logger.setLevel(logging.WARNING)
            logger.propagate = False

    async def _serve(self, conn: _Conn, ready: asyncio.Future[None]) -> None:
        """Hold one server's session open until ``stop``; the only task that enters and leaves it."""
        from mcp import Client

        conn.stop, conn.dead = asyncio.Event(), asyncio.Event()
        conn.started = True
        errlog = None
        try:
            transport, errlog = self._transport(conn.info.config)
            async with Client(transport) as client:
                tools, cursor = [], None
                while True:
                    page = await client.list_tools(cursor=cursor)
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if not cursor:
                        break
                conn.info.tools, conn.info.error, conn.client = tools, None, client
                ready.set_result(None)
                await conn.stop.wait()
        except BaseException as e:  # incl. the cancellation a dying HTTP transport delivers
            conn.info.error = _cause(e)
            if not ready.done():
                ready.set_exception(McpToolError(conn.info.error))
            if isinstance(e, asyncio.CancelledError) and conn.stop.is_set():
                conn.info.error = None
        finally:
            conn.client = None
            conn.dead.set()
            for call in list(conn.inflight):
                call.cancel()
            if errlog is not None:
                errlog.close()

    async def _start(self, conn: _Conn) -> None:
        """Start the server (or join a start still under way, e.g. after a Ctrl-C) and wait for it."""
        if conn.task is None or conn.task.done() or conn.ready is None or conn.ready.done():
            conn.ready = asyncio.get_running_loop().create_future()
            conn.ready.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved even if unawaited
            conn.task = asyncio.create_task(self._serve(conn, conn.ready))
        ready = conn.ready
        try:
            await asyncio.wait_for(asyncio.shield(ready), START_TIMEOUT)
        except TimeoutError:
            conn.task.cancel()
            conn.info.error = f"did not answer within {START_TIMEOUT:.0f} s"
            raise McpToolError(conn.info.error) from None

    async def _start_all(self) -> None:
        pending = [c for c in self._conns.values() if c.client is None]
        await asyncio.gather(*(self._start(c) for c in pending), return_exceptions=True)

    async def _stop(self, conn: _Conn) -> None:
        if conn.stop is not None:
            conn.stop.set()
        if conn.task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(conn.task), 10)
            except (TimeoutError, asyncio.CancelledError):
                conn.task.cancel()
            conn.task = None

    def close(self) -> None:
        """End every session (stdio servers are stopped) and the loop; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, self._loop = self._loop, None
        if loop is None:
            return

        async def stop_all() -> None:
            await asyncio.gather(*(self._stop(c) for c in self._conns.values()), return_exceptions=True)

        with contextlib.suppress(Exception):  # exiting anyway: never hang or raise at exit
            asyncio.run_coroutine_threadsafe(stop_all(), loop).result(15)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(5)
        atexit.unregister(self.close)

    # --- what the toolbox sees ----------------------------------------------------------------
    def start(self) -> dict[str, ServerInfo]:
        """Start every server not running and list its tools; failures are kept in ``error``."""
        pending = [n for n, c in self._conns.items() if c.client is None]
        if pending:
            self._emit(McpStarting(tuple(pending)))
            try:
                self._wait(self._start_all(), START_TIMEOUT + 5)
            finally:
                self._emit(McpStarted(tuple(pending)))
        for name in pending:
            if self.servers[name].error:
                self._emit(McpFailed(name, self.servers[name].error or ""))
        return self.servers

    def _emit(self, event: AgentEvent) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def failures(self) -> dict[str, str]:
        return {n: i.error for n, i in self.servers.items() if i.error}

    def tools(self) -> list[Tool]:
        """Every running server's tools as ``Tool`` rows (the toolbox's ``ToolSource``)."""
        out = []
        for name, info in self.start().items():
            for t in info.tools:
                spec = ToolSpec(tool_name(name, t.name), (t.description or t.title or t.name)[:1024],
                                dict(t.input_schema or {"type": "object", "properties": {}}))
                out.append(Tool(spec, self._runner(name, t.name)))
        return out

    def _runner(self, server: str, tool: str) -> Callable[[Mapping[str, Any], ToolContext], str]:
        def run(args: Mapping[str, Any], ctx: ToolContext) -> str:
            return self.call(server, tool, dict(args))

        return run

    def call(self, server: str, tool: str, args: dict[str, Any]) -> str:
        """The tool's result as text; raises McpToolError (the model's error text) otherwise."""
        conn = self._conns[server]
        timeout = conn.info.config.timeout
        try:  # server output is untrusted: registered secrets (e.g. its own $TOKEN) are scrubbed
            return redact(str(self._wait(self._call(conn, tool, args, timeout), timeout + START_TIMEOUT + 5)))
        except TimeoutError:
            raise McpToolError(f"MCP server {server!r}: {tool} did not answer within {timeout:g} s") from None
        except McpToolError as e:
            raise McpToolError(redact(str(e))) from None

    async def _call(self, conn: _Conn, tool: str, args: dict[str, Any], timeout: float) -> str:
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        name = conn.info.config.name
        if conn.client is None:
            if conn.info.restarts >= MAX_RESTARTS:
                raise McpToolError(f"MCP server {name!r} is not running ({conn.info.error}); "
                                   f"gave up after {MAX_RESTARTS} restarts")
            before = conn.info.error
            if conn.started:
                conn.info.restarts += 1
            try:
                await self._start(conn)
            except McpToolError as e:
                raise McpToolError(f"MCP server {name!r} could not be started: {e}"
                                   + (f" (it had stopped: {before})" if before else "")) from None
        client, dead, me = conn.client, conn.dead, asyncio.current_task()
        assert dead is not None and me is not None
        conn.inflight.add(me)  # cancelled by _serve if the session ends under the call
        try:
            result = await client.call_tool(tool, args, read_timeout_seconds=timeout)
        except asyncio.CancelledError:
            if not dead.is_set():
                raise  # the user's Ctrl-C, or Hermes exiting
            me.uncancel()
            raise McpToolError(f"MCP server {name!r} stopped during the call to {tool}: "
                               f"{conn.info.error or 'connection lost'}") from None
        except MCPError as e:
            if e.code == REQUEST_TIMEOUT:
                raise McpToolError(f"MCP server {name!r}: {tool} did not answer within {timeout:g} s") from None
            if e.code == CONNECTION_CLOSED:  # the process exited or the stream broke
                await self._stop(conn)
                conn.info.error = f"connection closed ({e.message})"
                raise McpToolError(f"MCP server {name!r} stopped during the call to {tool}: the connection "
                                   f"closed (the server may have crashed; see its log)") from None
            raise McpToolError(f"MCP server {name!r} refused the call to {tool}: {e.message}") from None
        finally:
            conn.inflight.discard(me)
        text = _result_text(result)
        if result.is_error:
            raise McpToolError(f"{name}/{tool} failed: {text}")
        return text
