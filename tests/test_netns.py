"""Workers on separate "hosts": each in its own network namespace, over a real network.

The tests build a private network of their own on this machine — a bridge with a /24 that no
other interface uses, and one network namespace per worker joined to it by a veth pair — and
remove it at the end. Each worker (`hermes proxy`, then `hermes gateway`) runs inside its
namespace (its own interfaces, its own loopback: it cannot reach this machine's 127.0.0.1) and
reaches the PostgreSQL server and the upstream emulator only across that network; the clients
reach the workers across it too. Nothing leaves the machine: the conftest's loopback-only rule
is widened for these tests to their own /24 and nothing else.

What must hold, with each request on another "host" than the last:

* proxy: clients that drop reasoning get every turn's reasoning restored exactly; the memory
  holds one recording per turn;
* gateway: clients on shared sessions get every message stored exactly once, in order.

And PostgreSQL sees each worker connect from its own address. Needs root and ``ip`` (netns,
veth, bridge); skipped where the machine does not allow it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from _procs import PgFleet, listening, stop_all
from test_proxy_scale import (
    ROUTE,
    Client,
    _check_every_request_restored_exactly,
    _check_memory_holds_whole_recordings,
)

from hermes.emulate import Emulator
from hermes.store.pg import PgStore

pytestmark = pytest.mark.slow

WORKERS = 3


def _ip(*args: str, ns: str | None = None) -> None:
    cmd = ["ip", *(["netns", "exec", ns, "ip"] if ns else []), *args]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise OSError(f"{' '.join(cmd)}: {done.stderr.strip()}")


@dataclass
class Lan:
    """A bridge at ``prefix.1`` and one namespace per worker at ``prefix.(10 + i)``."""

    tag: str
    prefix: str
    namespaces: list[str] = field(default_factory=list)

    @property
    def bridge(self) -> str:
        return f"hpx{self.tag}br"

    @property
    def gateway(self) -> str:
        """This machine's address on the network: PostgreSQL and the emulator listen there."""
        return f"{self.prefix}.1"

    def host(self, i: int) -> str:
        return f"{self.prefix}.{10 + i}"

    def build(self, n: int) -> None:
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.prefix}.1/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for i in range(n):
            ns, outer, inner = f"hpx{self.tag}n{i}", f"hpx{self.tag}r{i}", f"hpx{self.tag}i{i}"
            _ip("netns", "add", ns)
            self.namespaces.append(ns)
            _ip("link", "add", outer, "type", "veth", "peer", "name", inner)
            _ip("link", "set", inner, "netns", ns)
            _ip("link", "set", outer, "master", self.bridge)
            _ip("link", "set", outer, "up")
            _ip("addr", "add", f"{self.host(i)}/24", "dev", inner, ns=ns)
            _ip("link", "set", inner, "up", ns=ns)
            _ip("link", "set", "lo", "up", ns=ns)

    def tear_down(self) -> None:
        for ns in self.namespaces:  # a namespace's end takes its veth pair with it
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)


def _free_prefix() -> str:
    """A 10.x.y /24 that no interface of this machine is on."""
    used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    for _ in range(50):
        prefix = f"10.{secrets.randbelow(200) + 40}.{secrets.randbelow(250) + 1}"
        if f" {prefix}." not in used:
            return prefix
    raise OSError("no free 10.x.y.0/24 found")


@pytest.fixture(scope="module")
def lan() -> Iterator[Lan]:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and iproute2")
    net = Lan(secrets.token_hex(2), _free_prefix())
    try:
        net.build(WORKERS)
    except OSError as e:
        net.tear_down()
        pytest.skip(f"this machine does not allow a test network: {e}")
    try:
        yield net
    finally:
        net.tear_down()


