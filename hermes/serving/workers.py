"""``hermes gateway --workers N`` (and ``hermes proxy --workers N``): N processes serving one
listening socket, supervised.

The parent binds the port once and starts N ``python -m hermes <command> --listen-fd FD``
children that inherit the socket; the kernel hands each new connection to one of them. No
session state lives in a worker (every turn reloads its history from the store and holds the
session's lease while it runs), so which worker gets a request does not matter — that is what
lets the same command run on several hosts behind a load balancer against one PostgreSQL.

The parent prints one ``listening on`` line once every worker is ready, forwards the workers'
stderr, restarts a worker that dies (a ``kill -9`` costs the turns it was running: their
uncommitted step is rolled back and their lease expires after ``--lock-ttl``), and on
SIGINT/SIGTERM asks every worker to drain and waits for them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import IO

from ..core.errors import ConfigError
from .cpus import cpu_for
from .listen import bind

__all__ = ["run_workers"]

_READY = "listening on "


def _forward(stream: IO[bytes], ready: threading.Event) -> None:
    """Copy a worker's stderr to ours; swallow its own "listening" line (the parent prints one)."""
    for raw in iter(stream.readline, b""):
        line = raw.decode(errors="replace")
        if not ready.is_set() and _READY in line:
            ready.set()
            continue
        sys.stderr.write(line)
        sys.stderr.flush()
    ready.set()  # a worker that died before it was ready must not hang the start-up


class _Worker:
    def __init__(self, argv: list[str], fd: int) -> None:
        self.ready = threading.Event()
        self.proc = subprocess.Popen(argv, pass_fds=(fd,), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        assert self.proc.stderr is not None
        threading.Thread(target=_forward, args=(self.proc.stderr, self.ready), daemon=True).start()


def run_workers(n: int, host: str, port: int, child_args: list[str], *, start_timeout_s: float = 60.0,
                command: str = "gateway", suffix: str = "", pin: bool = False) -> None:
    """Bind ``host:port``, run ``n`` ``hermes <command>`` workers on it until interrupted, restart
    the dead. ``suffix`` follows the URL in the ``listening on`` line (the proxy's ``/<route>``).
    ``pin``: worker i runs on CPU ``cpu_for(i)`` (pinned by the worker itself before it starts
    a thread), and a worker started in its place on the same one."""
    cpus = [cpu_for(i) for i in range(n)] if pin else []
    sock = bind(host, port)
    fd = sock.fileno()
    os.set_inheritable(fd, True)
    base = [sys.executable, "-m", "hermes", command, "--listen-fd", str(fd), "--host", host, *child_args]
    argvs = [[*base, "--pin-cpu", str(cpus[i])] if pin else base for i in range(n)]
    name = f"hermes {command}"
    stopping = threading.Event()

    def stop(*_: object) -> None:
        stopping.set()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    workers = [_Worker(argv, fd) for argv in argvs]
    try:
        deadline = time.monotonic() + start_timeout_s
        for w in workers:
            w.ready.wait(max(0.0, deadline - time.monotonic()))
            if w.proc.poll() is not None or not w.ready.is_set():
                raise ConfigError(f"a {command} worker did not start (exit {w.proc.poll()})",
                                  hint="its error is printed above")
        shown = f"[{host}]" if ":" in host else host
        pinned = f", on CPUs {','.join(map(str, cpus))}" if pin else ""
        print(f"{name} listening on http://{shown}:{sock.getsockname()[1]}{suffix} ({n} workers{pinned})",
              file=sys.stderr, flush=True)
        while not stopping.wait(0.2):
            for i, w in enumerate(workers):
                code = w.proc.poll()
                if code is not None and not stopping.is_set():
                    print(f"{name}: worker {w.proc.pid} exited ({code}); starting another",
                          file=sys.stderr, flush=True)
                    workers[i] = _Worker(argvs[i], fd)
    finally:
        for w in workers:
            if w.proc.poll() is None:
                w.proc.send_signal(signal.SIGTERM)
        for w in workers:
            w.proc.wait()
        sock.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print(f"{name} stopped: every worker finished its turns", file=sys.stderr, flush=True)
