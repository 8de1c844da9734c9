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
    from _pgcluster import Cluster, ClusterUnavailable

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


@pytest.fixture(scope="module")
def proxy(emulator: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One proxy in front of the emulators for a test module, with a HERMES_HOME (seal key,
    logs) of its own."""
    from _proxy import running_proxy

    mp = pytest.MonkeyPatch()
    mp.setenv("HERMES_HOME", str(tmp_path_factory.mktemp("proxy-home")))
    try:
        with running_proxy(emulator) as px:
            yield px
    finally:
        mp.undo()


def pytest_report_header(config: pytest.Config) -> str:
    """The fuzz run's seed (``tests/fuzzing.py``), so any failing run can be replayed."""
    from fuzzing import SEED, SEED_VAR

    return f"fuzz seed: {SEED} (replay with {SEED_VAR}={SEED})"


INTEGRATION = frozenset({
    "security/test_sec_base_url.py",
    "security/test_sec_browser.py",
    "security/test_sec_db_passwords.py",
    "security/test_sec_disks.py",
    "security/test_sec_proxy_bounds.py",
    "security/test_sec_proxy_expect.py",
    "security/test_sec_proxy_small.py",
    "security/test_sec_proxy_tenants.py",
    "security/test_sec_retries.py",
    "security/test_sec_slow_clients.py",
    "security/test_sec_small_holes.py",
    "security/test_sec_tool_schemas.py",
    "security/test_sec_tools_bounded.py",
    "security/test_sec_tools_confined.py",
    "security/test_sec_trickle_after_turn.py",
    "test_claude_code.py",
    "test_cli_bad_input.py",
    "test_cli_core.py",
    "test_cli_everyday.py",
    "test_cli_imports.py",
    "test_cli_models.py",
    "test_cli_polish.py",
    "test_cli_scenarios.py",
    "test_cli_sessions.py",
    "test_codex_cli.py",
    "test_crash_loop.py",
    "test_demo.py",
    "test_drafts.py",
    "test_edits.py",
    "test_emulate_switch.py",
    "test_emulator_access.py",
    "test_model_notice.py",
    "test_emulator_openai.py",
    "test_fuzz.py",
    "test_gateway.py",
    "test_gateway_facade_steps.py",
    "test_gateway_wire.py",
    "test_hot_sessions.py",
    "test_kept_builds.py",
    "test_kept_scenarios.py",
    "test_leakage_matrix.py",
    "test_lease.py",
    "test_mcp.py",
    "test_messages_fast.py",
    "test_netns.py",
    "test_proxy.py",
    "test_proxy_anthropic_door.py",
    "test_proxy_anthropic_sdk.py",
    "test_proxy_clients.py",
    "test_proxy_memory.py",
    "test_proxy_native_doors.py",
    "test_proxy_responses_door.py",
    "test_proxy_responses_props.py",
    "test_proxy_rewrite.py",
    "test_proxy_scale.py",
    "test_proxy_vendor_anthropic.py",
    "test_rejections.py",
    "test_rejections_attempt.py",
    "test_repl_interrupt.py",
    "test_repl_keys.py",
    "test_replay_properties.py",
    "test_responses.py",
    "test_rough_edges.py",
    "test_runtime.py",
    "test_scale.py",
    "test_secrets_matrix.py",
    "test_store.py",
    "test_store_migrate.py",
    "test_stream_cuts.py",
    "test_stream_fold.py",
    "test_toolargs.py",
    "test_ui_browser.py",
    "test_url_entry_points.py",
    "test_value_lessons.py",
    "test_vendor_anthropic.py",
    "test_workers_cpus.py",
})
"""Test modules that start processes, servers, real clients, PostgreSQL or a browser, or run long
properties: each takes seconds. Everything else is the unit tier, ``pytest -m "not integration"``,
which runs in under a minute on two cores; a new module is in it until it is listed here."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        if item.path.resolve().relative_to(here).as_posix() in INTEGRATION:
            item.add_marker(pytest.mark.integration)
