"""The walk behind the ``search_files`` tool, and the account of what it did not cover.

A model that reads "no matches" concludes the text is not there. So the result says what was
searched, and every file or directory the search passed over or read only in part is named
(a few of each, with a count): binary files, files not in UTF-8 (searched with their
undecodable bytes replaced), files cut at the per-file limit, skipped directories, links and
special files, and the limit that stopped the walk.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .safety import Budget, read_regular

__all__ = ["MAX_MATCHES", "SKIPPED_DIRS", "Coverage", "search_tree"]

MAX_MATCHES = 200
SKIPPED_DIRS = ("node_modules", "__pycache__")
"""Besides hidden ones (``.git``, ``.venv`` …): directories of installed or generated files."""
_NAMED = 3
"""Names shown per kind of gap; the rest are counted."""


@dataclass
class Coverage:
    """What one search read, and what it passed over or read only in part."""

    files: int = 0
    bytes: int = 0
    binary: list[str] = field(default_factory=list)
    not_utf8: list[str] = field(default_factory=list)
    cut: list[tuple[str, int]] = field(default_factory=list)
    """(file, its size): only the first ``Budget.per_file`` bytes were searched."""
    dirs: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    """Symbolic links (they may lead out of the workspace), FIFOs, devices, sockets."""
    unreadable: list[str] = field(default_factory=list)

    def notes(self, per_file: int) -> list[str]:
        """One line per kind of gap, empty when the search read everything it walked."""
        out = []
        if self.binary:
            out.append(f"not searched: {_some(self.binary)} (binary)")
        if self.not_utf8:
            out.append(f"searched with undecodable bytes replaced: {_some(self.not_utf8)} (not UTF-8)")
        if self.cut:
            sized = [f"{name} ({_size(size)})" for name, size in self.cut]
            out.append(f"only the first {_size(per_file)} searched of {_some(sized)}")
        if self.dirs:
            out.append(f"not searched: {_some(self.dirs, 'directory')} (hidden or dependencies; "
                       "pass one as 'path' to search it)")
        if self.links:
            out.append(f"not followed: {_some(self.links, 'link or special file')}")
        if self.unreadable:
            out.append(f"could not read: {_some(self.unreadable)}")
        return out


def _some(names: list[str], noun: str = "file") -> str:
    """``2 files: a, b`` — the first few names, then a count of the rest."""
    many = {"file": "files", "directory": "directories", "link or special file": "links or special files"}
    head = f"{len(names)} {noun if len(names) == 1 else many[noun]}: {', '.join(names[:_NAMED])}"
    return head if len(names) <= _NAMED else f"{head} and {len(names) - _NAMED} more"


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} B"


def search_tree(root: Path, rx: Any, budget: Budget) -> str:
    """Matching lines (``file:line: text``) under ``root``, then what the search did not cover.

    ``rx`` is a compiled ``regex`` pattern, run under ``budget``'s remaining time."""
    hits: list[str] = []
    seen = Coverage()
    stopped = ""
    for dirpath, dirnames, filenames in os.walk(root):
        if budget.remaining() <= 0:  # a tree of many empty directories costs time too
            budget.spent = "time"
            stopped = budget.note()
            break
        here = Path(dirpath)
        kept = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIPPED_DIRS)
        seen.dirs += [str((here / d).relative_to(root)) + "/" for d in sorted(set(dirnames) - set(kept))]
        dirnames[:] = kept
        for name in sorted(filenames):
            f = here / name
            rel = str(f.relative_to(root))
            try:
                st = f.lstat()
                if not stat.S_ISREG(st.st_mode):
                    seen.links.append(rel)
                    continue
                if not budget.take(st.st_size):
                    stopped = budget.note()
                    break
                data, size = read_regular(f, budget.per_file)
            except OSError:
                seen.unreadable.append(rel)
                continue
            if b"\0" in data[:8192]:
                seen.binary.append(rel)
                continue
            if size > len(data):  # cut at a line end, not inside a UTF-8 character
                data = data[: data.rfind(b"\n") + 1]
                seen.cut.append((rel, size))
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = data.decode("utf-8", "replace")
                seen.not_utf8.append(rel)
            seen.files += 1
            seen.bytes += len(data)
            for n, line in enumerate(text.splitlines(), 1):
                try:
                    found = rx.search(line, timeout=max(0.001, budget.remaining()))
                except TimeoutError:
                    raise TimeoutError(f"the pattern took longer than {budget.seconds:g} s; search for a "
                                       "literal string (the default) or simplify the expression") from None
                if found:
                    hits.append(f"{rel}:{n}: {line.rstrip()[:200]}")
                    if len(hits) >= MAX_MATCHES:
                        stopped = f"(stopped at {MAX_MATCHES} matches)"
                        break
            if stopped:
                break
        if stopped:
            break
    gaps = seen.notes(budget.per_file)
    head = hits or [f"no matches in {seen.files} file{'' if seen.files == 1 else 's'} ({_size(seen.bytes)})"]
    if not gaps and not stopped:
        return "\n".join(head)
    return "\n".join([*head, *([stopped] if stopped else []), *(f"[{g}]" for g in gaps)])
