"""Item 4: tool output never carries a secret Hermes knows.

Attack: a file in the workspace holds the gateway's own provider key and another key from its
environment; the model reads it. Before the fix both went upstream in the tool message, into
``state.db``, into the SSE ``tool_result`` event and into the session view.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import httpx
import pytest
from _harness import gateway, hostile, tool_then_answer

from hermes.config.settings import Config

DS_KEY = "sk-ds-gateway-own-key-5a5a5a5a5a"
OTHER = "sk-ant-other-known-key-7b7b7b7b7b"
GATEWAY_TOKEN_VALUE = "tok-gateway-secret-0123456789abcdef"


def test_known_secrets_are_scrubbed_before_store_send_and_stream(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "deploy.env").write_text(f"DEEPSEEK={DS_KEY}\nANTHROPIC={OTHER}\nTOKEN={GATEWAY_TOKEN_VALUE}\nREGION=eu\n")
    monkeypatch.chdir(ws)
    monkeypatch.setenv("DEEPSEEK_API_KEY", DS_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", OTHER)
    monkeypatch.setenv("HERMES_GATEWAY_TOKEN", GATEWAY_TOKEN_VALUE)
    auth = {"authorization": f"Bearer {GATEWAY_TOKEN_VALUE}"}
    with hostile(tool_then_answer("read_file", path="deploy.env")) as upstream, \
            gateway(tmp_path / "gw", Config(allowed_base_urls=(upstream.root,)), token=GATEWAY_TOKEN_VALUE) as base, \
            httpx.Client(base_url=base, timeout=30, headers=auth) as c:
        sid = c.post("/v1/sessions", json={"provider": "deepseek", "model": "m", "base_url": upstream.url}).json()["id"]
        with c.stream("POST", f"/v1/sessions/{sid}/messages", json={"content": "show config", "stream": True}) as r:
            assert r.status_code == 200
            stream = r.read().decode()
        view = c.get(f"/v1/sessions/{sid}").text
        sent = json.dumps(upstream.requests[1]["body"])
    tool_event = next(line for line in stream.split("\n\n") if line.startswith("event: tool_result"))
    assert "REGION=eu" in tool_event and "[REDACTED]" in tool_event and "3 secret values" in tool_event
    with sqlite3.connect(tmp_path / "gw" / "state.db") as db:
        dump = "\n".join(db.iterdump())
    assert "REGION=eu" in sent and "REGION=eu" in dump and "REGION=eu" in view
    for secret in (DS_KEY, OTHER, GATEWAY_TOKEN_VALUE):
        for where, text in (("upstream body", sent), ("sse", stream), ("state.db", dump), ("view", view)):
            assert secret not in text, f"{secret[:8]}… leaked into {where}"
