"""``hermes models`` and ``hermes models explain`` through the real CLI: the families with their
facts and sources, the request fields one model gets on one route (as the wire builds them),
and what a refusal taught, shown after a real value lesson over loopback HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from _cli import cli


def _json(home: Path, *args: str) -> Any:
    return orjson.loads(cli(home, *args, "--json").stdout)


def test_the_list_shows_each_family_with_its_source(tmp_path: Path) -> None:
    data = _json(tmp_path, "models")
    bound = next(f for f in data["families"] if "prefix_bound" in f["sets"])
    assert "*claude-fable-5[-.][1-9]*" in bound["models"] and "different conversation" in bound["cite"]
    grok = next(f for f in data["families"] if f["models"] == ["grok-*"])
    assert grok["efforts"] == [] and "litellm" in grok["cite"]
    assert data["learned"] == {}
    assert "Hermes model profiles" in cli(tmp_path, "models").stdout


def test_explain_shows_the_fields_a_request_carries_and_why(tmp_path: Path) -> None:
    data = _json(tmp_path, "models", "explain", "claude-fable-5-1", "-p", "anthropic", "--effort", "high")
    on, off = data["request"]["thinking on"], data["request"]["thinking off"]
    assert on["thinking"]["block_binding"] == {"prefix_mismatch_behavior": "drop_block"}
    assert on["thinking"]["display"] == "summarized" and on["output_config"] == {"effort": "high"}
    assert off["thinking"]["type"] == "adaptive" and off["output_config"] == {"effort": "low"}, "cannot stop"
    assert data["request"]["headers"]["anthropic-beta"] == "thinking-binding-controls-2026-08-01"
    assert any("Fable 5.1" in r["cite"] for r in data["rows"])
    qwen = _json(tmp_path, "models", "explain", "qwen3-235b-a22b-instruct-2507", "-p", "dashscope")
    assert qwen["request"]["thinking on"] == {} and qwen["request"]["thinking off"] == {}
    alone = _json(tmp_path, "models", "explain", "gpt-5.1")
    assert alone["profile"]["efforts"] == ["none", "low", "medium", "high"] and "request" not in alone


def test_what_a_route_taught_is_listed_and_applied(tmp_path: Path, emulator: Any) -> None:
    (tmp_path / "routes.toml").write_text('[[model]]\nmodels = ["gpt-5.1*"]\n'
                                         'efforts = ["minimal", "low", "medium", "high"]\n')
    url = emulator.url("openai-responses")
    explain = ("models", "explain", "gpt-5.1", "-p", "openai-responses", "-u", url, "--effort", "minimal")
    assert _json(tmp_path, *explain)["request"]["thinking on"]["reasoning"]["effort"] == "minimal"
    cli(tmp_path, "chat", "-q", "hello", "-p", "openai-responses", "-m", "gpt-5.1", "-u", url,
        "--effort", "minimal", "--api-key", "k")
    data = _json(tmp_path, *explain)
    assert data["request"]["thinking on"]["reasoning"]["effort"] == "low", "the lesson applies"
    assert data["request"]["value lessons"][0]["refused"] == ["minimal"]
    learned = _json(tmp_path, "models")["learned"]["gpt-5.1"]
    assert learned[0]["kind"] == "refused_values" and "minimal" in learned[0]["evidence"]
    assert "learned    reasoning.effort" in cli(tmp_path, *explain).stdout
