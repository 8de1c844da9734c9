"""Hermetic test setup: a temp HERMES_HOME per test, no provider keys from the environment,
no network but loopback, and one shared emulator server per session."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_KEY_VARS = [k for k in os.environ if k.endswith(("_API_KEY", "_TOKEN")) or k.startswith(("AWS_", "HERMES_"))]
_real_connect = socket.socket.connect


def _loopback_host(host: object) -> bool:
    return isinstance(host, str) and (host.startswith("127.") or host in ("::1", "localhost"))


def _loopback_only(self: socket.socket, address: object) -> object:
    host = address[0] if isinstance(address, tuple) else address
    if self.family in (socket.AF_INET, socket.AF_INET6) and isinstance(host, str) and not _loopback_host(host):
        raise OSError(f"test tried to reach {host!r}: tests touch no network but loopback")
    return _real_connect(self, address)  # type: ignore[arg-type]


socket.socket.connect = _loopback_only  # type: ignore[method-assign]

try:  # uvloop (the servers' event loop) connects in C, past socket.connect: guard it too
    import uvloop
except ImportError:  # pragma: no cover - a dependency
    pass
else:
    _real_create_connection = uvloop.Loop.create_connection

    async def _loopback_create_connection(self: Any, factory: Any, host: Any = None, port: Any = None,
                                          *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _loopback_host(host):
            raise OSError(f"test tried to reach {host!r}: tests touch no network but loopback")
        return await _real_create_connection(self, factory, host, port, *args, **kwargs)

    uvloop.Loop.create_connection = _loopback_create_connection  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in _KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    home = tmp_path / "hermes-home"
    monkeypatch.setenv("HERMES_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def emulator() -> Iterator[object]:
    from hermes.emulate import Emulator

    with Emulator() as emu:
        yield emu


@pytest.fixture(autouse=True)
def _emulator_controls_reset(request: pytest.FixtureRequest) -> Iterator[None]:
    """The emulator is shared by the whole run; the controls a test sets (faults, drift,
    delays) end with the test. Without this a test arming ``fault="500", times=5`` for a CLI
    that retries three times left two 500s for whichever test used that personality next."""
    emu = request.getfixturevalue("emulator") if "emulator" in request.fixturenames else None
    yield
    if emu is not None:
        emu.state.reset_controls()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fake AWS credentials and an empty AWS config, so botocore signs requests to the Bedrock
    emulator and never reads the machine's own profile."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLETEST01")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret-key-not-real-0123456789")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Any]:
    """One throw-away PostgreSQL server for the whole run (initdb in a temp dir, loopback port),
    stopped and deleted at the end. Missing binaries fail loudly: scripts/check installs them."""
    from hermes.store.pgcluster import Cluster, ClusterUnavailable

    try:
        cluster = Cluster().start()
    except ClusterUnavailable as e:
        pytest.fail(f"PostgreSQL tests need a server: {e}")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_cluster: Any) -> str:
    """A fresh, empty database on the shared test server; its URL."""
    import secrets

    return str(pg_cluster.create_database(f"t_{secrets.token_hex(6)}"))


def pytest_report_header(config: pytest.Config) -> str:
    """The fuzz run's seed (``tests/fuzzing.py``), so any failing run can be replayed."""
    from fuzzing import SEED, SEED_VAR

    return f"fuzz seed: {SEED} (replay with {SEED_VAR}={SEED})"
