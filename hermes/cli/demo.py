"""``hermes demo``: watch replay work offline, across routes, processes and a branch.

It starts the emulators in-process, then drives the real ``hermes`` CLI in fresh processes
against them — a tool-calling turn on DeepSeek, a ``--resume`` in a new process, a switch to
OpenRouter, a branch continued on Anthropic, Gemini and Mistral — and prints, from the
emulators' own request logs, which reasoning went back on every request.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

__all__ = ["demo", "sent_reasoning"]

_CHAT_KEYS = {"reasoning_content": "RC", "reasoning": "R", "reasoning_details": "RD",
              "reasoning_opaque": "opaque", "reasoning_text": "rtext", "extra_content": "sig"}


def sent_reasoning(body: Mapping[str, Any]) -> str:
    """What reasoning a request body carried back, read from the body itself (not our plan)."""
    counts: dict[str, int] = {}

    def add(k: str) -> None:
        counts[k] = counts.get(k, 0) + 1

    for m in body.get("messages", []) or []:
        if not isinstance(m, Mapping) or m.get("role") != "assistant":
            continue
        for key, label in _CHAT_KEYS.items():
            if key in m:
                add("RC pad" if key == "reasoning_content" and m[key] == " " else label)
        content = m.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, Mapping) and block.get("type") in ("thinking", "redacted_thinking"):
                    add(f"{block['type']} block")
                if isinstance(block, Mapping) and "reasoningContent" in block:
                    add("reasoningContent")
    for c in body.get("contents", []) or []:
        for part in c.get("parts", []) if isinstance(c, Mapping) else []:
            if isinstance(part, Mapping) and "thoughtSignature" in part:
                add("thoughtSignature")
    for item in body.get("input", []) or []:
        if isinstance(item, Mapping) and item.get("type") == "reasoning":
            add("reasoning item")
    return ", ".join(f"{k}×{v}" for k, v in counts.items()) or "—"


def _run(args: list[str], env: Mapping[str, str], cwd: Path | None = None) -> dict[str, Any]:
    import orjson

    proc = subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True,
                          env=dict(env), timeout=120, cwd=cwd)
    if proc.returncode != 0:
        raise click.ClickException(f"`hermes {' '.join(args)}` failed:\n{proc.stderr.strip()}")
    out = proc.stdout.strip()
    return orjson.loads(out) if out.startswith("{") else {"text": out}


@click.command()
@click.option("--home", type=click.Path(file_okay=False, path_type=Path),
              help="HERMES_HOME for the demo (default: a new temporary directory).")
def demo(home: Path | None) -> None:
    """Offline tour: one session across DeepSeek, OpenRouter, Anthropic, Gemini and Mistral
    emulators, with a resume in a fresh process and a branch; prints what was replayed where."""
    from rich.console import Console
    from rich.table import Table

    from ..emulate import Emulator

    home = home or Path(tempfile.mkdtemp(prefix="hermes-demo-"))
    env = {**os.environ, "HERMES_HOME": str(home), "HERMES_API_KEY": "demo-key"}
    console = Console()
    with Emulator(["deepseek", "openrouter", "anthropic", "gemini", "mistral"]) as emu:
        work = Path(tempfile.mkdtemp(prefix="hermes-demo-work-"))
        (work / "notes.txt").write_text("Hermes keeps reasoning across turns.\n")

        def run(args: list[str]) -> dict[str, Any]:
            return _run(args, env, cwd=work)
        steps: list[tuple[str, list[str]]] = []
        first = run(["chat", "-q", "What is in this directory?", "-p", "deepseek", "-m", "deepseek-v4",
                      "-u", emu.url("deepseek"), "--json"])
        sid = first["session_id"]
        steps.append(("1. DeepSeek turn with a tool call", ["deepseek"]))
        run(["chat", "--resume", sid, "-q", "Which file matters most?", "--json"])
        steps.append(("2. --resume in a new process (same route)", ["deepseek"]))
        run(["chat", "--resume", sid, "-q", "Summarise it.", "-p", "openrouter", "-m", "anthropic/claude-sonnet-4.5",
              "-u", emu.url("openrouter"), "--json"])
        steps.append(("3. switch provider to OpenRouter", ["openrouter"]))
        branch = run(["sessions", "branch", sid, "--json"])["id"]
        run(["chat", "--resume", branch, "-q", "Look again, carefully.", "-p", "anthropic", "-m", "claude-opus-5",
              "-u", emu.url("anthropic"), "--json"])
        steps.append(("4. branch, continued on Anthropic", ["anthropic"]))
        run(["chat", "--resume", branch, "-q", "And once more.", "-p", "gemini", "-m", "gemini-3-pro-preview",
              "-u", emu.url("gemini"), "--json"])
        steps.append(("5. same branch on Gemini", ["gemini"]))
        run(["chat", "--resume", sid, "-q", "Final answer?", "-p", "mistral", "-m", "mistral-medium-latest",
              "-u", emu.url("mistral"), "--json"])
        steps.append(("6. original session on Mistral (strict)", ["mistral"]))

        table = Table(title="What each request carried back (read from the emulators' request logs)")
        for col in ("step", "route", "request", "reasoning sent back on assistant messages"):
            table.add_column(col, overflow="fold")
        seen: dict[str, int] = {}
        for label, names in steps:
            for name in names:
                reqs = emu.requests(name)
                new = reqs[seen.get(name, 0):]
                seen[name] = len(reqs)
                for n, r in enumerate(new, 1):
                    table.add_row(label if n == 1 else "", name, str(n), sent_reasoning(r["body"]))
        console.print(table)
    console.print(f"Every request was accepted. Sessions are in {home}:")
    console.print(f"  HERMES_HOME={home} hermes sessions show {sid}")
    console.print(f"  HERMES_HOME={home} hermes logs")
