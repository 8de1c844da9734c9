"""Item 7: a database password reaches no message, log or output, whatever form it is given in.

Attack: the store URL carries its password as ``user:password@``, as ``?password=`` /
``?sslpassword=``, percent-encoded so that libpq's parser stops on it, or inside a libpq
``key=value`` string; Hermes is run for real (the CLI, a real PostgreSQL server on loopback)
with the URL failing and succeeding. Before the fix ``?password=X`` was shown as given, the
``key=value`` string was echoed whole, and libpq's ``invalid percent-encoded token: "<password>"``
came through. The passwords are shorter than ``register_secret``'s 6-character floor on purpose:
masking must not depend on the scrubber.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hermes.core.errors import HermesError
from hermes.store import Store
from hermes.store.url import display_url

PW = "Zq9x"
PW2 = "Yk3w"


def _hermes(home: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HERMES_HOME": str(home), "HERMES_DATABASE_URL": url}
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def _files_hold(home: Path, needle: str) -> list[Path]:
    return [p for p in home.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_a_failing_store_url_never_shows_its_password(pg_cluster: Any, tmp_path: Path) -> None:
    home = tmp_path / "home"
    base = f"127.0.0.1:{pg_cluster.port}"
    failing = {  # each fails a different way: no such database, a refused port, libpq's parser, our checks
        f"postgresql://hermes@{base}/nosuchdb?password={PW}": "password=***",
        f"postgresql://hermes:{PW}@{base}/nosuchdb?sslpassword={PW2}": "postgresql://hermes:***@",
        f"postgresql://hermes@127.0.0.1:1/db?sslmode=disable&password={PW}": "password=***",
        f"postgresql://hermes:{PW}%zz@{base}/db": "invalid percent-encoded token",
        f"host=127.0.0.1 port={pg_cluster.port} password={PW} dbname=nosuchdb": "key=value connection string",
        f"mysql://hermes:{PW}@{base}/db": "must start with postgresql://",
        f"postgresql://hermes:{PW}@[::1/db": "not a valid URL",
    }
    for url, shown in failing.items():
        r = _hermes(home, url, "sessions", "list")
        out = r.stdout + r.stderr
        assert r.returncode == 1 and shown in r.stderr, (url, r.stderr)
        assert PW not in out and PW2 not in out, (url, out)
        assert "Traceback" not in out and "internal error" not in out
    assert _files_hold(tmp_path, PW) == [] and _files_hold(tmp_path, PW2) == []


def test_a_working_store_url_with_passwords_shows_none(pg_url: str, tmp_path: Path) -> None:
    """The test server trusts loopback, so the passwords are sent and ignored: every command
    works, and neither password is in any output or in any file under HERMES_HOME."""
    home = tmp_path / "home"
    url = pg_url.replace("postgresql://hermes@", f"postgresql://hermes:{PW}@") + f"?password={PW2}"
    home.mkdir(parents=True)

    with Store(home / "state.db") as s:
        s.create_session(provider="deepseek", model="deepseek-v4")
    for args in (["store", "migrate", "--to", url], ["sessions", "list"], ["sessions", "list", "--json"],
                 ["logs", "--json"]):
        r = _hermes(home, url, *args)
        out = r.stdout + r.stderr
        assert r.returncode == 0, (args, r.stderr)
        assert PW not in out and PW2 not in out, (args, out)
    assert "postgresql://hermes:***@" in _hermes(home, url, "store", "migrate", "--to", url).stdout
    assert _files_hold(tmp_path, PW) == [] and _files_hold(tmp_path, PW2) == []


@pytest.mark.parametrize("url,want", [
    (f"postgresql://u:{PW}@h:5/d?password={PW2}&sslmode=require", "postgresql://u:***@h:5/d?password=***&sslmode=require"),
    (f"postgresql://h/d?sslmode=require&SSLPASSWORD={PW}", "postgresql://h/d?sslmode=require&SSLPASSWORD=***"),
    (f"postgresql://u:{PW}@[::1]:5/d", "postgresql://u:***@[::1]:5/d"),
    (f"postgresql://u:{PW}@[::1/d", "(a store URL that cannot be parsed)"),
])
def test_display_url_masks_every_form(url: str, want: str) -> None:
    assert display_url(url) == want


def test_config_store_url_with_a_password_is_refused_unrepeated(tmp_path: Path) -> None:
    from hermes.config.settings import load_config

    for url in (f"postgresql://u:{PW}@h/d", f"postgresql://u@h/d?password={PW}"):
        (tmp_path / "config.toml").write_text(f'[store]\nurl = "{url}"\n')
        with pytest.raises(HermesError, match="the store url holds a password") as e:
            load_config(tmp_path / "config.toml")
        assert PW not in str(e.value) + e.value.hint
