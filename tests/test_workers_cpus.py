"""``--workers auto`` and ``--pin``: one serving process per CPU the command may run on, each
kept on a CPU of its own.

The CPUs a process may use are its affinity mask (``taskset``, a container's cpuset), not the
machine's count, so each test starts the gateway with a mask of its own: one CPU gives the
plain one-process gateway, two give a supervisor and two workers on one state.db, whose
turns land on either worker and are all stored, in order. With ``--pin`` every thread of
each worker — the turn threads included, started long after the worker pinned itself —
runs on that worker's CPU only, and a worker started in place of a killed one gets the
same CPU.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import httpx
import pytest
from _procs import children, listening, wait_for

from hermes.cli.workers_option import WORKERS
from hermes.serving.cpus import usable_cpus
from hermes.store import Store

KEY = "sk-test-openai-0001"
CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def masks(pid: int) -> set[frozenset[int]]:
    """The affinity masks of every thread of ``pid``."""
    return {frozenset(os.sched_getaffinity(int(t))) for t in os.listdir(f"/proc/{pid}/task")}


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


@contextmanager
def serving(home: Path, cpus: list[int], *args: str, workers: str = "auto", command: str = "gateway"
            ) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_") and not k.endswith("_API_KEY")}
    err = home / f"{command}.err"
    proc = subprocess.Popen([sys.executable, "-m", "hermes", command, "--port", "0", "--workers", workers, *args],
                            env={**env, "HERMES_HOME": str(home), "OPENAI_API_KEY": KEY},
                            stdout=subprocess.DEVNULL, stderr=err.open("wb"),
                            preexec_fn=lambda: os.sched_setaffinity(0, cpus))
    try:
        yield proc, listening(proc, err, command, timeout=60), err
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def test_auto_is_the_cpus_this_process_may_use_and_numbers_stay_bounded() -> None:
    assert WORKERS.convert("auto", None, None) == usable_cpus() == min(256, len(CPUS))
    assert WORKERS.convert(" AUTO ", None, None) == usable_cpus()
    assert WORKERS.convert("3", None, None) == 3
    for bad in ("0", "257", "two", ""):
        with pytest.raises(click.BadParameter, match=r"between 1 and 256|neither a number"):
            WORKERS.convert(bad, None, None)


@pytest.mark.skipif(not CPUS, reason="no affinity masks on this platform")
def test_auto_on_one_cpu_is_the_one_process_gateway(tmp_path: Path) -> None:
    with serving(tmp_path, CPUS[:1]) as (proc, base, err):
        assert "workers)" not in err.read_text()
        assert children(proc.pid) == []
        assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200


@pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs")
def test_auto_on_two_cpus_serves_one_state_db_from_two_workers(tmp_path: Path, emulator: Any) -> None:
    with serving(tmp_path, CPUS[:2], "--allow-base-url", emulator.root) as (proc, base, err):
        assert "(2 workers)" in err.read_text()
        assert len(children(proc.pid)) == 2
        body = {"provider": "openai-responses", "model": "gpt-5", "base_url": emulator.url("openai-responses")}
        sid = httpx.post(f"{base}/v1/sessions", json=body, timeout=30).json()["id"]

        def client(i: int) -> list[int]:
            codes = []
            for j in range(3):  # a connection each: the kernel hands each to either worker
                with httpx.Client(base_url=base, timeout=60) as c:
                    r = c.post(f"/v1/sessions/{sid}/messages", json={"content": f"c{i} t{j}", "wait_s": 60})
                codes.append(r.status_code)
            return codes

        with ThreadPoolExecutor(4) as pool:
            assert [c for codes in pool.map(client, range(4)) for c in codes] == [200] * 12
    assert proc.returncode == 0 and "every worker finished" in err.read_text()
    with Store(tmp_path / "state.db") as s:
        users = [m.text for m in s.load(sid) if m.role == "user"]
    assert sorted(users) == sorted(f"c{i} t{j}" for i in range(4) for j in range(3))
    for i in range(4):
        assert [u for u in users if u.startswith(f"c{i} ")] == [f"c{i} t{j}" for j in range(3)]


@pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs")
def test_pin_keeps_every_thread_of_each_worker_on_a_cpu_of_its_own(tmp_path: Path, emulator: Any) -> None:
    two = CPUS[:2]
    with serving(tmp_path, two, "--pin", "--allow-base-url", emulator.root, workers="2") as (proc, base, err):
        assert f"(2 workers, on CPUs {two[0]},{two[1]})" in err.read_text()
        assert masks(proc.pid) == {frozenset(two)}  # the supervisor is not pinned
        first = children(proc.pid)
        body = {"provider": "openai-responses", "model": "gpt-5", "base_url": emulator.url("openai-responses")}
        # turns start turn threads in whichever worker the kernel hands each new connection to
        # (often the same one): keep opening connections until both have run one, or 40 tried
        for j in range(40):
            with httpx.Client(base_url=base, timeout=60) as c:
                sid = c.post("/v1/sessions", json=body).json()["id"]
                assert c.post(f"/v1/sessions/{sid}/messages", json={"content": f"t{j}"}).status_code == 200
            if j >= 5 and all(threads(pid) > 1 for pid in first):
                break
        assert any(threads(pid) > 1 for pid in first)  # threads started after the pin took it
        pinned = {pid: masks(pid) for pid in first}
        assert sorted(pinned.values(), key=min) == [{frozenset({two[0]})}, {frozenset({two[1]})}]
        os.kill(first[0], signal.SIGKILL)
        wait_for(lambda: len(now := children(proc.pid)) == 2 and first[0] not in now, 60)
        (new,) = set(children(proc.pid)) - set(first)

        def placed() -> bool:  # it pins itself first thing, long before it listens
            try:
                return masks(new) == pinned[first[0]]
            except OSError:  # a thread that ended while its mask was read
                return False

        wait_for(placed, 60)


@pytest.mark.skipif(not CPUS, reason="no affinity masks on this platform")
def test_pin_without_workers_keeps_the_one_process_on_the_first_cpu(tmp_path: Path) -> None:
    with serving(tmp_path, CPUS, "--pin", workers="1") as (proc, base, _):
        assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200
        assert masks(proc.pid) == {frozenset({CPUS[0]})}


@pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs")
def test_the_proxy_pins_its_workers_the_same_way(tmp_path: Path) -> None:
    two = CPUS[:2]
    with serving(tmp_path, two, "--pin", "--upstream", "deepseek=http://127.0.0.1:9", workers="2",
                 command="proxy") as (proc, _, err):
        assert f"(2 workers, on CPUs {two[0]},{two[1]})" in err.read_text()
        assert sorted((masks(pid) for pid in children(proc.pid)), key=min) == [
            {frozenset({two[0]})}, {frozenset({two[1]})}]
