"""Quick fuzz profile: every decoder, fed mutated real payloads, ends in a ``HermesError`` or a
well-formed turn — never another exception, never a hang (``bench/fuzz.py`` is the long run).

Seeds are captured from the emulators over loopback HTTP (see ``tests/fuzzing.py``). The random
cases come from this run's seed (``fuzzing.SEED``: fresh each run, shown in the pytest header,
replayed with ``HERMES_FUZZ_SEED=N``), so every run fuzzes new inputs and a failure can be
replayed; a failure prints its shrunk reproducer. The shape property (hypothesis, same seed)
replaces one value at one key each decoder reads with a value of another JSON type.
"""

from __future__ import annotations

import random
import time

import fuzzing
import orjson
import pytest
from fuzzing import SEED, SEED_VAR, TARGETS, Hang, Target, capture_corpus, check, report, time_bound
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from hermes.core.errors import ConfigError, HermesError, StreamError
from hermes.emulate.bedrock import encode_frame

BY_NAME = {t.name: t for t in TARGETS}
CASES = 120
"""Seeded random cases per target and run."""
SHAPES = settings(max_examples=80, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(scope="module")
def corpus() -> dict[str, list[bytes]]:
    return capture_corpus()


def _assert_handled(target: Target, data: bytes) -> None:
    outcome = check(target, data)
    assert outcome.kind != "unexpected", report(target, data, outcome, SEED, shrink_s=5.0)


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_seeds_parse(corpus: dict[str, list[bytes]], name: str) -> None:
    """The unmutated seeds are accepted: the harness drives the real success path."""
    target = BY_NAME[name]
    for payload in corpus[target.seeds]:
        outcome = check(target, payload)
        assert outcome.kind == "ok", f"{name}: {outcome.error!r}"


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_mutated_input_is_refused_cleanly(corpus: dict[str, list[bytes]], name: str) -> None:
    """This run's seeded cases (the long profile's generator, fewer of them)."""
    target = BY_NAME[name]
    rnd = random.Random(f"{SEED}:{target.name}")
    for _ in range(CASES):
        _assert_handled(target, target.case(corpus, rnd))


SHAPED = sorted(t.name for t in TARGETS if t.retype is not None)


@pytest.mark.parametrize("name", SHAPED)
@seed(SEED)
@SHAPES
@given(rnd=st.randoms(use_true_random=False))
def test_a_value_of_another_type_at_any_key_is_refused_cleanly(corpus: dict[str, list[bytes]], name: str,
                                                                rnd: random.Random) -> None:
    """Valid-shaped input but for one value of the wrong JSON type at a key the decoder reads."""
    target = BY_NAME[name]
    assert target.retype is not None
    _assert_handled(target, target.retype(rnd.choice(corpus[target.seeds]), rnd))


def test_every_key_of_a_chat_stream_can_take_every_other_type(corpus: dict[str, list[bytes]]) -> None:
    """The shape property exhaustively, for the chat stream's events (the wire most gateways
    speak): every key of every event of one seed, each JSON type in turn."""
    target = BY_NAME["openai_chat.sse"]
    stream = max(corpus["openai_chat.sse"], key=lambda s: s.count(b"reasoning"))
    events = [e for e in stream.split(b"\n\n") if e.startswith(b"data: {")]
    for i, event in enumerate(events):
        doc = orjson.loads(event[6:])
        for path in [p for p in fuzzing._paths(doc) if p]:
            for _, make in fuzzing._JSON_TYPES:
                bad = orjson.loads(event[6:])
                parent = fuzzing._get(bad, path[:-1])
                parent[path[-1]] = make(random.Random(0))
                case = [*events[:i], b"data: " + orjson.dumps(bad), *events[i + 1:]]
                _assert_handled(target, b"\n\n".join(case) + b"\n\n")


@pytest.mark.parametrize("name", sorted(BY_NAME))
@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300))
def test_random_bytes_are_refused_cleanly(corpus: dict[str, list[bytes]], name: str, data: bytes) -> None:
    """(``corpus``: capturing it warms every target's imports up, outside the time bound.)"""
    _assert_handled(BY_NAME[name], data)


# --------------------------------------------------------------------- regressions found by fuzzing


def test_reasoning_details_entry_whose_type_is_an_object_is_a_stream_error() -> None:
    """Found by ``bench/fuzz.py --minutes 2``: a ``type`` that is a dict reached a dict key in the
    same-index merge (TypeError: unhashable type)."""
    data = (b'data:{"":"","":"","choices":[{"":0,"delta":{"":"","reasoning_details":'
            b'[{"type":{"":""},"":"","index":0}]},"":null}]}')
    with pytest.raises(StreamError, match="reasoning_details entry has a type that is not text"):
        BY_NAME["openai_chat.sse"].run(data)


def test_mcp_structured_content_with_an_integer_wider_than_64_bits_is_text() -> None:
    """Found by ``bench/fuzz.py --minutes 10``: orjson refused the integer (TypeError: Integer
    exceeds 64-bit range) while the result was turned into the model's text."""
    BY_NAME["mcp.result"].run(b'{"content":[],"structuredContent":{"":[22337203336854775808,""],"n":2},"":true}')


def test_a_chat_body_with_a_nameless_call_and_an_idless_result_is_rewritten() -> None:
    """Found by ``bench/fuzz.py --only door.chat``: a call without an id maps to a wire id, and a
    ``tool`` message without ``tool_call_id`` was then looked up by it (KeyError: a 500)."""
    BY_NAME["door.chat"].run(b'{"":"","":true,"messages":[{"":"","":""},{"role":"assistant","":[null],'
                             b'"tool_calls":[{"":"","function":{"name":"l","":""}}]},{"role":"tool","":""}]}')


def test_the_run_seed_is_fresh_or_replayed() -> None:
    """The quick profile's seed comes from the environment when given, else from the OS."""
    import os
    import subprocess
    import sys

    code = "import fuzzing; print(fuzzing.SEED)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop(SEED_VAR, None)
    fresh = {subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                            check=True).stdout for _ in range(2)}
    assert len(fresh) == 2
    replay = subprocess.run([sys.executable, "-c", code], env={**env, SEED_VAR: "1234"}, capture_output=True,
                            text=True, check=True).stdout
    assert replay.strip() == "1234"


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
    from hermes.core import messages

    line = orjson.dumps({"v": 1, "role": "assistant", "parts": [
        {"kind": "reasoning", "text": "t", "origin": {"provider": "p", "host": "h", "model": "m", "wire": "gemini"},
         "native": {"type": "hermes.native_assistant"}}]})
    m = messages.loads(line)
    assert m.parts[0].native is None  # type: ignore[union-attr]
    assert messages.loads(messages.dumps(m)) == m


def test_empty_native_field_round_trips_as_absent() -> None:
    from hermes.core import messages

    line = orjson.dumps({"v": 1, "role": "assistant", "parts": [
        {"kind": "reasoning", "text": "t", "origin": {"provider": "p", "host": "h", "model": "m", "wire": "gemini"},
         "native": {"type": "hermes.native_assistant", "reasoning_opaque": "op", "reasoning_text": ""}}]})
    m = messages.loads(line)
    assert messages.loads(messages.dumps(m)) == m
