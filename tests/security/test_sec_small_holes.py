"""Item 8: the smaller holes, each attacked for real.

* a one-character token for a public bind; repeated wrong tokens answered at full speed (also
  when each names a new address in ``X-Forwarded-For``);
* a key with ``\\r`` or a non-ASCII character leaking verbatim in an error;
* model and provider text printed with its escape sequences (OSC 52 writes the clipboard);
* ``branch`` with ``upto_seq`` out of range (500), ``compress`` with ``keep_last: -1``,
  an empty ``content`` stored as a turn;
* ``context_budget = -1`` and ``effort = "ultra"`` accepted by config loading.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from _cli import cli
from _harness import answer, failing, gateway, hostile

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
CSI = "\x1b[2K\x1b[1A"


def test_public_bind_needs_a_long_token(tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HERMES_")},
           "HERMES_HOME": str(tmp_path), "HERMES_GATEWAY_TOKEN": "x"}
    r = subprocess.run([sys.executable, "-m", "hermes", "gateway", "--host", "0.0.0.0", "--port", "0"],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "1-character token" in r.stderr and "at least 16" in r.stderr
    assert not (tmp_path / "state.db").exists()


def test_repeated_wrong_tokens_are_slowed_down(tmp_path: Path) -> None:
    """Each guess names a new client address in ``X-Forwarded-For``: the back-off is kept per
    address, and a server that believed the header from a loopback peer (uvicorn's default)
    would give every guess a fresh one."""
    token = "a-good-long-token-0123456789"
    with gateway(tmp_path / "gw", token=token) as base, httpx.Client(base_url=base, timeout=30) as c:
        started = time.monotonic()
        for i in range(8):
            forged = {"authorization": f"Bearer guess{i}", "x-forwarded-for": f"203.0.113.{i + 1}"}
            assert c.get("/v1/sessions/abc", headers=forged).status_code == 401
        guessing = time.monotonic() - started
        t = time.monotonic()
        r = c.get("/v1/sessions/abcdefabcdef", headers={"authorization": f"Bearer {token}"})
        honest = time.monotonic() - t
    assert r.status_code == 404
    assert guessing > 3.0, f"8 wrong guesses took only {guessing:.2f} s"  # 0.05 + 0.1 + ... capped at 2 s
    assert honest < 1.0


@pytest.mark.parametrize(("key", "what"), [("sk-deepseek-abcdef123456\r\nX-Injected: 1", "control character"),
                                           ("sk-deepseek-abcdéf123456", "non-ASCII character")])
def test_malformed_key_is_refused_without_echo(tmp_path: Path, key: str, what: str) -> None:
    with hostile() as up:
        env = {**{k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
               "HERMES_HOME": str(tmp_path), "DEEPSEEK_API_KEY": key}
        r = subprocess.run([sys.executable, "-m", "hermes", "chat", "-q", "hi", "-p", "deepseek", "-m", "m",
                            "-u", up.url], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and f"the key for deepseek contains a {what} (from DEEPSEEK_API_KEY)" in r.stderr
    for piece in ("abcdef123456", "abcdéf123456", "Injected", "sk-deepseek"):
        assert piece not in r.stderr + r.stdout
    assert up.requests == []


def test_escape_sequences_from_model_and_provider_never_reach_the_terminal(tmp_path: Path) -> None:
    def script(body: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": f"fine{OSC52} answer{CSI}\r\x9b31mred", "reasoning_content":
                f"thinking{OSC52}\x1bP+q544e\x1b\\"}

    with hostile(script) as up:
        r = cli(tmp_path, "chat", "-q", "hi", "-p", "deepseek", "-m", "m", "-u", up.url, "--stream")
        assert "fine answerred" in r.stdout and "thinking" in r.stderr
        sid = r.stderr.strip().rsplit("session ", 1)[1].split()[0]
        shown = cli(tmp_path, "sessions", "show", sid, "--reasoning")
    with hostile(lambda body: failing(400, f"bad{OSC52}request{CSI}")) as bad:
        err = cli(tmp_path, "chat", "-q", "hi", "-p", "deepseek", "-m", "m", "-u", bad.url, check=False)
    assert err.returncode == 1 and "badrequest" in err.stderr
    for out in (r.stdout, r.stderr, shown.stdout, err.stderr):
        assert not any(ch in out for ch in "\x1b\x07\x9b\r"), repr(out[-300:])


def test_bad_branch_compress_and_empty_content_are_400_and_write_nothing(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes.config.settings import Config

    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-ds-small-holes-000111")
    monkeypatch.chdir(tmp_path)
    with hostile(lambda body: answer("ok")) as up, \
            gateway(tmp_path / "gw", Config(allowed_base_urls=(up.root,))) as base, \
            httpx.Client(base_url=base, timeout=30) as c:
        sid = c.post("/v1/sessions", json={"provider": "deepseek", "model": "m", "base_url": up.url}).json()["id"]
        assert c.post(f"/v1/sessions/{sid}/messages", json={"content": "one"}).status_code == 200
        with sqlite3.connect(tmp_path / "gw" / "state.db") as db:
            before = db.execute("SELECT (SELECT COUNT(*) FROM sessions), (SELECT COUNT(*) FROM messages)").fetchone()
        for upto in (2, 99, -1, 2**70):
            r = c.post(f"/v1/sessions/{sid}/branch", json={"upto_seq": upto})
            assert r.status_code == 400 and "upto_seq" in r.json()["error"]["message"], (upto, r.text)
        r = c.post(f"/v1/sessions/{sid}/compress", json={"keep_last": -1})
        assert r.status_code == 400 and "keep_last" in r.text
        for content in ("", "   ", "\n"):
            r = c.post(f"/v1/sessions/{sid}/messages", json={"content": content})
            assert r.status_code == 400 and "empty" in r.text
        assert c.post(f"/v1/sessions/{sid}/branch", json={"upto_seq": 1}).status_code == 201
        with sqlite3.connect(tmp_path / "gw" / "state.db") as db:
            after = db.execute("SELECT (SELECT COUNT(*) FROM sessions), (SELECT COUNT(*) FROM messages)").fetchone()
    assert after == (before[0] + 1, before[1] * 2) and len(up.requests) == 1


@pytest.mark.parametrize(("line", "says"), [("context_budget = -1", "context_budget"),
                                            ('effort = "ultra"', "effort")])
def test_bad_config_values_are_refused_with_file_and_line(tmp_path: Path, line: str, says: str) -> None:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "config.toml").write_text(f'model = "m"\n{line}\n')
    r = cli(tmp_path, "chat", "-q", "hi", "-p", "deepseek", check=False)
    assert r.returncode == 1 and "config.toml:2" in r.stderr and says in r.stderr
