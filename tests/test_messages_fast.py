"""A session loads back as exactly what was appended, and malformed rows load as a clear error.

``store.codec.messages_from_rows`` turns the load query's rows into messages; it is checked
here for equal values of the same classes with every field set (``compare=False`` ones too),
and, for arbitrary (also malformed) rows, that each row it accepts stores back as that row and
each row it refuses raises ``HistoryError`` or a JSON error, never anything else."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.core.errors import HistoryError
from hermes.core.messages import (
    ROLES,
    Message,
    Reasoning,
    RouteKey,
    Text,
    ToolCall,
    ToolResult,
    message_digest,
)
from hermes.store import Store
from hermes.store.codec import messages_from_rows, part_to_row

texts = st.text(max_size=12)
origins = st.builds(RouteKey, texts, texts, texts, texts)


def same(a: Any, b: Any) -> None:
    """Equal, of the same class, and every dataclass field (``compare=False`` ones too) equal."""
    assert type(a) is type(b)
    assert a == b
    assert repr(a) == repr(b)
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        assert type(x) is type(y) and x == y, f.name
        if isinstance(x, tuple):
            for p, q in zip(x, y, strict=True):
                same(p, q)


origin_dicts = st.fixed_dictionaries({"provider": texts, "host": texts, "model": texts, "wire": texts})
odd = st.none() | st.integers(0, 3) | st.booleans() | texts | st.lists(texts, max_size=2)
datas = st.one_of(
    # the shapes the store writes, and near misses: extra keys, wrong types, other JSON, not JSON
    st.fixed_dictionaries({"origin": origin_dicts}, optional={"blob_kind": st.none() | texts | odd,
                                                              "item_id": texts | odd}),
    st.fixed_dictionaries({"origin": origin_dicts | odd}, optional={"native": odd, "extra": odd, "x": odd}),
    st.fixed_dictionaries({"id": texts | odd, "name": texts | odd}, optional={"x": odd}),
    st.fixed_dictionaries({"call_id": texts | odd}, optional={"name": texts | odd, "is_error": st.booleans() | odd}),
    st.fixed_dictionaries({}, optional={"replaced": odd, "name": odd}),
    odd,
).map(lambda d: orjson.dumps(d).decode()) | st.none() | st.sampled_from(["{", "[1,", "nul"])
part_rows = st.tuples(st.sampled_from(["text", "reasoning", "tool_call", "tool_result", "compaction", "nope"]),
                      texts, datas, st.none() | texts)
messages_rows = st.tuples(st.sampled_from([*ROLES, "robot"]), st.none() | st.binary(min_size=16, max_size=16),
                          st.lists(part_rows, max_size=3))


def as_rows(msgs: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    rows = []
    for seq, (role, digest, parts) in enumerate(msgs):
        rows += [(seq, role, digest, *p) for p in parts] or [(seq, role, digest, None, None, None, None)]
    return rows


@settings(max_examples=400, deadline=None)
@given(st.lists(messages_rows, max_size=6))
def test_rows_load_as_what_they_hold_or_as_a_clear_error(msgs: list[tuple[Any, ...]]) -> None:
    rows = as_rows(msgs)
    try:
        loaded = messages_from_rows(rows)
    except (HistoryError, orjson.JSONDecodeError):
        return
    assert [m.role for m in loaded] == [role for role, _, _ in msgs]
    assert [m.digest for m in loaded] == [digest for _, digest, _ in msgs]
    for m, (_, _, parts) in zip(loaded, msgs, strict=True):
        assert [(k, t) for k, t, *_ in map(part_to_row, m.parts)] == [(k, t) for k, t, _, _ in parts]
        for p, (_, _, _, blob) in zip(m.parts, parts, strict=True):
            assert getattr(p, "blob", None) == (blob if isinstance(p, Reasoning) else None)
    binary = [(s, r, d, k, None if t is None else t.encode(), x, None if b is None else b.encode())
              for s, r, d, k, t, x, b in rows]
    assert messages_from_rows(binary, binary=True) == loaded


def test_a_loaded_session_equals_what_was_appended() -> None:
    o = RouteKey("deepseek", "api.deepseek.com", "deepseek-v4", "openai_chat")
    turns = [[Message.user(f"q{i}"),
              Message("assistant", (Reasoning("think " * i, o), ToolCall(f"c{i}", "read_file", "{}"))),
              Message("tool", (ToolResult(f"c{i}", "out", "read_file", i % 2 == 0),)),
              Message("assistant", (Reasoning("sig", o, "s" * i, "anthropic.signature", f"rs{i}"), Text(f"a{i}")))]
             for i in range(5)]
    with Store() as store:
        sid = store.create_session(provider="deepseek", model="deepseek-v4")
        for turn in turns:
            store.append_turn(sid, turn)
        loaded = store.load(sid)
    appended = [m for turn in turns for m in turn]
    for a, b in zip(loaded, appended, strict=True):
        assert a.digest == message_digest(b)
        same(a, Message(b.role, b.parts, digest=a.digest))
