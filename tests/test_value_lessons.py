"""Value lessons end to end through the real CLI and real HTTP: a refused parameter value is
learned per (provider, host, model), the request retried once with the nearest value it takes
(or without the parameter), and a new process never sends the refused value again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _cli import cli


def _bodies(emu: Any, since: int) -> list[dict[str, Any]]:
    return [r["body"] for r in emu.requests("openai-responses")[since:]]


def test_a_refused_effort_is_learned_retried_once_and_never_sent_again(tmp_path: Path, emulator: Any) -> None:
    # a stale table that still says gpt-5.1 takes `minimal` (what Hermes sent before)
    (tmp_path / "routes.toml").write_text('[[model]]\nmodels = ["gpt-5.1*"]\n'
                                         'efforts = ["minimal", "low", "medium", "high"]\n')
    args = ("chat", "-q", "hello", "-p", "openai-responses", "-m", "gpt-5.1", "-u",
            emulator.url("openai-responses"), "--effort", "minimal", "--api-key", "k")
    n = len(emulator.requests("openai-responses"))
    cli(tmp_path, *args)
    first = _bodies(emulator, n)
    efforts = [b["reasoning"].get("effort") for b in first]
    assert efforts[:2] == ["minimal", "low"] and set(efforts[1:]) == {"low"}, "refused once, retried once"
    learned = cli(tmp_path, "routes", "learned").stdout
    assert "refused_values" in learned and "reasoning.effort" in learned
    n = len(emulator.requests("openai-responses"))
    cli(tmp_path, *args)  # a new process
    assert {b["reasoning"].get("effort") for b in _bodies(emulator, n)} == {"low"}


def test_an_unverified_organisation_loses_only_the_summary(tmp_path: Path, emulator: Any) -> None:
    args = ("chat", "-q", "list the workspace", "-p", "openai-responses", "-m", "gpt-5.1", "-u",
            emulator.url("openai-responses"), "--api-key", "unverified-key")
    n = len(emulator.requests("openai-responses"))
    cli(tmp_path, *args)
    bodies = _bodies(emulator, n)
    assert "summary" in bodies[0]["reasoning"] and all("summary" not in b["reasoning"] for b in bodies[1:])
    assert all(b["include"] == ["reasoning.encrypted_content"] for b in bodies[1:])
    replayed = [i for b in bodies[1:] for i in b["input"] if i.get("type") == "reasoning"]
    assert replayed and all(i.get("encrypted_content") for i in replayed), "encrypted reasoning still replayed"
    n = len(emulator.requests("openai-responses"))
    cli(tmp_path, *args)
    assert all("summary" not in b["reasoning"] for b in _bodies(emulator, n))