@pytest.fixture
def lan_only(lan: Lan, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loopback-only rule of conftest.py, widened to this test's own /24."""
    guarded = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and host.startswith(lan.prefix + "."):
            from conftest import _real_connect

            return _real_connect(self, address)
        return guarded(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)


@pytest.fixture(scope="module")
def db(lan: Lan) -> Iterator[Any]:
    """A PostgreSQL server listening on loopback (for the tests' own reads) and on the bridge."""
    from _pgcluster import Cluster

    with Cluster(network=f"{lan.gateway}/24") as pg:
        yield pg


def _start_all(lan: Lan, fleet: PgFleet, url: str, argv: list[str], env: dict[str, str], what: str,
               port: int) -> list[str]:
    """``python -m hermes ARGV --host <its address> --port PORT`` in each namespace, the store at
    ``url`` (the bridge address); their base URLs once all listen."""
    started = []
    for i, ns in enumerate(lan.namespaces):
        home = fleet.home / f"{what}-host{i}"
        home.mkdir()
        err = home / f"{what}.err"
        fleet.procs.append(subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, "-m", "hermes", *argv, "--host", lan.host(i),
             "--port", str(port)], env={**env, "HERMES_HOME": str(home), "HERMES_DATABASE_URL": url},
            stdout=subprocess.DEVNULL, stderr=err.open("wb")))
        started.append((fleet.procs[-1], err))
    bases = [listening(p, e, what, timeout=60).replace("/<route>", "") for p, e in started]
    assert bases == [f"http://{lan.host(i)}:{port}" for i in range(len(lan.namespaces))]
    return bases


def _check_each_worker_reached_the_database(lan: Lan, fleet: PgFleet) -> None:
    addrs = {str(a) for (a,) in fleet.sql("SELECT DISTINCT client_addr FROM pg_stat_activity"
                                          " WHERE datname = current_database() AND client_addr IS NOT NULL")}
    assert {lan.host(i) for i in range(len(lan.namespaces))} <= addrs, "each worker came over the network"


def test_proxy_workers_in_separate_network_namespaces_share_one_memory(
        lan: Lan, lan_only: None, db: Any, tmp_path: Path) -> None:
    with Emulator([ROUTE], host=lan.gateway) as emu:
        local = db.create_database("netns_proxy")
        fleet = PgFleet(tmp_path, local, emu)  # the test reads the database over loopback
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        try:
            roots = _start_all(lan, fleet, local.replace("127.0.0.1", lan.gateway),
                               ["proxy", "--upstream", f"{ROUTE}={emu.url(ROUTE)}"], env, "proxy", 8787)
            since = len(emu.requests(ROUTE))
            clients = [Client(f"lan client {i}", f"sk-lan-{i}", roots) for i in range(3)]
            for j in range(5):
                for i, c in enumerate(clients):
                    c.turn(f"{c.name} turn {j}: list the files", first_worker=i + j)
            assert _check_every_request_restored_exactly(emu, clients, since) == sum(c.sent for c in clients)
            for c in clients:
                _check_memory_holds_whole_recordings(fleet, [c], c.key)
            _check_each_worker_reached_the_database(lan, fleet)
        finally:
            stop_all(fleet.procs)


def test_gateway_workers_in_separate_network_namespaces_never_interleave(
        lan: Lan, lan_only: None, db: Any, tmp_path: Path) -> None:
    from test_gateway import TOKEN, _env, check_serialised
    from test_scale import MODEL
    from test_scale import ROUTE as GW_ROUTE

    with Emulator([GW_ROUTE], host=lan.gateway) as emu:
        local = db.create_database("netns_gateway")
        fleet = PgFleet(tmp_path, local, emu)
        try:
            bases = _start_all(lan, fleet, local.replace("127.0.0.1", lan.gateway),
                               ["gateway", "--lock-wait", "60", "--allow-base-url", emu.root],
                               _env(tmp_path), "gateway", 8642)
            clients = [httpx.Client(base_url=b, headers={"authorization": f"Bearer {TOKEN}"}, timeout=120)
                       for b in bases]
            sessions = []
            for k in range(2):
                r = clients[k].post("/v1/sessions", json={"provider": GW_ROUTE, "model": MODEL,
                                                          "base_url": emu.url(GW_ROUTE)})
                assert r.status_code == 201, r.text
                sessions.append(r.json()["id"])

            def client(i: int) -> None:
                for j in range(5):
                    r = clients[(i + j) % len(clients)].post(f"/v1/sessions/{sessions[i % 2]}/messages",
                                                             json={"content": f"c{i} t{j}"})
                    assert r.status_code == 200, r.text

            with ThreadPoolExecutor(4) as pool:
                list(pool.map(client, range(4)))
            for c in clients:
                c.close()
            with PgStore(local) as s:
                for k, sid in enumerate(sessions):
                    check_serialised(s.load(sid), [f"c{i} t{j}" for i in range(k, 4, 2) for j in range(5)])
            _check_each_worker_reached_the_database(lan, fleet)
        finally:
            stop_all(fleet.procs)
