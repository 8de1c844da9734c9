"""Text from a model or a provider, made safe to print on a terminal.

Model output, reasoning, tool names and provider error bodies are untrusted. A terminal obeys
escape sequences found in them: OSC 52 writes the user's clipboard, OSC 8 forges links, CSI
sequences move the cursor and rewrite what was printed before (a command that was never
run shown as run), and a lone ``\\r`` hides text behind other text. ``printable`` removes every
escape sequence and every control character except newline and tab. Because ESC itself is
always removed, a sequence split across two streamed deltas cannot form either.
"""

from __future__ import annotations

import re

__all__ = ["PREVIEW_LINES", "preview", "printable"]

_CONTROLS = re.compile(
    r"""
      \x1b\[[0-?]*[ -/]*[@-~]              # CSI ... final byte
    | \x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?   # OSC ... BEL or ST (or unterminated)
    | \x1b[PX^_][^\x1b]*(?:\x1b\\)?        # DCS, SOS, PM, APC ... ST
    | \x1b[\x20-\x7e]?                     # any other escape, or a stray ESC
    | \x9b[0-?]*[ -/]*[@-~]                # 8-bit CSI
    | \x9d[^\x07\x9c]*(?:\x07|\x9c)?       # 8-bit OSC
    | [\x00-\x08\x0b-\x1f\x7f-\x9f]        # every other C0 / C1 control (\t and \n stay)
    """,
    re.VERBOSE,
)


def printable(text: str) -> str:
    """``text`` without escape sequences or control characters (newline and tab kept)."""
    return _CONTROLS.sub("", text)


PREVIEW_LINES = 8
"""Lines of a tool's result the terminal shows under its name."""


def preview(text: str, *, lines: int = PREVIEW_LINES, width: int = 100) -> list[str]:
    """The first ``lines`` lines of ``text``, printable and each cut to ``width`` characters,
    then ``… N more lines`` for the rest: enough to see what a tool did, never a flood."""
    head: list[str] = []
    rest = 0
    for i, line in enumerate(text.splitlines()):
        if i < lines:
            clean = printable(line).expandtabs(4).rstrip()
            head.append(clean if len(clean) <= width else clean[:max(width - 1, 1)] + "…")
        else:
            rest += 1
    if rest:
        head.append(f"… {rest:,} more line{'s' if rest > 1 else ''}")
    return head
