"""Item 2: web pages must not drive a tokenless loopback gateway.

Attacks, as a browser would send them: a DNS-rebound page (same-origin for the browser, but
``Host: attacker.example``), a cross-site ``fetch`` with ``Origin: https://attacker.example``,
and a ``text/plain`` "simple" POST (no preflight) carrying JSON. Before the fix all three
created sessions.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

import httpx
import pytest
from _harness import gateway, hostile


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
        # a turn's route is guarded alike
        turn = f"/v1/sessions/{r.json()['id']}/messages"
        hi = b'{"content": "hi"}'
        r = c.post(turn, content=hi, headers={"origin": "https://attacker.example", "content-type": "application/json"})
        assert r.status_code == 403 and r.json()["error"]["type"] == "forbidden_origin", r.text
        r = c.post(turn, content=hi, headers={"host": "attacker.example", "content-type": "application/json"})
        assert r.status_code == 421, r.text
        assert c.post(turn, content=hi, headers={"content-type": "text/plain"}).status_code == 415
        assert c.get(turn).status_code == 405 and c.post(f"{turn}/more", content=hi).status_code == 404
        with sqlite3.connect(home / "state.db") as db:
            assert db.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 0


def test_configured_hosts_and_origins_are_accepted(tmp_path: Path) -> None:
    from hermes.config.settings import Config

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


PAGE = """<html><body><script>
(async () => {
  const out = [];
  const body = JSON.stringify({provider: "deepseek", model: "deepseek-v4", title: "from a web page"});
  for (const [type, mode] of [["text/plain", "no-cors"], ["application/x-www-form-urlencoded", "no-cors"],
                              ["application/json", "cors"]]) {
    try { await fetch("GATEWAY/v1/sessions", {method: "POST", mode, headers: {"content-type": type}, body});
          out.push("sent"); }
    catch (e) { out.push("blocked"); }
  }
  document.body.innerText = "result:" + out.join(",");
})();
</script></body></html>"""


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs chromium")
def test_a_real_browser_page_cannot_create_sessions(tmp_path: Path) -> None:
    """The cross-site attack in a real browser: a page on another origin fires blind POSTs at
    the tokenless loopback gateway (``no-cors`` text/plain and form bodies need no preflight)."""
    home = tmp_path / "h"
    with gateway(home) as base, hostile() as site:
        site.pages["/attack"] = PAGE.replace("GATEWAY", base)
        r = subprocess.run(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                            f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000",
                            "--dump-dom", site.root + "/attack"], capture_output=True, text=True, timeout=120)
        dom = r.stdout
    assert "result:sent,sent,blocked" in dom, dom[-500:]  # the two blind POSTs left the browser
    assert _count(home) == 0
