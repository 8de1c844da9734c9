"""``--emulate`` / ``HERMES_EMULATE``: one switch sends every route — flags, the session's route,
a REPL ``/model`` — to a running ``hermes emulate``, with the emulator's key, storing nothing of
the emulator in the session; and the examples ``hermes emulate --help`` prints work as shown."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from hermes.core.errors import ConfigError
from hermes.emulate import PERSONALITIES, load_all
from hermes.routing.emulated import emulated_url, emulator_root, personality
from hermes.routing.routes import ROUTES
from hermes.store import Store

REAL_KEY = "sk-real-deepseek-key-0123456789"


def _run(home: Path, *args: str, input: str = "", env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "HERMES_EMULATE"}
    full.update(HERMES_HOME=str(home), **(env or {}))
    return subprocess.run([sys.executable, "-m", "hermes", *args], input=input, capture_output=True, text=True,
                          env=full, timeout=120)


def test_every_route_has_the_emulator_url_the_emulator_serves(emulator: Any) -> None:
    load_all()
    for route in ROUTES:
        name = personality(route)
        assert name in PERSONALITIES, route.key
        assert emulated_url(emulator.root, route) == emulator.url(name), route.key
    assert set(PERSONALITIES) == {personality(r) for r in ROUTES}


def test_the_switch_reads_a_root_url_or_a_yes() -> None:
    assert emulator_root("1") == "http://127.0.0.1:8765" and emulator_root("off") is None
    assert emulator_root("http://127.0.0.1:9999/") == "http://127.0.0.1:9999"
    with pytest.raises(ConfigError, match="root URL"):
        emulator_root("127.0.0.1:8765")


def test_chat_emulate_needs_no_key_follows_model_switches_and_stores_no_emulator_url(
        emulator: Any, hermes_home: Path) -> None:
    env = {"HERMES_EMULATE": emulator.root, "DEEPSEEK_API_KEY": REAL_KEY}
    before = {n: len(emulator.requests(n)) for n in ("deepseek", "anthropic")}
    r = _run(hermes_home, "chat", "--json", "-q", "hi", "-p", "deepseek", "-m", "deepseek-v4", env=env)
    assert r.returncode == 0, r.stderr
    out = orjson.loads(r.stdout)
    assert out["answer"].startswith("Done (deepseek-v4)")
    assert len(emulator.requests("deepseek")) - before["deepseek"] == 2
    info = Store(hermes_home / "state.db").get_session(out["session_id"])
    assert (info.provider, info.base_url) == ("deepseek", "")  # the real route, not the emulator's URL

    # the REPL: continue the session, switch provider with no URL: still the emulator
    r = _run(hermes_home, "chat", "--emulate", "-c", input="/model anthropic:claude-opus-4-6\nand now?\n/quit\n",
             env={"HERMES_EMULATE": emulator.root})
    assert r.returncode == 0, r.stderr
    assert "now anthropic · claude-opus-4-6" in r.stderr and "Done (claude-opus-4-6)" in r.stdout
    assert len(emulator.requests("anthropic")) - before["anthropic"] == 2
    assert all(REAL_KEY not in orjson.dumps(e).decode() for e in emulator.requests())
    assert Store(hermes_home / "state.db").get_session(out["session_id"]).base_url == ""


def test_no_emulator_running_is_a_clear_error_and_stores_nothing(hermes_home: Path) -> None:
    r = _run(hermes_home, "chat", "--emulate", "-q", "hi", "-p", "deepseek", "-m", "deepseek-v4",
             env={"HERMES_EMULATE": "http://127.0.0.1:9"})
    assert r.returncode == 1 and "no emulator answers at http://127.0.0.1:9" in r.stderr
    assert "hermes emulate &" in r.stderr and "Traceback" not in r.stderr
    assert Store(hermes_home / "state.db").list_sessions() == []


def test_the_examples_in_emulate_help_work(emulator: Any, hermes_home: Path) -> None:
    shown = _run(hermes_home, "emulate", "--help").stdout
    lines = [m.group(1).strip() for m in re.finditer(r"(hermes chat .*?)(?:\(or .*\))?$", shown, re.M)]
    assert len(lines) == 2, shown
    for line in lines:
        args = shlex.split(line.replace("http://127.0.0.1:8765", emulator.root))[1:]
        r = _run(hermes_home, *args, env={"HERMES_EMULATE": emulator.root} if "--emulate" in args else None)
        assert r.returncode == 0, (line, r.stderr)
        assert "Done (deepseek-v4)" in r.stdout


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_readmes_first_line_works_as_typed(hermes_home: Path, tmp_path: Path) -> None:
    """``hermes emulate & hermes chat --emulate …`` starts both at once: the chat is ready before
    the emulator listens, and waits for it rather than failing. Only the port differs (a free
    one, so parallel runs do not meet), and ``hermes`` is this interpreter's."""
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    block = readme.split("## Use it", 1)[1].split("```sh\n", 1)[1]
    line = block.splitlines()[0].split("#", 1)[0].strip()
    assert line.startswith("hermes emulate & hermes chat --emulate "), line
    port = _free_port()
    hermes = f"{shlex.quote(sys.executable)} -m hermes"
    typed = line.replace("hermes emulate", f"{hermes} emulate --port {port}", 1).replace(
        "hermes chat", f"{hermes} chat", 1)
    script = f"{typed}\nrc=$?\nkill $! 2>/dev/null\nwait\nexit $rc\n"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HERMES_HOME=str(hermes_home), HERMES_EMULATE=f"http://127.0.0.1:{port}")
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Done (deepseek-v4)" in r.stdout and "session " in r.stderr
    assert len(Store(hermes_home / "state.db").list_sessions()) == 1
