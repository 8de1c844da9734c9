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
from collections.abc import Callable, Mapping
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
                          env=dict(env), timeout=120, cwd=cwd, stdin=subprocess.DEVNULL)
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
    import shutil

    console = Console(width=max(shutil.get_terminal_size((120, 24)).columns, 100))
    click.echo("starting the emulators (loopback) …", err=True)
    with Emulator(["deepseek", "openrouter", "anthropic", "gemini", "mistral"]) as emu:
        work = Path(tempfile.mkdtemp(prefix="hermes-demo-work-"))
        (work / "notes.txt").write_text("Hermes keeps reasoning across turns.\n")

        ids: dict[str, str] = {}
        script: list[tuple[str, str, Callable[[], list[str]]]] = [
            ("1. DeepSeek turn with a tool call", "deepseek", lambda: [
                "chat", "-q", "What is in this directory?", "-p", "deepseek", "-m", "deepseek-v4",
                "-u", emu.url("deepseek"), "--json"]),
            ("2. --resume in a new process", "deepseek", lambda: [
                "chat", "--resume", ids["main"], "-q", "Which file matters most?", "--json"]),
            ("3. switch provider to OpenRouter", "openrouter", lambda: [
                "chat", "--resume", ids["main"], "-q", "Summarise it.", "-p", "openrouter",
                "-m", "anthropic/claude-sonnet-4.5", "-u", emu.url("openrouter"), "--json"]),
            ("4. branch, continued on Anthropic", "anthropic", lambda: [
                "chat", "--resume", ids["branch"], "-q", "Look again, carefully.", "-p", "anthropic",
                "-m", "claude-opus-5", "-u", emu.url("anthropic"), "--json"]),
            ("5. same branch on Gemini", "gemini", lambda: [
                "chat", "--resume", ids["branch"], "-q", "And once more.", "-p", "gemini",
                "-m", "gemini-3-pro-preview", "-u", emu.url("gemini"), "--json"]),
            ("6. first session on Mistral (strict)", "mistral", lambda: [
                "chat", "--resume", ids["main"], "-q", "Final answer?", "-p", "mistral",
                "-m", "mistral-medium-latest", "-u", emu.url("mistral"), "--json"]),
        ]
        rows: list[tuple[str, str, list[dict[str, Any]]]] = []
        for label, name, args in script:
            # one line per stage on stderr as it runs (stdout keeps only the table): each stage
            # is a fresh `hermes` process, a second or two each
            click.echo(f"[{label.split('.')[0]}/{len(script)}] {label.split('. ', 1)[1]} …", err=True, nl=False)
            if label.startswith("4."):
                ids["branch"] = _run(["sessions", "branch", ids["main"], "--json"], env, work)["id"]
            start = len(emu.requests(name))
            out = _run(args(), env, work)
            ids.setdefault("main", out["session_id"])
            rows.append((label, name, emu.requests(name)[start:]))
            n = len(rows[-1][2])
            click.echo(f" {n} request{'s' if n != 1 else ''}, {out.get('steps', '?')} step(s)", err=True)

        table = Table(title="What each request carried back (read from the emulators' request logs)")
        for col in ("step", "route", "request", "reasoning sent back on assistant messages"):
            table.add_column(col, overflow="fold")
        for label, name, reqs in rows:
            for n, r in enumerate(reqs, 1):
                table.add_row(label if n == 1 else "", name, str(n), sent_reasoning(r["body"]))
        console.print(table)
    console.print("RC = reasoning_content, R = reasoning, RD = reasoning_details (signed entries, verbatim); "
                  "DeepSeek must get RC back on tool turns, Mistral rejects any reasoning key, Anthropic and "
                  "Gemini take back only their own signed blocks / signatures (foreign calls get Gemini's "
                  "validator skip).")
    console.print(f"Every request was accepted. Sessions are in {home}:")
    console.print(f"  HERMES_HOME={home} hermes sessions show {ids['main']}")
    console.print(f"  HERMES_HOME={home} hermes logs")
