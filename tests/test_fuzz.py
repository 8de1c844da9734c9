"""Quick fuzz profile: every decoder, fed mutated real payloads, ends in a ``HermesError`` or a
well-formed turn — never another exception, never a hang (``bench/fuzz.py`` is the long run).

Seeds are captured from the emulators over loopback HTTP (see ``tests/fuzzing.py``); hypothesis
drives the shared mutators through ``st.randoms`` and shrinks the random choices on failure.
"""

from __future__ import annotations

import random
import time

import fuzzing
import orjson
import pytest
from fuzzing import TARGETS, Hang, Target, capture_corpus, check, time_bound
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.emulate.bedrock import encode_frame
from hermes.errors import ConfigError, HermesError, StreamError

BY_NAME = {t.name: t for t in TARGETS}
FAST = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(scope="module")
def corpus() -> dict[str, list[bytes]]:
    return capture_corpus()


def _assert_handled(target: Target, data: bytes) -> None:
    outcome = check(target, data)
    assert outcome.kind != "unexpected", (
        f"{target.name}: {type(outcome.error).__name__}: {outcome.error}\nreproducer: {data[:400]!r}")


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_seeds_parse(corpus: dict[str, list[bytes]], name: str) -> None:
    """The unmutated seeds are accepted: the harness drives the real success path."""
    target = BY_NAME[name]
    for seed in corpus[target.seeds]:
        outcome = check(target, seed)
        assert outcome.kind == "ok", f"{name}: {outcome.error!r}"


@pytest.mark.parametrize("name", sorted(BY_NAME))
@FAST
@given(rnd=st.randoms(use_true_random=False))
def test_mutated_input_is_refused_cleanly(corpus: dict[str, list[bytes]], name: str, rnd: random.Random) -> None:
    target = BY_NAME[name]
    _assert_handled(target, target.case(corpus, rnd))


@pytest.mark.parametrize("name", sorted(BY_NAME))
@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300))
def test_random_bytes_are_refused_cleanly(name: str, data: bytes) -> None:
    _assert_handled(BY_NAME[name], data)


# --------------------------------------------------------------------- regressions found by fuzzing


@pytest.mark.parametrize("chunk", [
    b'{"choices": 5}', b'{"choices": {"0": 1}}', b'{"choices": ["x"]}', b'{"choices": [{"delta": 3}]}',
    b'{"choices": [{"delta": {"tool_calls": [{"index": 0, "function": "f"}]}}]}',
    b'{"choices": [{"delta": {"content": "a"}}], "usage": 7}',
])
def test_chat_chunk_with_wrong_types_is_a_stream_error(chunk: bytes) -> None:
    from hermes.wire.openai_chat import ChatDecoder

    with pytest.raises(StreamError, match="malformed stream chunk"):
        ChatDecoder().decode_event("message", chunk.decode())


def test_gemini_unhashable_finish_reason_is_a_stream_error() -> None:
    from hermes.wire import gemini

    with pytest.raises(StreamError, match="finishReason"):
        gemini.from_wire({"candidates": [{"content": {"parts": [{"text": "a"}]}, "finishReason": {"x": 1}}]})


def test_responses_item_that_is_a_string_is_a_stream_error() -> None:
    from hermes.wire import openai_responses

    with pytest.raises(StreamError):
        openai_responses.decode_event("", orjson.dumps({"type": "response.output_item.added", "item": "x"}).decode())
    with pytest.raises(StreamError):
        openai_responses.from_wire({"output": [{"type": "reasoning", "summary": 3}]})


def test_non_text_value_in_a_turn_is_a_stream_error_not_a_stored_turn() -> None:
    """A number where text belongs reaches the fold; ``result()`` refuses it instead of storing it."""
    from hermes.wire import openai_responses

    events = [{"type": "response.output_text.delta", "item_id": "m", "delta": 5},
              {"type": "response.completed", "response": {"output": []}}]
    with pytest.raises(StreamError, match="wrong type"):
        _fold("openai_responses", "\n\n".join(f"data: {orjson.dumps(e).decode()}" for e in events).encode())
    assert openai_responses  # imported for the route table


