"""Item 2: web pages must not drive a tokenless loopback gateway.

Attacks, as a browser would send them: a DNS-rebound page (same-origin for the browser, but
``Host: attacker.example``), a cross-site ``fetch`` with ``Origin: https://attacker.example``,
and a ``text/plain`` "simple" POST (no preflight) carrying JSON. Before the fix all three
created sessions.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx
from _harness import gateway


def _count(home: Path) -> int:
    with sqlite3.connect(home / "state.db") as c:
        return int(c.execute("SELECT COUNT(*) FROM sessions").fetchone()[0])


def test_rebinding_cross_site_and_text_plain_are_refused(tmp_path: Path) -> None:
    home = tmp_path / "h"
    body = b'{"provider": "deepseek", "model": "deepseek-v4"}'
    with gateway(home) as base, httpx.Client(base_url=base, timeout=30) as c:
        port = base.rsplit(":", 1)[1]
        r = c.post("/v1/sessions", content=body, headers={"host": f"attacker.example:{port}",
                                                          "content-type": "application/json"})
        assert r.status_code == 421 and r.json()["error"]["type"] == "wrong_host", r.text
        assert c.get("/v1/sessions/abc", headers={"host": "attacker.example"}).status_code == 421
        r = c.post("/v1/sessions", content=body, headers={"origin": "https://attacker.example",
                                                          "content-type": "application/json"})
        assert r.status_code == 403 and r.json()["error"]["type"] == "forbidden_origin", r.text
        r = c.post("/v1/sessions", content=body, headers={"origin": "null", "content-type": "application/json"})
        assert r.status_code == 403
        r = c.post("/v1/sessions", content=body, headers={"content-type": "text/plain"})
        assert r.status_code == 415, r.text
        r = c.post("/v1/sessions", content=body, headers={"content-type": "application/x-www-form-urlencoded"})
        assert r.status_code == 415
        assert _count(home) == 0
        # what is allowed: plain clients, the gateway's own origin, every loopback spelling
        assert c.post("/v1/sessions", content=body, headers={"content-type": "application/json"}).status_code == 201
        r = c.post("/v1/sessions", content=body, headers={"origin": base, "content-type": "application/json"})
        assert r.status_code == 201, r.text
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "LOCALHOST"):
            assert c.get("/healthz", headers={"host": host}).status_code == 200, host
        assert _count(home) == 2


def test_configured_hosts_and_origins_are_accepted(tmp_path: Path) -> None:
    from hermes.config import Config

    cfg = Config(allowed_hosts=("hermes.lan",), allowed_origins=("https://chat.example",))
    with gateway(tmp_path / "h", cfg) as base, httpx.Client(base_url=base, timeout=30) as c:
        assert c.get("/healthz", headers={"host": "hermes.lan:8642"}).status_code == 200
        assert c.get("/healthz", headers={"host": "other.lan"}).status_code == 421
        r = c.post("/v1/sessions", json={"provider": "deepseek", "model": "m"},
                   headers={"origin": "https://chat.example"})
        assert r.status_code == 201
        r = c.post("/v1/sessions", json={"provider": "deepseek", "model": "m"},
                   headers={"origin": "https://chat.example.attacker.example"})
        assert r.status_code == 403
