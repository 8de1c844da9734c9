"""Helpers for tests that run Hermes servers as real processes: wait for the ``listening on``
line, wait for a condition, stop a group of processes, a fleet of them on one database."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["PgFleet", "children", "listening", "stop_all", "wait_for"]


def listening(proc: subprocess.Popen[bytes], err: Path, what: str, timeout: float = 20) -> str:
    """The URL ``proc`` announces on stderr (the file ``err``) once it listens; it fails with
    the process's own output if it exits first or stays silent past ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = err.read_text() if err.exists() else ""
        if "listening on " in text:
            return text.split("listening on ", 1)[1].split()[0]
        if proc.poll() is not None:
            raise AssertionError(f"{what} exited: {text}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"{what} did not start")


def children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (a ``--workers`` supervisor's workers)."""
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True, check=False)
    return [int(p) for p in out.stdout.split()]


def wait_for(predicate: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def stop_all(procs: Iterable[subprocess.Popen[bytes]], timeout: float = 15) -> None:
    """SIGTERM every live process, then wait for each (killing one that does not stop)."""
    procs = list(procs)
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()


@dataclass
class PgFleet:
    """Server processes sharing one PostgreSQL database (``url``) and one emulator."""

    home: Path
    url: str
    emu: Any
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def sql(self, statement: str, *args: Any) -> list[tuple[Any, ...]]:
        """Run ``statement`` on a connection of its own, committed; its rows."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as c:
            cur = c.execute(statement, args)
            return cur.fetchall() if cur.description else []
