"""Every place a user hands Hermes a base URL checks it where it enters: a malformed value (a
bad IPv6 literal, no scheme, a space, a control character) is a clear error naming the
setting — exit 2 for a command-line option, a config error naming the file for config.toml
and routes.toml, 400 for a gateway client, a message in the REPL — never "internal error" or a
traceback, and nothing is stored or sent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import orjson
import pytest
from _cli import CANARY, cli, stored_sessions
from _harness import gateway

BAD = {
    "bad IPv6": ("http://[::1/v1", "is not a valid URL (Invalid IPv6 URL)"),
    "no scheme": ("api.example.com/v1", "must start with http:// or https://"),
    "space": ("http://api.example.com/v 1", "must not contain spaces, control characters or backslashes"),
    "control character": ("http://api.example.com/v1\x07", "must not contain spaces, control characters"),
}
CASES = pytest.mark.parametrize("url,why", BAD.values(), ids=list(BAD))


def _clean_failure(r: subprocess.CompletedProcess[str], code: int, *needles: str) -> None:
    assert r.returncode == code, (r.returncode, r.stderr)
    for needle in needles:
        assert needle in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr and "Hermes bug" not in r.stderr


def _toml(value: str) -> str:
    """``value`` as a TOML basic string (control characters escaped, as TOML requires)."""
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in orjson.dumps(value).decode())


@CASES
def test_base_url_option_is_a_usage_error(hermes_home: Path, url: str, why: str) -> None:
    r = cli(hermes_home, "chat", "-p", "deepseek", "-m", "deepseek-v4", "-u", url, "-q", "hi", check=False)
    _clean_failure(r, 2, "Invalid value for '--base-url'", why)
    assert stored_sessions(hermes_home) == []
    r = cli(hermes_home, "routes", "explain", "-m", "deepseek-v4", "-u", url, check=False)
    _clean_failure(r, 2, "Invalid value for '--base-url'", why)


@CASES
def test_proxy_upstream_and_gateway_allow_base_url_are_usage_errors(hermes_home: Path, url: str, why: str) -> None:
    r = cli(hermes_home, "proxy", "--port", "0", "--upstream", f"deepseek={url}", check=False)
    _clean_failure(r, 2, "Invalid value for --upstream", "'deepseek'", why)
    r = cli(hermes_home, "gateway", "--port", "0", "--allow-base-url", url, check=False)
    _clean_failure(r, 2, "Invalid value for --allow-base-url", why)


CONFIG_SETTINGS = {
    "base_url": ("base_url = {v}\n", "base_url"),
    "alias": ("[aliases.fast]\nmodel = \"m\"\nbase_url = {v}\n", "alias 'fast' base_url"),
    "proxy upstream": ("[proxy]\nupstream = {{ deepseek = {v} }}\n", "[proxy] upstream 'deepseek'"),
    "allowed_base_urls": ("[gateway]\nallowed_base_urls = [{v}]\n", "an entry of [gateway] allowed_base_urls"),
}


@CASES
@pytest.mark.parametrize("setting", list(CONFIG_SETTINGS))
def test_config_toml_url_is_a_config_error_naming_file_and_setting(hermes_home: Path, url: str, why: str,
                                                                   setting: str) -> None:
    template, name = CONFIG_SETTINGS[setting]
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "config.toml").write_text(template.format(v=_toml(url)))
    r = cli(hermes_home, "chat", "-p", "deepseek", "-m", "deepseek-v4", "-q", "hi", check=False)
    _clean_failure(r, 1, f"hermes: error: {hermes_home / 'config.toml'}:", f": {name} {why}")
    assert stored_sessions(hermes_home) == []


@CASES
def test_routes_toml_base_url_is_a_config_error_naming_file_and_line(hermes_home: Path, url: str, why: str) -> None:
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "routes.toml").write_text(f'[[route]]\nkey = "deepseek"\n\n[[route]]\nkey = "acme"\n'
                                            f'wire = "openai_chat"\nbase_url = {_toml(url)}\n')
    r = cli(hermes_home, "chat", "-p", "acme", "-m", "m", "-q", "hi", check=False)
    _clean_failure(r, 1, f"{hermes_home / 'routes.toml'}:4: route 'acme': field 'base_url' {why}")
    assert stored_sessions(hermes_home) == []


@CASES
def test_repl_model_command_refuses_the_url_and_keeps_the_route(hermes_home: Path, tmp_path: Path, url: str,
                                                                why: str) -> None:
    start = "http://127.0.0.1:9/v1"  # no turn is sent: only the switch is under test
    script = f"/model openrouter:some-model {url}\n/model\n/quit\n"
    env = {**os.environ, "HERMES_HOME": str(hermes_home), "HERMES_API_KEY": CANARY}
    r = subprocess.run([sys.executable, "-m", "hermes", "chat", "-p", "deepseek", "-m", "deepseek-v4", "-u", start],
                       input=script, capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    _clean_failure(r, 0, f"hermes: error: the /model base URL {why}", "hint: a base URL looks like",
                   f"current: deepseek:deepseek-v4 at {start}")
    assert "now openrouter" not in r.stderr
    assert all(url == start for _, url in stored_sessions(hermes_home))  # a session is stored with its first turn


@CASES
def test_gateway_client_base_url_is_a_400_and_nothing_is_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               url: str, why: str) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-gateway-0123456789")
    home = tmp_path / "home"
    with gateway(home) as base, httpx.Client(base_url=base, timeout=30) as c:
        r = c.post("/v1/sessions", json={"provider": "deepseek", "model": "deepseek-v4", "base_url": url})
        assert r.status_code == 400, r.text
        assert why in r.json()["error"]["message"]
        assert stored_sessions(home) == []
        sid = c.post("/v1/sessions", json={"provider": "deepseek", "model": "deepseek-v4"}).json()["id"]
        r = c.post(f"/v1/sessions/{sid}/messages", json={"content": "hi", "base_url": url})
        assert r.status_code == 400 and why in r.json()["error"]["message"], r.text
    assert stored_sessions(home) == [(sid, "")]


STORE_BAD = {
    "bad IPv6": ("postgresql://hermes@[::1/db", "is not a valid URL (Invalid IPv6 URL)"),
    "no scheme": ("db.internal/hermes", "must start with postgresql://"),
    "space": ("postgresql://hermes@db internal/hermes", "must not contain spaces or control characters"),
    "control character": ("postgresql://hermes@db.internal/hermes\x07", "must not contain spaces or control"),
}
STORE_CASES = pytest.mark.parametrize("url,why", STORE_BAD.values(), ids=list(STORE_BAD))


@STORE_CASES
def test_store_urls_are_checked_where_they_enter(hermes_home: Path, url: str, why: str) -> None:
    env_url = subprocess.run([sys.executable, "-m", "hermes", "sessions", "list"], capture_output=True, text=True,
                             env={**os.environ, "HERMES_HOME": str(hermes_home), "HERMES_DATABASE_URL": url},
                             timeout=120)
    _clean_failure(env_url, 1, f"hermes: error: HERMES_DATABASE_URL {why}")
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "config.toml").write_text(f"[store]\nurl = {_toml(url)}\n")
    r = cli(hermes_home, "sessions", "list", check=False)
    _clean_failure(r, 1, f"{hermes_home / 'config.toml'}:", f": [store] url {why}")
    (hermes_home / "config.toml").unlink()
    r = cli(hermes_home, "store", "migrate", "--to", url, check=False)
    _clean_failure(r, 2, "Invalid value for --to", why)
    assert not (hermes_home / "state.db").exists()
