"""Tool-call id mapping as rules: whatever ids a history holds, the ids a route gets are valid for
it, the same for a call and its result, stable as the session grows, collision-free within a
request, and the stored history keeps its originals."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.builder import Builder
from hermes.core.messages import Message, ToolCall, ToolResult, dumps
from hermes.replay import ReplayPlan, plan_replay
from hermes.routing.resolve import resolve
from hermes.routing.toolids import base62, base62_prefix, extend_id_map, id_map, valid, wire_id

RULES = ("mistral", "anthropic")
_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_id = st.one_of(
    st.text(min_size=0, max_size=40),
    st.text(alphabet=_ALNUM, min_size=9, max_size=9),  # already valid for Mistral
    st.builds(lambda n, k: f"functions.{n}:{k}", st.text(alphabet="abc_", min_size=1, max_size=8),
              st.integers(0, 999)),  # Kimi
    st.builds(lambda p, t: f"{p}_{t}", st.sampled_from(["call", "toolu"]),
              st.text(alphabet=_ALNUM, min_size=8, max_size=24)),
)


@settings(max_examples=200, deadline=None)
@given(rule=st.sampled_from(RULES), ids=st.lists(_id, max_size=30))
def test_mapped_ids_are_valid_deterministic_and_collision_free(rule: str, ids: list[str]) -> None:
    mapping = id_map(rule, ids)
    sent = [mapping.get(i, i) for i in ids]
    assert all(valid(rule, s) for s in sent)
    # distinct originals never share a wire id; the same original always gets the same one
    pairs = dict(zip(ids, sent, strict=True))
    assert len(set(pairs.values())) == len(pairs)
    assert all(mapping.get(i, i) == pairs[i] for i in ids)
    # ids the rule accepts go out unchanged; the mapping is a function of the ids alone
    assert all(mapping.get(i, i) == i for i in ids if valid(rule, i))
    assert id_map(rule, ids) == mapping


@settings(max_examples=100, deadline=None)
@given(rule=st.sampled_from(RULES), ids=st.lists(_id, max_size=20), more=st.lists(_id, max_size=10))
def test_a_growing_history_keeps_the_earlier_ids(rule: str, ids: list[str], more: list[str]) -> None:
    before = id_map(rule, ids)
    after = id_map(rule, [*ids, *more])
    # stable unless a later original literally equals an earlier mapped id (a 62^9 coincidence)
    if not set(more) & set(before.values()):
        assert all(after[i] == m for i, m in before.items())


def test_wire_ids_keep_what_they_can() -> None:
    assert wire_id("anthropic", "functions.read_file:0").startswith("functions_read_file_0_")
    assert len(wire_id("mistral", "call_abc")) == 9
    assert id_map("any", ["functions.x:0"]) == {}


@settings(max_examples=60, deadline=None)
@given(ids=st.lists(_id.filter(bool), min_size=1, max_size=6, unique=True), key=st.sampled_from(["mistral", "anthropic"]))
def test_the_plan_maps_calls_and_results_alike_and_history_is_untouched(ids: list[str], key: str) -> None:
    history = [Message.user("go")]
    for i in ids:
        history += [Message("assistant", (ToolCall(i, "ls", "{}"),)), Message("tool", (ToolResult(i, "ok", "ls"),))]
    frozen = [dumps(m) for m in history]
    target = resolve(key, None, "claude-opus-5" if key == "anthropic" else "magistral-medium-2509")
    plan = plan_replay(history, target)
    calls = [p.id for pm in plan.messages for p in pm.parts if isinstance(p, ToolCall)]
    results = [p.call_id for pm in plan.messages for p in pm.parts if isinstance(p, ToolResult)]
    assert calls == results and len(set(calls)) == len(ids)
    assert all(valid(key, c) for c in calls)
    assert [dumps(m) for m in history] == frozen
    assert plan_replay(history, target).messages == plan.messages, "the same request twice: the same ids"


def test_a_clash_with_an_id_sent_unchanged_is_stepped_around() -> None:
    for rule in RULES:
        taken = wire_id(rule, "functions.ls:0")  # a valid id that another one would map onto
        mapping = id_map(rule, [taken, "functions.ls:0"])
        assert mapping["functions.ls:0"] not in (taken, "functions.ls:0")
        assert mapping["functions.ls:0"] == wire_id(rule, "functions.ls:0", 1) and valid(rule, mapping["functions.ls:0"])


@settings(max_examples=300, deadline=None)
@given(data=st.one_of(st.binary(max_size=40), st.builds(lambda k: b"\0" * k + b"\1", st.integers(0, 40))),
       width=st.integers(1, 12))
def test_the_digit_prefix_is_the_full_numbers_prefix(data: bytes, width: int) -> None:
    assert base62_prefix(data, width) == base62(data)[:width]


def test_wire_ids_are_the_ones_earlier_releases_sent() -> None:
    """A session continued after an upgrade keeps its earlier turns' wire ids."""
    assert [wire_id("mistral", "call_abc123"), wire_id("mistral", "functions.read_file:0", 1),
            wire_id("anthropic", "functions.read_file:0"), wire_id("anthropic", "..")] == [
        "3XRTHCyRQ", "v1XlJtYBD", "functions_read_file_0_b1WRx9X4", "cSBNyBsT"]


@settings(max_examples=200, deadline=None)
@given(rule=st.sampled_from(RULES), ids=st.lists(_id, max_size=20), more=st.lists(_id, max_size=10))
def test_growing_a_mapping_gives_the_whole_historys_mapping(rule: str, ids: list[str], more: list[str]) -> None:
    state = extend_id_map(rule, {}, set(), ids)
    assert state is not None and state[0] == id_map(rule, ids)
    grown = extend_id_map(rule, *state, more)
    assert grown is not None and grown[0] == id_map(rule, ids + more)


def test_a_later_id_equal_to_an_earlier_mapping_maps_the_history_again() -> None:
    """A Mistral-shaped id arriving later that equals the wire id chosen for an earlier one: the
    earlier one steps around it, as if the whole history had been mapped at once."""
    chosen = wire_id("mistral", "call_1")
    state = extend_id_map("mistral", {}, set(), ["call_1"])
    assert state is not None and state[0] == {"call_1": chosen}
    assert extend_id_map("mistral", *state, [chosen]) is None
    assert id_map("mistral", ["call_1", chosen]) == {"call_1": wire_id("mistral", "call_1", 1)}
    calls = [Message("assistant", (ToolCall(i, "read_file", "{}"),)) for i in ("call_1", chosen)]
    history = [Message.user("q"), calls[0], Message("tool", (ToolResult("call_1", "a"),)),
               calls[1], Message("tool", (ToolResult(chosen, "b"),))]
    target = resolve("mistral", None, "mistral-medium-latest")
    builder = Builder()
    builder.plan(history[:3], target)  # the first request maps call_1 to `chosen`
    def sent_ids(plan: ReplayPlan) -> list[str]:
        return [p.id if isinstance(p, ToolCall) else p.call_id for pm in plan.messages for p in pm.parts
                if isinstance(p, ToolCall | ToolResult)]

    with_memo = sent_ids(builder.plan(history, target))
    assert with_memo == sent_ids(plan_replay(history, target))
    assert with_memo == [wire_id("mistral", "call_1", 1)] * 2 + [chosen] * 2
