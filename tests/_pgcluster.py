"""A throw-away PostgreSQL cluster in a temp dir, for tests and benchmarks (never for users).

``with Cluster() as pg: url = pg.create_database("t1")`` runs ``initdb`` and ``pg_ctl start``
on a free loopback port (its unix socket in the same temp dir), and on exit stops the server
with ``-m immediate`` and deletes the directory. PostgreSQL refuses to run as root, so under
root the server runs as the ``postgres`` system user when there is one, else as a system user
``hermes-pg`` created on first use (``useradd --system``); commands switch user with
``runuser``. Binaries are found on ``PATH`` or under ``/usr/lib/postgresql/<version>/bin``
(Debian's layout; ``scripts/check`` installs the ``postgresql`` package when neither has them).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

__all__ = ["Cluster", "ClusterUnavailable", "find_binary"]

_RUN_AS = ("postgres", "hermes-pg")


class ClusterUnavailable(RuntimeError):
    """No PostgreSQL server binaries on this machine (or they cannot be started)."""


def find_binary(name: str) -> Path | None:
    """``name`` (initdb, pg_ctl) on PATH, else the newest ``/usr/lib/postgresql/*/bin/name``."""
    found = shutil.which(name)
    if found:
        return Path(found)
    versions = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"),
                      key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
    return versions[-1] if versions else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server_user() -> str | None:
    """The unprivileged user to run the server as (``None``: we are not root, run as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in _RUN_AS:
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", _RUN_AS[1]],
                   check=True, capture_output=True)
    return _RUN_AS[1]


class Cluster:
    """One ``initdb``'d data directory and a running ``postgres`` on 127.0.0.1."""

    def __init__(self, *, durable: bool = False, network: str | None = None) -> None:
        initdb, pg_ctl = find_binary("initdb"), find_binary("pg_ctl")
        if initdb is None or pg_ctl is None:
            raise ClusterUnavailable("PostgreSQL server binaries (initdb, pg_ctl) not found; "
                                     "install the Debian 'postgresql' package (scripts/check does)")
        self.initdb, self.pg_ctl = initdb, pg_ctl
        self.durable = durable
        """False: ``fsync=off`` (tests). True: fsync on, ``synchronous_commit=off`` — the same
        promise as SQLite's WAL + ``synchronous=NORMAL`` (a killed process loses nothing
        committed; an OS crash may lose the last moments), for fair benchmarks."""
        self.network = network
        """``ADDRESS/PREFIX`` (e.g. ``10.231.7.1/24``): also listen on ADDRESS and let that
        network's hosts in — for tests whose workers run in their own network namespaces."""
        self.user = _server_user()
        # under root the server user must reach the directory: $TMPDIR may be root's own
        self.dir = Path(tempfile.mkdtemp(prefix="hermes-pg-", dir="/tmp" if self.user else None))
        self.data = self.dir / "data"
        self.port = 0
        self.started = False

    def _run(self, *argv: str | Path) -> None:
        cmd = [str(a) for a in argv]
        if self.user is not None:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=self.dir)
        if done.returncode != 0:
            raise ClusterUnavailable(f"{' '.join(cmd)} failed: {done.stderr.strip() or done.stdout.strip()}")

    def start(self) -> Cluster:
        if self.user is not None:
            shutil.chown(self.dir, self.user)
        self._run(self.initdb, "-D", self.data, "-A", "trust", "-U", "hermes", "-E", "UTF8", "--locale=C",
                  "--no-sync")
        sync = "-c synchronous_commit=off" if self.durable else "-c fsync=off -c synchronous_commit=off"
        listen = "127.0.0.1"
        if self.network:
            import ipaddress

            iface = ipaddress.ip_interface(self.network)
            listen += f",{iface.ip}"
            with (self.data / "pg_hba.conf").open("a") as hba:
                hba.write(f"host all all {iface.network} trust\n")
        for _attempt in range(3):  # a free port can be taken between the probe and the bind
            self.port = _free_port()
            opts = (f"-c listen_addresses={listen} -p {self.port} -k {self.dir} {sync}"
                    " -c max_connections=200 -c full_page_writes=off")
            try:
                self._run(self.pg_ctl, "-D", self.data, "-o", opts, "-l", self.dir / "server.log", "-w", "start")
                self.started = True
                return self
            except ClusterUnavailable:
                if _attempt == 2:
                    raise
        return self

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://hermes@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, name: str) -> str:
        """A fresh empty database; its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self.started:
            with contextlib.suppress(ClusterUnavailable):
                self._run(self.pg_ctl, "-D", self.data, "-m", "immediate", "stop")
            self.started = False
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
