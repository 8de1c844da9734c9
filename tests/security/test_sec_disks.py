"""Item 9: a read-only ``HERMES_HOME`` and a full disk, on real file systems.

Each CLI run happens in a private mount namespace (``unshare -m``), where ``HERMES_HOME`` is
bind-mounted read-only, or is a 512 KiB tmpfs filled to the last block. Before the fix even
``sessions list`` failed on the read-only home, and the full disk said only "disk I/O error".
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _cli import CANARY
from _harness import answer, hostile

from hermes.core.messages import Message, Text
from hermes.store import Store

pytestmark = pytest.mark.skipif(shutil.which("unshare") is None or os.geteuid() != 0,
                                reason="needs unshare -m (root in a container) to mount file systems")


def _in_namespace(setup: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
           "HERMES_HOME": str(home), "DEEPSEEK_API_KEY": CANARY}
    cmd = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "hermes", *args))
    return subprocess.run(["unshare", "-m", "sh", "-ec", f"{setup}\nexec {cmd}"], env=env, capture_output=True,
                          text=True, timeout=120)


def _seed(home: Path) -> str:
    home.mkdir(parents=True, exist_ok=True)
    with Store(home / "state.db") as s:
        sid = s.create_session(provider="deepseek", model="deepseek-v4", base_url="", title="kept safe")
        s.append_turn(sid, [Message.user("hello"), Message("assistant", (Text("hi there"),))])
    return sid


def test_read_only_home_can_still_be_read(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sid = _seed(home)
    ro = f"mount --bind {shlex.quote(str(home))} {shlex.quote(str(home))}\n" \
         f"mount -o remount,bind,ro {shlex.quote(str(home))}"
    r = _in_namespace(ro, home, "sessions", "list")
    assert r.returncode == 0 and sid in r.stdout and "kept safe" in r.stdout, r.stderr
    r = _in_namespace(ro, home, "sessions", "show", sid)
    assert r.returncode == 0 and "hi there" in r.stdout, r.stderr
    with hostile(lambda body: answer("never stored")) as up:
        r = _in_namespace(ro, home, "chat", "--resume", sid, "-q", "more", "-u", up.url)
    assert r.returncode == 1 and "read-only" in r.stderr and "Traceback" not in r.stderr
    with Store(home / "state.db") as s:
        assert [m.text for m in s.load(sid)] == ["hello", "hi there"]


def test_full_disk_says_the_disk_is_full(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sid = _seed(home)
    q = shlex.quote(str(home))
    full = (f"cp -a {q} {q}.seed\nmount -t tmpfs -o size=512k tmpfs {q}\ncp -a {q}.seed/. {q}/\n"
            f"dd if=/dev/zero of={q}/filler bs=4k 2>/dev/null || true")
    with hostile(lambda body: answer("x" * 200_000)) as up:
        r = _in_namespace(full, home, "chat", "--resume", sid, "-q", "more", "-u", up.url, "--no-stream")
    assert r.returncode == 1, r.stdout
    assert "is full" in r.stderr and "Traceback" not in r.stderr, r.stderr
