"""The fast load path gives exactly what the plain one gives.

``hermes.messages``' trusted makers build parts and messages without the dataclass
``__init__``; ``store.codec.messages_from_rows`` uses them for the common row shapes when a
session loads. Both are checked here against the plain constructors: same classes, equal
values, every field set — and, for arbitrary (also malformed) rows, the same messages or the
same error as building each row with ``part_from_row`` and ``stored_message``."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.messages import (
    ROLES,
    Message,
    Reasoning,
    RouteKey,
    Text,
    ToolCall,
    ToolResult,
    make_message,
    make_reasoning,
    make_text,
    make_tool_call,
    make_tool_result,
    message_digest,
)
from hermes.store import Store
from hermes.store.codec import messages_from_rows, part_from_row, stored_message

texts = st.text(max_size=12)
origins = st.builds(RouteKey, texts, texts, texts, texts)


def same(a: Any, b: Any) -> None:
    """Equal, of the same class, and every dataclass field (``compare=False`` ones too) equal."""
    assert type(a) is type(b)
    assert a == b
    assert repr(a) == repr(b)
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)  # an unset slot raises AttributeError
        assert type(x) is type(y) and x == y, f.name
        if isinstance(x, tuple):
            for p, q in zip(x, y, strict=True):
                same(p, q)


@given(texts)
def test_make_text_is_text(t: str) -> None:
    same(make_text(t), Text(t))


@given(texts, origins, st.none() | texts, texts, st.none() | texts)
def test_make_reasoning_is_reasoning(t: str, o: RouteKey, blob: str | None, kind: str, item: str | None) -> None:
    blob_kind = None if blob is None else kind
    made = make_reasoning(t, o, blob, blob_kind, item)
    same(made, Reasoning(t, o, blob, blob_kind, item))
    assert made.extra == {} and made.extra is not make_reasoning(t, o, blob, blob_kind, item).extra


@given(texts, texts, texts)
def test_make_tool_call_is_tool_call(i: str, n: str, a: str) -> None:
    same(make_tool_call(i, n, a), ToolCall(i, n, a))


@given(texts, texts, texts, st.booleans())
def test_make_tool_result_is_tool_result(c: str, content: str, n: str, e: bool) -> None:
    same(make_tool_result(c, content, n, e), ToolResult(c, content, n, e))


@given(st.sampled_from(ROLES), st.lists(texts.map(Text), max_size=3).map(tuple), st.none() | st.binary(min_size=16, max_size=16))
def test_make_message_is_message(role: Any, parts: tuple[Text, ...], digest: bytes | None) -> None:
    plain = Message(role, parts)
    if digest is not None:
        object.__setattr__(plain, "digest", digest)
    made = make_message(role, parts, digest)
    same(made, plain)
    assert made.digest == plain.digest


# ----------------------------------------------------------------------------- rows


def plain_load(rows: list[tuple[Any, ...]]) -> list[Message]:
    """What the store's load did before the fast path: each part through ``part_from_row``,
    each message through ``stored_message``."""
    out: list[Message] = []
    parts: list[Any] = []
    seq, role, digest = -1, "user", None
    for mseq, mrole, mdigest, kind, text, data, blob in rows:
        if mseq != seq:
            if seq >= 0:
                out.append(stored_message(role, parts, digest))
            seq, role, digest, parts = mseq, mrole, mdigest, []
        if kind is not None:
            parts.append(part_from_row(kind, text, data, blob))
    if seq >= 0:
        out.append(stored_message(role, parts, digest))
    return out


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
def test_rows_load_as_the_plain_path_loads_them(msgs: list[tuple[Any, ...]]) -> None:
    rows = as_rows(msgs)
    try:
        expected = plain_load(rows)
    except Exception as e:  # malformed rows: the same error, whatever it is
        with pytest.raises(type(e)) as got:
            messages_from_rows(rows)
        assert str(got.value) == str(e)
        return
    loaded = messages_from_rows(rows)
    assert len(loaded) == len(expected)
    for a, b in zip(loaded, expected, strict=True):
        same(a, b)
    binary = [(s, r, d, k, None if t is None else t.encode(), x, None if b is None else b.encode())
              for s, r, d, k, t, x, b in rows]
    assert messages_from_rows(binary, binary=True) == expected


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
        object.__setattr__(b, "digest", a.digest)
        same(a, b)


def test_loading_pauses_the_collector_and_gives_back_its_state() -> None:
    """The cyclic collector is off while any history is being built — four threads at once
    all see it off — and afterwards as it was: on after those loads and after a load that
    fails, still off if it was off."""
    import gc
    import threading

    from hermes.store.codec import collector_paused

    seen: list[bool] = []
    with Store() as store:
        sid = store.create_session(provider="deepseek", model="deepseek-v4")
        store.append_turn(sid, [Message.user("q"), Message("assistant", (Text("a"),))])
        with collector_paused():
            seen.append(gc.isenabled())
        assert seen == [False] and gc.isenabled()

        inside = threading.Barrier(4)

        def load() -> None:
            with collector_paused():
                inside.wait(timeout=10)  # all four inside at once
                seen.append(gc.isenabled())
            store.load(sid)

        threads = [threading.Thread(target=load) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert seen == [False] * 5 and gc.isenabled()

        gc.disable()
        try:
            assert len(store.load(sid)) == 2
            assert not gc.isenabled()
        finally:
            gc.enable()
        with pytest.raises(ValueError), collector_paused():
            raise ValueError("a load that fails")
        assert gc.isenabled()
