"""Tools the model can call: four built-ins plus any registered under the ``hermes.tools``
entry-point group.

A tool never crashes the agent: bad arguments, unknown names, exceptions and oversized
output all become a ``ToolResult`` with ``is_error`` (or a truncation note) that the model
sees. ``run_command`` runs only when the user allowed it (``--allow-commands``) or confirms
it (the REPL asks).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .messages import ToolCall, ToolResult
from .wire import ToolSpec

__all__ = ["MAX_OUTPUT", "Tool", "ToolContext", "Toolbox", "builtin_tools", "load_toolbox"]

MAX_OUTPUT = 256 * 1024
"""Characters of tool output sent to the model; the rest is cut with a note saying how much."""


@dataclass(frozen=True, slots=True)
class Tool:
    spec: ToolSpec
    run: Callable[[Mapping[str, Any], ToolContext], str]


@dataclass(slots=True)
class ToolContext:
    cwd: Path = field(default_factory=Path.cwd)
    allow_commands: bool = False
    confirm: Callable[[str], bool] | None = None
    """Asked before ``run_command`` when commands are not allowed outright."""


def _path(ctx: ToolContext, raw: Any) -> Path:
    if not isinstance(raw, str) or not raw:
        raise ValueError("'path' must be a non-empty string")
    p = Path(raw).expanduser()
    return p if p.is_absolute() else ctx.cwd / p


def _read_file(args: Mapping[str, Any], ctx: ToolContext) -> str:
    path = _path(ctx, args.get("path"))
    data = path.read_bytes()
    if b"\0" in data[:4096]:
        return f"{path} is a binary file ({len(data)} bytes)"
    return data.decode("utf-8", "replace")


def _list_dir(args: Mapping[str, Any], ctx: ToolContext) -> str:
    path = _path(ctx, args.get("path", "."))
    rows = []
    for entry in sorted(path.iterdir(), key=lambda e: e.name)[:1000]:
        rows.append(f"{entry.name}/" if entry.is_dir() else entry.name)
    return "\n".join(rows) or "(empty directory)"


def _search_files(args: Mapping[str, Any], ctx: ToolContext) -> str:
    pattern = args.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise ValueError("'pattern' must be a non-empty regular expression")
    rx = re.compile(pattern)
    root = _path(ctx, args.get("path", "."))
    hits: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in ("node_modules", "__pycache__")]
        for name in sorted(filenames):
            f = Path(dirpath) / name
            try:
                with f.open("r", encoding="utf-8", errors="strict") as fh:
                    for n, line in enumerate(fh, 1):
                        if rx.search(line):
                            hits.append(f"{f.relative_to(root)}:{n}: {line.rstrip()[:200]}")
                            if len(hits) >= 200:
                                return "\n".join([*hits, "(stopped at 200 matches)"])
            except (UnicodeDecodeError, OSError):
                continue
    return "\n".join(hits) or "no matches"


def _run_command(args: Mapping[str, Any], ctx: ToolContext) -> str:
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ValueError("'command' must be a non-empty string")
    if not ctx.allow_commands and not (ctx.confirm and ctx.confirm(command)):
        raise PermissionError("running commands needs the user's permission (--allow-commands or a yes in the REPL)")
    timeout = args.get("timeout", 60)
    proc = subprocess.run(command, shell=True, cwd=ctx.cwd, capture_output=True, text=True,
                          timeout=float(timeout) if isinstance(timeout, int | float) else 60.0)
    return f"exit code {proc.returncode}\n{proc.stdout}{proc.stderr}"


def _schema(**props: str) -> dict[str, Any]:
    required = [k for k in props if not k.endswith("?")]
    return {"type": "object",
            "properties": {k.rstrip("?"): {"type": "string", "description": v} for k, v in props.items()},
            "required": required}


def builtin_tools() -> list[Tool]:
    return [
        Tool(ToolSpec("list_dir", "List a directory.", _schema(path="Directory path, e.g. '.'.")), _list_dir),
        Tool(ToolSpec("read_file", "Read a text file.", _schema(path="File path.")), _read_file),
        Tool(ToolSpec("search_files", "Search files under a directory for a regular expression.",
                      _schema(pattern="Regular expression.", **{"path?": "Directory to search (default '.')."})),
             _search_files),
        Tool(ToolSpec("run_command", "Run a shell command (the user must allow it).",
                      _schema(command="The shell command.")), _run_command),
    ]


class Toolbox:
    """Tools by name; ``execute`` turns every failure into an error result."""

    def __init__(self, tools: Iterable[Tool], ctx: ToolContext | None = None) -> None:
        self.tools = {t.spec.name: t for t in tools}
        self.ctx = ctx or ToolContext()

    @property
    def specs(self) -> list[ToolSpec]:
        return [t.spec for t in self.tools.values()]

    def execute(self, call: ToolCall) -> ToolResult:
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
        try:
            out = tool.run(args, self.ctx)
        except Exception as e:  # a tool failure is the model's information, not our crash
            return ToolResult(call.id, f"error: {type(e).__name__}: {e}", call.name, True)
        if len(out) > MAX_OUTPUT:
            out = out[:MAX_OUTPUT] + f"\n[output truncated: {len(out):,} characters, showing the first {MAX_OUTPUT:,}]"
        return ToolResult(call.id, out, call.name)


def load_toolbox(ctx: ToolContext | None = None, *, plugins: bool = True) -> Toolbox:
    """Built-ins plus entry-point tools (``hermes.tools``: a Tool or a callable returning Tools)."""
    tools = builtin_tools()
    if plugins:
        from importlib.metadata import entry_points

        for ep in entry_points(group="hermes.tools"):
            obj = ep.load()
            loaded = obj if isinstance(obj, Tool) else obj()
            tools.extend([loaded] if isinstance(loaded, Tool) else list(loaded))
    return Toolbox(tools, ctx)
