"""Item 1: the server's provider keys must never go to a host a client picked.

Attack: a hostile OpenAI-compatible server on a loopback port; a gateway client creates a
session (or switches one) with ``base_url`` pointing at it and sends a message. Before the fix
the hostile server received ``x-api-key: <the server's Anthropic key>``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import httpx
import pytest
from _cli import cli, stored_sessions
from _harness import gateway, hostile

from hermes.config.settings import Config
from hermes.config.urlpolicy import base_url_allowed
from hermes.core.errors import RouteError

SERVER_KEY = "sk-ant-server-secret-0123456789abcdef"


def test_client_chosen_base_url_is_refused_and_gets_no_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SERVER_KEY)
    monkeypatch.setenv("DEEPSEEK_API_KEY", SERVER_KEY + "-ds")
    home = tmp_path / "home"
    with hostile() as evil, gateway(home) as base, httpx.Client(base_url=base, timeout=30) as c:
        r = c.post("/v1/sessions", json={"provider": "anthropic", "model": "m", "base_url": evil.url})
        assert r.status_code == 400, r.text
        assert "allowed_base_urls" in r.json()["error"]["message"]
        assert stored_sessions(home) == []
        # a session on the route's default URL is fine; a switch to the hostile host is not
        r = c.post("/v1/sessions", json={"provider": "deepseek", "model": "deepseek-v4"})
        assert r.status_code == 201, r.text
        sid = r.json()["id"]
        for switch in ({"base_url": evil.url}, {"provider": "anthropic", "base_url": evil.url},
                       {"base_url": evil.root + "/v1/../v1"}):
            r = c.post(f"/v1/sessions/{sid}/messages", json={"content": "hi", **switch})
            assert r.status_code == 400 and "allowed_base_urls" in r.text, r.text
        # the facade cannot name a base URL at all; its session is the stored one
        assert stored_sessions(home) == [(sid, "")]
    assert evil.requests == [] and not evil.seen(SERVER_KEY)


def test_allowlisted_base_url_is_served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", SERVER_KEY)
    with hostile() as local, gateway(tmp_path / "h", Config(allowed_base_urls=(local.root + "/v1",))) as base, \
            httpx.Client(base_url=base, timeout=30) as c:
        r = c.post("/v1/sessions", json={"provider": "deepseek", "model": "deepseek-v4", "base_url": local.url})
        assert r.status_code == 201, r.text
        r = c.post(f"/v1/sessions/{r.json()['id']}/messages", json={"content": "hi"})
        assert r.status_code == 200 and r.json()["answer"] == "hello from the hostile server", r.text
        # the prefix is a path prefix on a "/" boundary, on the same scheme, host and port
        r = c.post("/v1/sessions", json={"provider": "deepseek", "model": "m", "base_url": local.root + "/v1evil"})
        assert r.status_code == 400
    assert len(local.requests) == 1


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:9/v1@evil.example/v1",     # userinfo hidden after a path-looking part
    "http://127.0.0.1:9\\@evil.example/v1",       # backslash: parsers disagree on the host
    "http://evil.example#@127.0.0.1:9/v1",        # fragment trick
    "https://127.0.0.1:9/v1",                     # other scheme
    "http://127.0.0.1:10/v1",                     # other port
    "http://127.0.0.1:9/v1?x=1",                  # query string
    "http://127.0.0.1.evil.example:9/v1",         # look-alike host
])
def test_allowlist_is_exact(url: str) -> None:
    with contextlib.suppress(RouteError):
        assert not base_url_allowed(url, default="https://api.deepseek.com", allowlist=("http://127.0.0.1:9/v1",))
    assert base_url_allowed("http://127.0.0.1:9/v1/chat", default="", allowlist=("http://127.0.0.1:9/v1",))
    assert base_url_allowed("https://api.deepseek.com/", default="https://api.deepseek.com", allowlist=())


def test_userinfo_is_refused_everywhere_and_never_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    password = "pw-hunter2-in-url"
    monkeypatch.setenv("DEEPSEEK_API_KEY", SERVER_KEY)
    with hostile() as evil:
        url = f"http://user:{password}@127.0.0.1:{evil.server.server_address[1]}/v1"
        # CLI: one-shot chat with the URL on the command line
        home = tmp_path / "cli"
        r = cli(home, "chat", "-q", "hi", "-p", "deepseek", "-m", "deepseek-v4", "-u", url, check=False)
        assert r.returncode != 0 and "user name or password" in r.stderr
        assert password not in r.stderr + r.stdout and stored_sessions(home) == []
        # config.toml: refused at load, with file:line, without the password
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(f'provider = "deepseek"\nbase_url = "{url}"\n')
        r = cli(home, "chat", "-q", "hi", "-m", "deepseek-v4", check=False)
        assert r.returncode != 0 and "config.toml:2" in r.stderr and password not in r.stderr
        # gateway, even with the host allowlisted
        allowed = Config(allowed_base_urls=(evil.root,))
        with gateway(tmp_path / "gw", allowed) as base, httpx.Client(base_url=base, timeout=30) as c:
            r = c.post("/v1/sessions", json={"provider": "deepseek", "model": "m", "base_url": url})
            assert r.status_code == 400 and password not in r.text
        assert stored_sessions(tmp_path / "gw") == []
    assert evil.requests == []
