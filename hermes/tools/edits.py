"""File changes the model may make: ``write_file`` and ``edit_file``, and ``/undo`` of a turn's.

Rules (docs/security.md): a change lands only inside the workspace (never in a directory
``--allow-read`` added), only on a regular file (or a new one), only with the user's leave —
``--allow-writes``, or a yes in the REPL after seeing the diff. An edit names text that must
occur exactly once, so a model that misremembers a file is told so instead of changing the
wrong place. The new bytes go to a temporary file in the same directory, are flushed, and
replace the old file in one ``rename``: a reader or a crash sees the old file or the new one,
never half. Each change is journalled so the REPL's ``/undo`` can put the last turn's back.
"""

from __future__ import annotations

import difflib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MAX_WRITE", "Change", "apply_edit", "diff_text", "replace_atomically", "undo"]

MAX_WRITE = 1 << 20
"""Largest file a tool may write, in bytes."""


@dataclass(frozen=True, slots=True)
class Change:
    """One file a tool changed: its real path and its bytes before (``None``: it did not exist)."""

    path: Path
    before: bytes | None


def apply_edit(text: str, old: str, new: str, *, name: str) -> str:
    """``text`` with the one occurrence of ``old`` replaced by ``new``; an error the model can act
    on when ``old`` is empty, missing, or found more than once."""
    if not old:
        raise ValueError("'old' must be the exact text to replace (use write_file for a new file)")
    count = text.count(old)
    if count == 0:
        raise ValueError(f"'old' was not found in {name}: read the file again and copy the text exactly "
                         "(whitespace and line breaks included)")
    if count > 1:
        raise ValueError(f"'old' occurs {count} times in {name}: include more surrounding lines so it "
                         "names one place")
    return text.replace(old, new, 1)


def diff_text(name: str, before: str | None, after: str, *, limit: int = 200) -> str:
    """A unified diff of the change (a new file diffs against nothing), at most ``limit`` lines."""
    lines = list(difflib.unified_diff((before or "").splitlines(keepends=True), after.splitlines(keepends=True),
                                      "/dev/null" if before is None else f"a/{name}", f"b/{name}"))
    shown = "".join(line if line.endswith("\n") else line + "\n" for line in lines[:limit])
    if len(lines) > limit:
        shown += f"… {len(lines) - limit} more diff lines\n"
    return shown or "(no change)\n"


def replace_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a flushed temporary file and one rename; an existing
    file keeps its permission bits, a new one gets 0644."""
    if len(data) > MAX_WRITE:
        raise ValueError(f"refusing to write {len(data):,} bytes (the limit is {MAX_WRITE:,})")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        mode = 0o644
    else:
        if not stat.S_ISREG(st.st_mode):
            raise IsADirectoryError(f"{path.name} is not a regular file; only regular files are written")
        mode = stat.S_IMODE(st.st_mode)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".hermes-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def undo(changes: list[Change]) -> list[str]:
    """Put back every change, last first; one line per file saying what was done."""
    done = []
    for change in reversed(changes):
        if change.before is None:
            change.path.unlink(missing_ok=True)
            done.append(f"removed {change.path.name} (it was new)")
        else:
            replace_atomically(change.path, change.before)
            done.append(f"restored {change.path.name}")
    changes.clear()
    return done

