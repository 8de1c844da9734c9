"""Real npm clients for the tests: installed from the npm registry by the test run itself, once.

``npm_client("@openai/codex", "0.171.0", "codex")`` installs the package, unmodified, into
``$HERMES_TEST_CLIENTS`` (default ``~/.cache/hermes-test-clients``) under ``<name>@<version>`` and
returns the path of its executable. The install is the one step of the suite that reaches past
loopback (the registry); everything the client then does goes to loopback servers only.

Without ``npm`` on the PATH, or when the install fails (no network), the test is skipped with
the reason — unless ``HERMES_REAL_CLIENTS_REQUIRED=1`` (CI sets it where npm exists), which makes either
an error. Concurrent workers take a file lock, so a package is installed once.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["npm_client"]


def _cache() -> Path:
    return Path(os.environ.get("HERMES_TEST_CLIENTS") or Path.home() / ".cache" / "hermes-test-clients")


def _unavailable(why: str) -> None:
    if os.environ.get("HERMES_REAL_CLIENTS_REQUIRED") == "1":
        pytest.fail(f"{why} (HERMES_REAL_CLIENTS_REQUIRED=1)")
    pytest.skip(why)


def npm_client(package: str, version: str, binary: str, *, timeout_s: float = 900.0) -> Path:
    """The executable ``binary`` of ``package@version``, installed on first use (module docstring)."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        _unavailable("npm and node are needed to install the real client")
    prefix = _cache() / f"{package.replace('/', '+')}@{version}"
    exe = prefix / "node_modules" / ".bin" / binary
    if exe.exists():
        return exe
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f".{prefix.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if exe.exists():
            return exe
        try:
            done = subprocess.run([str(npm), "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                                   "--loglevel=error", f"{package}@{version}"],
                                  capture_output=True, text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            _unavailable(f"npm install {package}@{version} took longer than {timeout_s:.0f} s")
        if done.returncode != 0 or not exe.exists():
            _unavailable(f"npm install {package}@{version} failed: {(done.stderr or done.stdout)[-400:]}")
    return exe
