"""``LazyRegex``: a regular expression compiled the first time it is used.

``re.compile`` runs the regex compiler in Python: ~5 M instructions for a pattern with a few
character classes. A module-level pattern is compiled by every process that imports the
module, used or not; ``hermes chat -q`` imported ~20 of them for code paths a turn rarely
takes (non-ASCII token pricing, HTML error pages, MCP config, refused requests). A
``LazyRegex`` stands where the compiled pattern stood and compiles on first use.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["LazyRegex"]


class LazyRegex:
    """The methods of ``re.Pattern`` that Hermes uses, compiling ``pattern`` on first call."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern, self.flags = pattern, flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def rx(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def search(self, text: str) -> re.Match[str] | None:
        return self.rx.search(text)

    def match(self, text: str) -> re.Match[str] | None:
        return self.rx.match(text)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        return self.rx.fullmatch(text)

    def findall(self, text: str) -> list[Any]:
        return self.rx.findall(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.rx.finditer(text)

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str, count: int = 0) -> str:
        return self.rx.sub(repl, text, count)
