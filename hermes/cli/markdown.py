"""A stored session as Markdown, for reading or pasting: ``hermes sessions export --format md``.

What was said, thought and done, in order: user and assistant text, reasoning in a collapsed
``<details>`` block, each tool call with its arguments and its result in a code fence longer
than any run of backticks inside it. Opaque reasoning payloads (signatures, encrypted content)
are what replay needs, not what a reader does: they are counted, never copied. JSONL stays the
form ``hermes replay`` reads back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..core.messages import Compaction, Message, Reasoning, Text, ToolCall, ToolResult
from ..store.records import SessionInfo

__all__ = ["fenced", "session_markdown"]

_TICKS = re.compile(r"`{3,}")


def fenced(text: str, lang: str = "") -> str:
    """``text`` in a code fence no backtick run inside it can close."""
    longest = max((len(m.group(0)) for m in _TICKS.finditer(text)), default=2)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text.rstrip(chr(10))}\n{fence}"


def session_markdown(info: SessionInfo, messages: Iterable[Message]) -> str:
    out = [f"# {info.title or 'Session ' + info.id}", "",
           f"Session `{info.id}` · {info.provider} / {info.model}", ""]
    for m in messages:
        out.append(f"## {m.role}")
        out.append("")
        opaque = 0
        for p in m.parts:
            if isinstance(p, Text) and p.text.strip():
                out += [p.text.rstrip(), ""]
            elif isinstance(p, Reasoning):
                opaque += p.blob is not None
                if p.text.strip():
                    out += ["<details><summary>reasoning</summary>", "", p.text.rstrip(), "", "</details>", ""]
            elif isinstance(p, ToolCall):
                out += [f"**→ {p.name}**", "", fenced(p.arguments or "{}", "json"), ""]
            elif isinstance(p, ToolResult):
                status = " (error)" if p.is_error else ""
                out += [f"**← {p.name or p.call_id}{status}**", "", fenced(p.content), ""]
            elif isinstance(p, Compaction):
                out += [f"*checkpoint: {p.replaced} earlier messages summarised*", "", p.summary.rstrip(), ""]
        if opaque:
            out += [f"*{opaque} opaque reasoning payload(s) kept for replay, not shown*", ""]
    return "\n".join(out).rstrip() + "\n"
