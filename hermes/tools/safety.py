"""What every tool must respect, as functions any tool (built-in, plugin, MCP) can reuse.

Tool arguments come from the model, and the model's input can come from anyone (a web page
it read, a file in the repo, a hostile provider), so a tool call is untrusted input:

* **Confinement** (``confine``): a path resolves — ``~``, ``..`` and every symlink followed —
  inside the workspace root or an explicitly added read root (``--allow-read PATH``), or the
  tool fails with an error the model reads. ``~/.ssh`` is not reachable by default.
* **Bounded I/O** (``read_regular``): only regular files are opened (a FIFO would block
  forever, ``/dev/zero`` never ends), opened non-blocking and without following a last-moment
  symlink, and read up to a byte limit *before* anything larger is allocated.
* **Bounded work** (``Budget``, ``compile_pattern``): searches stop at a file count, a byte
  count and a deadline; patterns are literal unless the model asks for a regular expression,
  which then runs under the ``regex`` module's timeout (``(a+)+$`` cannot run for minutes).
* **Bounded commands** (``run_bounded``): a shell command runs in its own process group, is
  killed with all its children at its timeout or when the caller is interrupted (Ctrl-C,
  SIGTERM), and its output is capped while it is read.
* **Redaction** (``finish_output``): every known secret value (keys Hermes looked up, and the
  values of key-named environment variables) is replaced before a result is stored in
  ``state.db``, sent to a provider or streamed to a client; the result says so.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["MAX_OUTPUT", "MAX_READ", "Budget", "OutsideWorkspace", "compile_pattern", "confine",
           "finish_output", "read_regular", "redact_secrets", "run_bounded", "secret_values"]

MAX_OUTPUT = 256 * 1024
"""Characters of tool output sent to the model; the rest is cut with a note saying how much."""
MAX_READ = MAX_OUTPUT - 4096
"""Bytes ``read_file`` reads from one file; a larger file is cut with a note (which then fits
in the output limit, so the model learns the file's real size)."""
_SECRET_ENV_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_SECRET_ACCESS_KEY", "_PASSWORD")


class OutsideWorkspace(PermissionError):
    """A path that resolves outside every root a tool may touch."""


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def confine(raw: Any, root: Path, extra: Iterable[Path] = (), *, what: str = "path") -> Path:
    """The real path of ``raw`` (relative to ``root``), if it lies inside ``root`` or one of
    ``extra``; ``OutsideWorkspace`` otherwise. The message names neither the real target of a
    symlink nor anything outside the roots."""
    if not isinstance(raw, str) or not raw or "\0" in raw:
        raise ValueError(f"'{what}' must be a non-empty string")
    base = Path(os.path.realpath(root))
    p = Path(raw).expanduser()
    real = Path(os.path.realpath(p if p.is_absolute() else base / p))
    if _within(real, base) or any(_within(real, Path(os.path.realpath(r))) for r in extra):
        return real
    raise OutsideWorkspace(f"{raw!r} is outside the workspace {str(base)!r}: tools may only use paths "
                           "inside it (the user can widen this with --allow-read PATH)")


def read_regular(path: Path, limit: int = MAX_READ) -> tuple[bytes, int]:
    """(at most ``limit`` bytes of ``path``, its size); refuses anything but a regular file."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file (device, FIFO or socket)"
            raise IsADirectoryError(f"{path.name or path} is {kind}; only regular files are read")
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks), st.st_size
    finally:
        os.close(fd)


@dataclass
class Budget:
    """Limits of one search: files, bytes and wall time; ``spent`` says which one ran out."""

    files: int = 20_000
    bytes: int = 64 << 20
    seconds: float = 10.0
    per_file: int = 2 << 20
    started: float = field(default_factory=time.monotonic)
    spent: str = ""

    def remaining(self) -> float:
        return self.seconds - (time.monotonic() - self.started)

    def take(self, size: int) -> bool:
        """Account for one file of ``size`` bytes; False once any limit is reached."""
        if self.files <= 0:
            self.spent = "file"
        elif self.bytes <= 0:
            self.spent = "byte"
        elif self.remaining() <= 0:
            self.spent = "time"
        else:
            self.files -= 1
            self.bytes -= min(size, self.per_file)
            return True
        return False

    def note(self) -> str:
        return f"(search stopped at its {self.spent} limit; narrow 'path' to search the rest)" if self.spent else ""


def compile_pattern(pattern: Any, *, regex: bool) -> Any:
    """A compiled ``regex`` pattern: the literal text unless ``regex`` is true."""
    import regex as rx

    if not isinstance(pattern, str) or not pattern:
        raise ValueError("'pattern' must be a non-empty string")
    return rx.compile(pattern if regex else rx.escape(pattern))


def run_bounded(command: str, cwd: Path, *, timeout_s: float, limit: int = MAX_READ) -> str:
    """Run ``command`` in a shell in its own process group; kill the group at ``timeout_s``.

    Output (stdout and stderr together) is read while it is produced and capped at ``limit``
    bytes, so neither a chatty command nor a background child that keeps the pipe open can hold
    the caller: at the deadline the whole group is killed and the pipe closes."""
    import signal  # with subprocess: imported only by a turn that runs a command
    import subprocess

    proc = subprocess.Popen(command, shell=True, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    kept: list[bytes] = []
    total = [0]

    def drain() -> None:
        assert proc.stdout is not None
        while chunk := proc.stdout.read1(1 << 16):  # type: ignore[attr-defined]
            if total[0] < limit:
                kept.append(chunk[: limit - total[0]])
            total[0] += len(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:  # also on Ctrl-C (KeyboardInterrupt) or a SIGTERM turned into SystemExit
        # the shell may be gone while its children still hold the pipe: end the whole group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    reader.join(timeout=5)
    if proc.stdout is not None:
        proc.stdout.close()
    out = b"".join(kept).decode("utf-8", "replace")
    if total[0] > limit:
        out += f"\n[output cut: {total[0]:,} bytes, showing the first {limit:,}]"
    if timed_out:
        raise TimeoutError(f"command timed out after {timeout_s:g} s and was killed; output so far:\n{out}")
    return f"exit code {proc.returncode}\n{out}"


def secret_values() -> list[str]:
    """Every secret Hermes knows: keys it looked up or was given (``errors.register_secret``)
    and the values of key-named environment variables, longest first."""
    from ..core.errors import registered_secrets

    found = set(registered_secrets())
    for name, value in os.environ.items():
        if name.upper().endswith(_SECRET_ENV_SUFFIXES) and len(value) >= 8:
            found.add(value)
    return sorted(found, key=len, reverse=True)


def redact_secrets(text: str) -> tuple[str, int]:
    """``text`` with every known secret value replaced by ``[REDACTED]``, and how many were."""
    count = 0
    for secret in secret_values():
        if secret in text:
            count += text.count(secret)
            text = text.replace(secret, "[REDACTED]")
    return text, count


def finish_output(text: str) -> str:
    """What a tool result may carry: known secrets replaced (and said so), length capped."""
    text, n = redact_secrets(text)
    if len(text) > MAX_OUTPUT:
        text = text[:MAX_OUTPUT] + f"\n[output truncated: {len(text):,} characters, showing the first {MAX_OUTPUT:,}]"
    if n:
        text += f"\n[hermes: {n} secret value{'s' if n > 1 else ''} replaced by [REDACTED] in this output]"
    return text
