"""Tools the model can call: six built-ins plus any registered under the ``hermes.tools``
entry-point group.

A tool never crashes the agent: bad arguments (unparsable, or not matching the tool's JSON
Schema — see ``toolargs``), unknown names, exceptions and oversized output all become a
``ToolResult`` with ``is_error`` (or a truncation note) that the model sees. MCP servers' tools
(``mcp_tools``) come in as a ``ToolSource`` and go through the same ``execute``. ``run_command``
runs only when the user allowed it (``--allow-commands``) or confirms it (the REPL asks). Paths
stay inside the workspace, reads and searches are bounded, commands time out, and known secrets
are scrubbed from every result: see ``hermes.tools.safety``.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson

from ..core.messages import ToolCall, ToolResult
from ..wire import ToolSpec
from .edits import MAX_WRITE, Change, apply_edit, diff_text, replace_atomically
from .safety import (
    MAX_OUTPUT,
    MAX_READ,
    Budget,
    compile_pattern,
    confine,
    finish_output,
    read_regular,
    run_bounded,
)

__all__ = ["MAX_OUTPUT", "Tool", "ToolContext", "ToolSource", "Toolbox", "builtin_tools", "load_toolbox"]


@dataclass(frozen=True, slots=True)
class Tool:
    spec: ToolSpec
    run: Callable[[Mapping[str, Any], ToolContext], str]


@dataclass(slots=True)
class ToolContext:
    cwd: Path = field(default_factory=Path.cwd)
    """The workspace root: every path a tool touches resolves inside it (``tool_safety.confine``)."""
    allow_commands: bool = False
    confirm: Callable[[str], bool] | None = None
    """Asked before ``run_command`` when commands are not allowed outright."""
    read_roots: tuple[Path, ...] = ()
    """Directories outside ``cwd`` the user allowed reading (``--allow-read PATH``)."""
    command_timeout_s: float = 120.0
    """Longest a ``run_command`` may run (the model may ask for less, never more)."""
    search_timeout_s: float = 10.0
    """Longest a ``search_files`` may run, regular expression included."""
    allow_writes: bool = False
    """Let ``write_file`` / ``edit_file`` change files without asking (``--allow-writes``)."""
    confirm_write: Callable[[str, str], bool] | None = None
    """Asked with (path, unified diff) before a change when writes are not allowed outright."""
    changes: list[Change] = field(default_factory=list)
    """The files changed since the caller last cleared it (the REPL: this turn), for ``/undo``."""

    def path(self, raw: Any, *, what: str = "path") -> Path:
        """``raw`` resolved inside the workspace or a read root, else an error for the model."""
        return confine(raw, self.cwd, self.read_roots, what=what)


def _read_file(args: Mapping[str, Any], ctx: ToolContext) -> str:
    path = ctx.path(args.get("path"))
    data, size = read_regular(path, MAX_READ)
    if b"\0" in data[:4096]:
        return f"{args.get('path')} is a binary file ({size} bytes)"
    text = data.decode("utf-8", "replace")
    if size > len(data):
        text += f"\n[file cut: {size:,} bytes, showing the first {len(data):,}]"
    return text


def _list_dir(args: Mapping[str, Any], ctx: ToolContext) -> str:
    path = ctx.path(args.get("path", "."))
    with os.scandir(path) as it:
        entries = list(itertools.islice(it, 10_000))
    rows = [f"{e.name}/" if e.is_dir(follow_symlinks=False) else e.name for e in sorted(entries, key=lambda e: e.name)]
    more = "\n(listing stopped at 10,000 entries)" if len(entries) == 10_000 else ""
    cut = f"\n({len(rows) - 1000:,} more not shown)" if len(rows) > 1000 else ""
    return ("\n".join(rows[:1000]) or "(empty directory)") + cut + more


def _search_files(args: Mapping[str, Any], ctx: ToolContext) -> str:
    """Literal search by default; ``regex: true`` runs a regular expression under a timeout.
    The result names what the search did not cover (``hermes.tools.search``)."""
    from .search import search_tree

    rx = compile_pattern(args.get("pattern"), regex=args.get("regex") is True)
    return search_tree(ctx.path(args.get("path", ".")), rx, Budget(seconds=ctx.search_timeout_s))


def _change(ctx: ToolContext, raw: Any, after_of: Callable[[str | None, str], str]) -> str:
    """Confine, read, compute the new text, show the diff, ask, then write atomically and journal."""
    path = confine(raw, ctx.cwd, (), what="path")  # never into a directory --allow-read added
    name = str(path.relative_to(os.path.realpath(ctx.cwd)))
    before: bytes | None = None
    if path.exists() or path.is_symlink():
        before, size = read_regular(path, MAX_WRITE + 1)
        if size > MAX_WRITE:
            raise ValueError(f"{name} is {size:,} bytes; files over {MAX_WRITE:,} bytes are not changed by tools")
    old_text = None if before is None else before.decode("utf-8", "strict")
    after = after_of(old_text, name)
    diff = diff_text(name, old_text, after)
    if not ctx.allow_writes and not (ctx.confirm_write and ctx.confirm_write(name, diff)):
        raise PermissionError("changing files needs the user's permission (--allow-writes or a yes in the REPL)")
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_atomically(path, after.encode())
    ctx.changes.append(Change(path, before))
    verb = "created" if before is None else "changed"
    return f"{verb} {name} ({len(after.encode()):,} bytes)\n{diff}"


def _write_file(args: Mapping[str, Any], ctx: ToolContext) -> str:
    content = args.get("content")
    if not isinstance(content, str):
        raise ValueError("'content' must be the file's whole new text")
    return _change(ctx, args.get("path"), lambda _old, _name: content)


def _edit_file(args: Mapping[str, Any], ctx: ToolContext) -> str:
    old, new = args.get("old"), args.get("new")
    if not isinstance(old, str) or not isinstance(new, str):
        raise ValueError("'old' and 'new' must be strings")

    def edited(text: str | None, name: str) -> str:
        if text is None:
            raise FileNotFoundError(f"{name} does not exist (write_file creates a file)")
        return apply_edit(text, old, new, name=name)

    return _change(ctx, args.get("path"), edited)


def _run_command(args: Mapping[str, Any], ctx: ToolContext) -> str:
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ValueError("'command' must be a non-empty string")
    if not ctx.allow_commands and not (ctx.confirm and ctx.confirm(command)):
        raise PermissionError("running commands needs the user's permission (--allow-commands or a yes in the REPL)")
    asked = args.get("timeout")
    timeout = ctx.command_timeout_s
    if isinstance(asked, int | float) and not isinstance(asked, bool) and asked > 0:
        timeout = min(float(asked), timeout)
    return run_bounded(command, ctx.cwd, timeout_s=timeout)


def _schema(**props: str) -> dict[str, Any]:
    required = [k for k in props if not k.endswith("?")]
    return {"type": "object",
            "properties": {k.rstrip("?"): {"type": "string", "description": v} for k, v in props.items()},
            "required": required}


def _search_schema() -> dict[str, Any]:
    schema = _schema(pattern="Text to find (a regular expression when 'regex' is true).",
                     **{"path?": "Directory to search (default '.')."})
    schema["properties"]["regex"] = {"type": "boolean", "description": "Treat 'pattern' as a regular expression."}
    return schema


def builtin_tools() -> list[Tool]:
    return [
        Tool(ToolSpec("list_dir", "List a directory.", _schema(path="Directory path, e.g. '.'.")), _list_dir),
        Tool(ToolSpec("read_file", "Read a text file.", _schema(path="File path.")), _read_file),
        Tool(ToolSpec("search_files", "Search the text files under a directory for a string (literal unless "
                                      "'regex' is true).", _search_schema()), _search_files),
        Tool(ToolSpec("run_command", "Run a shell command (the user must allow it).",
                      _schema(command="The shell command.")), _run_command),
        Tool(ToolSpec("write_file", "Create a file or replace its whole text (the user must allow it).",
                      _schema(path="File path inside the workspace.", content="The file's complete new text.")),
             _write_file),
        Tool(ToolSpec("edit_file", "Replace one exact piece of a file's text; 'old' must occur exactly once "
                                   "(the user must allow it).",
                      _schema(path="File path inside the workspace.",
                              old="The exact text to replace, with enough context to be unique.",
                              new="The text to put in its place.")), _edit_file),
    ]


class ToolSource(Protocol):
    """Tools that are expensive to list (MCP servers): asked once, when the model first needs them."""

    def tools(self) -> list[Tool]: ...


class Toolbox:
    """Tools by name; ``execute`` turns every failure into an error result.

    Arguments are parsed, then validated against the tool's JSON Schema (``toolargs``) before
    the tool runs, whatever the tool's origin. ``sources`` are listed on first use, so a chat
    that never reaches the model never starts an MCP server.
    """

    def __init__(self, tools: Iterable[Tool], ctx: ToolContext | None = None, *,
                 sources: Iterable[ToolSource] = ()) -> None:
        self.tools = {t.spec.name: t for t in tools}
        self.ctx = ctx or ToolContext()
        self._sources = list(sources)
        self._sources_lock = threading.Lock()  # the gateway shares one toolbox between turns

    def _load_sources(self) -> None:
        if not self._sources:
            return
        with self._sources_lock:
            while self._sources:
                for tool in self._sources[0].tools():
                    self.tools.setdefault(tool.spec.name, tool)
                self._sources.pop(0)

    @property
    def specs(self) -> list[ToolSpec]:
        self._load_sources()
        return [t.spec for t in self.tools.values()]

    def execute(self, call: ToolCall) -> ToolResult:
        from .args import check_args

        self._load_sources()
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self.tools)) or "none"
            return ToolResult(call.id, f"error: unknown tool {call.name!r} (available: {known})", call.name, True)
        try:
            args = orjson.loads(call.arguments or "{}")
            if not isinstance(args, dict):
                raise ValueError("arguments must be a JSON object")
        except (orjson.JSONDecodeError, ValueError) as e:
            return ToolResult(call.id, f"error: bad arguments for {call.name}: {e}", call.name, True)
        problem = check_args(call.name, tool.spec.parameters, args)
        if problem is not None:
            return ToolResult(call.id, finish_output(f"error: {problem}"), call.name, True)
        try:
            out = tool.run(args, self.ctx)
        except Exception as e:  # a tool failure is the model's information, not our crash
            return ToolResult(call.id, finish_output(f"error: {type(e).__name__}: {e}"), call.name, True)
        # before the result is stored, sent upstream or streamed: known secrets out, length capped
        return ToolResult(call.id, finish_output(out), call.name)


def load_toolbox(ctx: ToolContext | None = None, *, plugins: bool = True,
                 sources: Iterable[ToolSource] = ()) -> Toolbox:
    """Built-ins plus entry-point tools (``hermes.tools``: a Tool or a callable returning Tools),
    plus ``sources`` (e.g. ``mcp_tools.McpHub``) listed on first use."""
    tools = builtin_tools()
    if plugins:
        from .plugins import entry_points

        for ep in entry_points("hermes.tools"):
            obj = ep.load()
            loaded = obj if isinstance(obj, Tool) else obj()
            tools.extend([loaded] if isinstance(loaded, Tool) else list(loaded))
    return Toolbox(tools, ctx, sources=sources)