def _fold(wire: str, sse: bytes) -> None:
    fuzzing._sse_target(wire)(sse)


def test_bedrock_frame_with_bad_payload_is_a_stream_error() -> None:
    headers = [(":event-type", "contentBlockDelta"), (":content-type", "application/json"),
               (":message-type", "event")]
    for payload in (b'{"delta": 5, "contentBlockIndex": 0}', b"\xff\xfe", b"[" * 5000 + b"]" * 5000,
                    b'{"delta": {"text": "\\ud800"}, "contentBlockIndex": 0}'):
        with pytest.raises(StreamError):
            BY_NAME["bedrock.frames"].run(encode_frame(headers, payload))


def test_bedrock_converse_body_botocore_cannot_parse_is_a_stream_error() -> None:
    for body in (b'{"output": {"message": {"content": [{"text": "a", "toolUse": {}}]}}}', b"\xff",
                 b'{"usage": {"inputTokens": Infinity}, "output": {}}', b"[" * 5000):
        with pytest.raises(StreamError):
            BY_NAME["bedrock.json"].run(body)


def test_route_rule_with_bad_switches_is_a_config_error() -> None:
    bad = b'[[route]]\nkey = "deepseek"\n[[route.model_rules]]\npattern = "x"\nswitches = [1]\n'
    with pytest.raises(ConfigError, match="switches"):
        BY_NAME["routes.toml"].run(bad)


def test_alias_with_non_string_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="alias"):
        BY_NAME["config.toml"].run(b'[aliases]\nfast = { provider = 3, model = "m" }\n')


# --------------------------------------------------------------------- the harness itself


@pytest.mark.timeout(60)
def test_time_bound_reports_a_hang() -> None:
    """A bound that did not cut the call short would wait out the whole sleep (and time out)."""
    with pytest.raises(Hang):
        time_bound(lambda: time.sleep(600), seconds=0.2)


def test_check_classifies_outcomes() -> None:
    def boom(_: bytes) -> None:
        raise KeyError("x")

    def refuse(_: bytes) -> None:
        raise HermesError("no")

    assert check(Target("t", "s", lambda s, r: s, boom), b"").kind == "unexpected"
    assert check(Target("t", "s", lambda s, r: s, refuse), b"").kind == "refused"
    assert check(Target("t", "s", lambda s, r: s, lambda _: None), b"").kind == "ok"


def test_deeply_nested_toml_is_a_config_error() -> None:
    deep = b"l = " + b"[" * 5000 + b"]" * 5000 + b"\n"
    for name in ("config.toml", "routes.toml"):
        with pytest.raises(ConfigError, match="nested too deeply"):
            BY_NAME[name].run(deep)


def test_empty_native_record_round_trips_as_none() -> None:
    from hermes import messages

    line = orjson.dumps({"v": 1, "role": "assistant", "parts": [
        {"kind": "reasoning", "text": "t", "origin": {"provider": "p", "host": "h", "model": "m", "wire": "gemini"},
         "native": {"type": "hermes.native_assistant"}}]})
    m = messages.loads(line)
    assert m.parts[0].native is None  # type: ignore[union-attr]
    assert messages.loads(messages.dumps(m)) == m


def test_empty_native_field_round_trips_as_absent() -> None:
    from hermes import messages

    line = orjson.dumps({"v": 1, "role": "assistant", "parts": [
        {"kind": "reasoning", "text": "t", "origin": {"provider": "p", "host": "h", "model": "m", "wire": "gemini"},
         "native": {"type": "hermes.native_assistant", "reasoning_opaque": "op", "reasoning_text": ""}}]})
    m = messages.loads(line)
    assert messages.loads(messages.dumps(m)) == m
