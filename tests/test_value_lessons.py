"""Value lessons end to end through the real CLI and real HTTP: a refused parameter value is
learned per (provider, host, model), the request retried once with the nearest value it takes
(or without the parameter), and a new process never sends the refused value again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from _cli import cli
from hypothesis import given
from hypothesis import strategies as st

from hermes.rejections.values import ValueRule, apply_values, refused_value


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
    refusals = [b for b in bodies if "summary" in b["reasoning"]]
    assert len(refusals) == 1, "refused once, retried once"
    assert "reasoning.summary" in cli(tmp_path, "routes", "learned").stdout, "learned"
    n = len(emulator.requests("openai-responses"))
    cli(tmp_path, *args)  # a new process
    later = _bodies(emulator, n)
    assert all("summary" not in b["reasoning"] for b in later)
    assert any(i.get("encrypted_content") for b in later for i in b["input"] if i.get("type") == "reasoning")


def test_the_proxy_learns_a_refused_value_and_never_sends_it_again(emulator: Any) -> None:
    import openai
    from _proxy import running_proxy

    with running_proxy(emulator, xai=emulator.url("xai")) as px:
        client = openai.OpenAI(base_url=px.url("xai"), api_key="sk-tenant-a", max_retries=0)
        n = len(emulator.requests("xai"))
        for q in ("hello", "again"):  # a client that always asks for an effort grok-4 refuses
            resp = client.chat.completions.create(model="grok-4", messages=[{"role": "user", "content": q}],
                                                  extra_body={"reasoning_effort": "high"})
            assert resp.choices[0].message.content
        sent = [r["body"] for r in emulator.requests("xai")[n:]]
        learned = px.store.capabilities("xai", "127.0.0.1", "grok-4")
    assert [b.get("reasoning_effort") for b in sent] == ["high", None, None], "refused once, retried once"
    assert learned["refused_values"]["reasoning_effort"]["omit"] is True


def test_replay_body_shows_the_value_lessons(tmp_path: Path, emulator: Any) -> None:
    (tmp_path / "routes.toml").write_text('[[model]]\nmodels = ["gpt-5.1*"]\n'
                                         'efforts = ["minimal", "low", "medium", "high"]\n')
    url = emulator.url("openai-responses")
    cli(tmp_path, "chat", "-q", "hello", "-p", "openai-responses", "-m", "gpt-5.1", "-u", url,
        "--effort", "minimal", "--api-key", "k")
    history = tmp_path / "h.jsonl"
    from hermes.core.messages import Message, dumps

    history.write_bytes(dumps(Message.user("hi")) + b"\n")
    body = orjson.loads(cli(tmp_path, "replay", str(history), "-p", "openai-responses", "-m", "gpt-5.1", "-u", url,
                            "--effort", "minimal", "--body").stdout)
    assert body["reasoning"]["effort"] == "low", "what the next real request sends"


@pytest.mark.parametrize(("body", "path", "rule"), [
    ('{"type":"error","error":{"type":"invalid_request_error","message":"\\"thinking.type.disabled\\" is not '
     'supported for this model. Use \\"thinking.type.adaptive\\" and \\"output_config.effort\\" to control thinking '
     'behavior."}}', "thinking.type", ValueRule("thinking.type", ("adaptive",), ("disabled",))),
    ("{'code': 20015, 'message': 'Value error, current model does not support parameter `enable_thinking`.'}",
     "enable_thinking", ValueRule("enable_thinking", omit=True)),
    ('{"error":{"code":"invalid_parameter_error","message":"<400> InternalError.Algo.InvalidParameter: The value '
     'of the enable_thinking parameter is restricted to True."}}', "enable_thinking",
     ValueRule("enable_thinking", ("true",))),
    # a gateway wrapping OpenAI's refusal in metadata.raw
    ('{"error":{"code":400,"message":"Provider returned error","metadata":{"raw":"{\\"error\\":{\\"message\\":'
     '\\"Unsupported value: \'minimal\' is not supported with the \'gpt-5.1\' model. Supported values are: \'none\', '
     '\'low\', \'medium\', and \'high\'.\\",\\"param\\":\\"reasoning.effort\\",\\"code\\":\\"unsupported_value\\"}}"}}}',
     "reasoning.effort", ValueRule("reasoning.effort", ("none", "low", "medium", "high"), ("minimal",))),
])
def test_the_vocabulary_reads_each_refusal(body: str, path: str, rule: ValueRule) -> None:
    assert refused_value(400, body) == rule


def test_a_learned_thinking_type_replaces_the_whole_thinking_object() -> None:
    rule = ValueRule("thinking.type", ("adaptive",), ("enabled",))
    body = {"thinking": {"type": "enabled", "budget_tokens": 2048}, "messages": []}
    assert apply_values(body, [rule]) == {"thinking": {"type": "adaptive"}, "messages": []}
    assert body["thinking"]["type"] == "enabled", "the input is not changed"
    assert apply_values({"enable_thinking": False}, [ValueRule("enable_thinking", ("true",))]) == {
        "enable_thinking": True}


_VALUES = st.sampled_from(["none", "minimal", "low", "medium", "high", "xhigh", "max", "auto", "detailed"])
_RULES = st.builds(ValueRule, st.sampled_from(["reasoning.effort", "reasoning_effort", "reasoning.summary"]),
                   st.lists(_VALUES, max_size=3).map(tuple), st.lists(_VALUES, max_size=3).map(tuple), st.booleans())


@given(rules=st.lists(_RULES, max_size=3, unique_by=lambda r: r.path), effort=_VALUES, summary=_VALUES, top=_VALUES)
def test_value_lessons_touch_only_their_parameters(rules: list[ValueRule], effort: str, summary: str,
                                                    top: str) -> None:
    body = {"model": "m", "reasoning": {"effort": effort, "summary": summary}, "reasoning_effort": top,
            "input": [{"type": "reasoning", "encrypted_content": "blob", "summary": []}]}
    before = orjson.dumps(body)
    out = apply_values(body, rules)
    assert orjson.dumps(body) == before, "pure"
    assert out["input"] == body["input"] and out["model"] == "m", "carriers and content untouched"
    assert apply_values(out, rules) == out, "applying twice changes nothing more"
    for r in rules:
        *parents, name = r.path.split(".")
        holder = out
        for p in parents:
            holder = holder.get(p, {})
        if name in holder and not r.omit:
            assert holder[name] not in r.refused or holder[name] in r.allowed


def test_a_refused_thinking_type_is_learned_from_anthropics_words(tmp_path: Path, emulator: Any) -> None:
    # a stale table that thinks Opus 5.5 can switch thinking off (what Hermes sent before)
    (tmp_path / "routes.toml").write_text('[[model]]\nmodels = ["claude-opus-5-5*"]\ncan_disable = true\n')
    args = ("chat", "-q", "hello", "-p", "anthropic", "-m", "claude-opus-5-5", "-u", emulator.url("anthropic"),
            "--no-thinking", "--api-key", "k")
    n = len(emulator.requests("anthropic"))
    cli(tmp_path, *args)
    kinds = [r["body"]["thinking"]["type"] for r in emulator.requests("anthropic")[n:]]
    assert kinds[0] == "disabled" and set(kinds[1:]) == {"adaptive"}, "refused once, retried with the type named"
    n = len(emulator.requests("anthropic"))
    cli(tmp_path, *args)  # a new process
    assert {r["body"]["thinking"]["type"] for r in emulator.requests("anthropic")[n:]} == {"adaptive"}
