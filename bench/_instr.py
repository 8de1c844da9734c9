"""Instruction counts under ``valgrind --tool=callgrind``: a figure that does not move when the
shared machine is loaded (wall time on 2 cores shared by several people does).

Two ways to count:

* ``count_process(argv)`` — every instruction of one whole process (``hermes chat -q`` against
  ``python -c pass`` plus the raw work it stands for);
* ``count_region(argv)`` — only what runs inside ``region(fn)`` in that process: callgrind
  collects from the moment CPython enters ``functools.reduce`` (the C function that calls
  ``fn``) until it returns, so imports and set-up are left out. ``perf stat -e instructions``
  would do the same with less overhead but is not supported on this virtual machine.

Both return ``None`` when valgrind is missing; callers then print no instruction row.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

__all__ = ["available", "count_process", "count_region", "python", "region"]

_TOTAL = re.compile(rb"^(?:summary|totals):\s*(\d+)", re.M)


def available() -> bool:
    return shutil.which("valgrind") is not None


def python() -> str:
    """The real interpreter binary (pyenv's ``python`` is a shell script valgrind cannot follow)."""
    return os.path.realpath(sys.executable)


def region(fn: Callable[[], object]) -> None:
    """Run ``fn`` once inside the counted region (see ``count_region``)."""
    functools.reduce(lambda _a, _b: fn(), (0, 0))


def _callgrind(argv: Sequence[str], extra: Sequence[str], env: Mapping[str, str] | None) -> int | None:
    if not available():
        return None
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "cg.out"
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *extra, *argv]
        proc = subprocess.run(cmd, capture_output=True, env=dict(env) if env is not None else None, timeout=3600)
        if proc.returncode != 0 or not out.exists():
            sys.stderr.write(proc.stderr.decode(errors="replace")[-2000:])
            raise SystemExit(f"callgrind run failed: {' '.join(argv)}")
        m = _TOTAL.search(out.read_bytes())
        return int(m.group(1)) if m else None


def count_process(argv: Sequence[str], env: Mapping[str, str] | None = None) -> int | None:
    """Instructions executed by the whole process ``argv`` (run to completion)."""
    return _callgrind(argv, (), env)


def count_region(argv: Sequence[str], env: Mapping[str, str] | None = None) -> int | None:
    """Instructions executed inside ``region(...)`` calls of the process ``argv``."""
    return _callgrind(argv, ("--collect-atstart=no", "--toggle-collect=functools_reduce"), env)
