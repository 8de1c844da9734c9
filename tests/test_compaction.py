"""Compaction that keeps reasoning: scenarios over real HTTP against the emulators, salvage, and
properties of ``compress`` over generated histories."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.agent.compaction import (
    CompactionError,
    _walk,
    compact,
    compress,
    context_budget,
)
from hermes.agent.compactor import AutoCompactor, compress_session
from hermes.agent.loop import Agent
from hermes.builder import estimate as est
from hermes.core.history import system_prompt, window
from hermes.core.messages import (
    Compaction,
    Message,
    Reasoning,
    RouteKey,
    Text,
    ToolCall,
    ToolResult,
    dumps,
)
from hermes.replay import GEMINI_SKIP_SIGNATURE, Learned, PlannedMessage, Settings, plan_replay
from hermes.routing.resolve import resolve
from hermes.store import Store
from hermes.tools.builtins import Tool, Toolbox
from hermes.wire import ToolSpec

KEY = "sk-test-compaction-0123456789"
SCENARIOS = [
    ("anthropic", "claude-opus-4-6"),
    ("bedrock", "us.anthropic.claude-opus-4-5-20251101-v1:0"),
    ("gemini", "gemini-2.5-flash"),
    ("openai-responses", "gpt-5"),
    ("deepseek", "deepseek-v4-pro"),
    ("openrouter", "anthropic/claude-sonnet-4.5"),
]


@pytest.fixture(autouse=True)
def _aws(aws_env: None) -> None:
    """Fake AWS credentials for the Bedrock emulator (see conftest.aws_env)."""


@pytest.fixture
def store() -> Iterator[Store]:
    with Store() as s:
        yield s


def _toolbox(size: int = 6_000) -> Toolbox:
    spec = ToolSpec("list_files", "List files in a directory",
                    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    listing = "\n".join(f"src/module_{i:04d}.py  {i * 131} bytes  modified 2026-01-{i % 28 + 1:02d}"
                        for i in range(size // 48))
    return Toolbox([Tool(spec, lambda args, ctx: listing)])


def _resolved(emulator: Any, route: str, model: str) -> Any:
    return resolve(route, emulator.url(route), model)


def _bodies(emulator: Any, route: str, since: int) -> list[dict[str, Any]]:
    return [r["body"] for r in emulator.requests(route)[since:]]


def _asks_for_thinking(route: str, body: dict[str, Any]) -> bool:
    """Does this request body switch thinking on (or carry any route keep-thinking switch)?"""
    match route:
        case "anthropic":
            return body.get("thinking", {"type": "disabled"}).get("type") != "disabled"
        case "bedrock":
            extra = body.get("additionalModelRequestFields") or {}
            return extra.get("thinking", {"type": "disabled"}).get("type") != "disabled" or "reasoningConfig" in extra
        case "gemini":
            cfg = (body.get("generationConfig") or {}).get("thinkingConfig") or {}
            return bool(cfg.get("includeThoughts")) or cfg.get("thinkingBudget", 0) != 0
        case "openai-responses":
            return "reasoning" in body or "include" in body
        case "deepseek" | "openrouter":
            # DeepSeek thinks unless told otherwise: the summary call must say thinking off
            if route == "deepseek" and body.get("thinking") != {"type": "disabled"}:
                return True
            return bool({"reasoning", "reasoning_effort"} & set(body))
    raise AssertionError(route)


def _sent_reasoning(history: list[Message], resolved: Any, first: int) -> list[str]:
    """Every reasoning value (blob, signature, carrier text) the plan sends for stored messages
    from index ``first`` on, JSON-escaped as it must appear in the body."""
    out: list[str] = []
    for pm in plan_replay(history, resolved, Learned(), Settings()).messages:
        if pm.index < first:
            continue
        out += [p.blob for p in pm.parts if isinstance(p, Reasoning) and p.blob and p.blob_kind != "openrouter.details"]
        out += [s for s in pm.tool_signatures.values() if s != GEMINI_SKIP_SIGNATURE]
        out += [pm.thought_signature] if pm.thought_signature else []
        out += [v for k, v in pm.fields.items() if k in ("reasoning_content", "reasoning") and v.strip()]
        out += [e[k] for e in pm.fields.get("reasoning_details", []) for k in ("signature", "data", "text")
                if isinstance(e.get(k), str) and e[k]]
    return [orjson.dumps(v).decode()[1:-1] for v in out]


@pytest.mark.parametrize("route,model", SCENARIOS)
def test_compress_session_then_next_request_carries_retained_reasoning(
        emulator: Any, store: Store, route: str, model: str) -> None:
    resolved = _resolved(emulator, route, model)
    sid = store.create_session(provider=route, model=model)
    agent = Agent(store, _toolbox(), stream=True, api_key=KEY)
    for i in range(3):
        agent.run_turn(sid, f"turn {i}: which file in src/ is the largest?", resolved)
    before = store.load(sid)
    n0 = len(emulator.requests(route))

    line = compress_session(store, sid, resolved, api_key=KEY, budget=200_000, keep_last=2)

    # The summary call: one request, thinking off, no tools, no keep-thinking switch.
    (summary_req,) = _bodies(emulator, route, n0)
    assert "Transcript to summarise" in orjson.dumps(summary_req).decode()
    assert not _asks_for_thinking(route, summary_req)
    assert "tools" not in summary_req and "toolConfig" not in summary_req
    assert not {"reasoning_content", "reasoning_details"} & set(orjson.dumps(summary_req).decode().split('"'))
    assert line.startswith("compacted ") and "; kept " in line and "→" in line

    after = store.load(sid)
    start, win = window(after)
    assert start == len(before)  # the checkpoint is the first row of the appended turn
    cp = win[0].parts[0]
    assert isinstance(cp, Compaction) and cp.summary and cp.replaced == 4  # turn 0: user, call, tools, answer
    retained = before[4:]
    assert [dumps(m) for m in win[1:]] == [dumps(m) for m in retained]  # byte-exact, blobs included

    # The next request starts at the checkpoint and carries the retained turns' reasoning byte-exact.
    n1 = len(emulator.requests(route))
    expected = _sent_reasoning([*after, Message.user("turn 3: and the smallest?")], resolved, start)
    assert expected, "the retained turns send reasoning back on this route"
    result = agent.run_turn(sid, "turn 3: and the smallest?", resolved)
    assert result.stopped == "answer"  # accepted: the emulators verify every replayed signature
    first = orjson.dumps(_bodies(emulator, route, n1)[0]).decode()
    for blob in expected:
        assert blob in first
    old_q, kept_q = (orjson.dumps(f"turn {i}: which file in src/ is the largest?").decode() for i in (0, 1))
    assert old_q not in first and kept_q in first and cp.summary[:40] in first


@pytest.mark.parametrize("route,model", [SCENARIOS[0], SCENARIOS[3], SCENARIOS[4]])
def test_auto_compaction_inside_a_tool_loop_keeps_the_loop_and_fires_once(
        emulator: Any, store: Store, route: str, model: str) -> None:
    resolved = _resolved(emulator, route, model)
    sid = store.create_session(provider=route, model=model)
    comp = AutoCompactor(budget=10_000_000)  # learns the token factor, never fires
    agent = Agent(store, _toolbox(), stream=False, api_key=KEY, compactor=comp)
    for i in range(3):
        agent.run_turn(sid, f"turn {i}: which file in src/ is the largest?", resolved)
    factor = est.token_factor(store, resolved)
    assert factor != 1.0
    # A budget the first step of the next turn fits, but not the step after its tool result.
    text = "turn 3: and which one changed last?"
    step0 = est.estimate_history([*store.load(sid), Message.user(text)], resolved,
                                 tools=agent.toolbox.specs, factor=factor)
    comp.budget = step0 + 300
    n0 = len(emulator.requests(route))
    result = agent.run_turn(sid, text, resolved)
    assert result.stopped == "answer" and len(comp.history) == 1, comp.history
    bodies = _bodies(emulator, route, n0)
    assert len(bodies) == 3  # step 0 (tool call), the summary call, step 1 (answer) after compaction
    summary = next(b for b in bodies if "Transcript to summarise" in orjson.dumps(b).decode())
    assert not _asks_for_thinking(route, summary)
    # The request right after the compaction carries the open loop's reasoning byte-exact.
    history = store.load(sid)
    _, win = window(history)
    loop_call = [m for m in win if m.role == "assistant" and m.tool_calls][-1]
    assert win[win.index(loop_call) - 1].text == text  # the open loop of this turn was retained
    blobs = [orjson.dumps(v).decode()[1:-1] for p in loop_call.reasoning for v in (p.blob, p.text) if v]
    assert blobs
    after_compaction = orjson.dumps(bodies[bodies.index(summary) + 1]).decode()
    assert all(b in after_compaction for b in blobs)


def test_must_echo_route_still_gets_reasoning_content_on_retained_tool_turns() -> None:
    ds = resolve("deepseek", None, "deepseek-v4")
    o = ds.key
    h: list[Message] = []
    for i in range(4):
        h += [Message.user(f"q{i}"),
              Message("assistant", (Reasoning(f"thinking {i}", o), ToolCall(f"c{i}", "f", "{}"))),
              Message("tool", (ToolResult(f"c{i}", "x" * 5000, "f"),)),
              Message("assistant", (Reasoning("", o), Text(f"a{i}")))]
    tail = compress(h, ds, summarize=lambda old: "summary", budget=100_000)
    assert tail is not None and tail[1:] == h[8:] and all(a is b for a, b in zip(tail[1:], h[8:], strict=True))
    plan = plan_replay([*h, *tail], ds)
    calls = [pm for pm in plan.messages if pm.role == "assistant" and any(isinstance(p, ToolCall) for p in pm.parts)]
    assert [pm.fields["reasoning_content"] for pm in calls] == ["thinking 2", "thinking 3"]


# ----------------------------------------------------------------------------- salvage

ORIGIN = RouteKey("anthropic", "api.anthropic.com", "claude-opus-4-6", "anthropic")


def _listing(size: int) -> str:
    return "\n".join(f"src/module_{i:04d}.py  {i * 131} bytes" for i in range(size // 28 + 1))[:size]


def _session(turns: int, out_size: int = 8_000) -> list[Message]:
    h: list[Message] = []
    for i in range(turns):
        h += [Message.user(f"q{i}"),
              Message("assistant", (Reasoning(f"think {i}", ORIGIN, f"sig{i}" * 40, "anthropic.signature"),
                                    ToolCall(f"c{i}", "read_file", '{"path": "a"}'))),
              Message("tool", (ToolResult(f"c{i}", f"line {i}\n" + _listing(out_size), "read_file"),)),
              Message("assistant", (Reasoning(f"done {i}", ORIGIN, f"end{i}" * 40, "anthropic.signature"),
                                    Text(f"answer {i}")))]
    return h


def test_failed_summary_salvages_by_stubbing_old_tool_outputs_and_says_so() -> None:
    t = resolve("anthropic", None, "claude-opus-4-6")
    h = _session(6)
    whole = est.estimate_history(h, t)

    def broken(old: Any) -> str:
        raise RuntimeError("summary endpoint down")

    out = compact(h, t, summarize=broken, budget=int(whole * 0.6))
    assert out is not None and out.stubbed >= 1 and out.replaced == 0
    assert "summary call failed" in out.line and "stubbed" in out.line
    assert out.after == est.estimate_history([*h, *out.messages], t) <= int(whole * 0.6)
    # Reasoning of every kept message is the very same object; only tool outputs changed.
    for new, old in zip(out.messages[1:], h, strict=True):
        if old.role == "tool":
            continue
        assert new is old
    stubbed = [m.parts[0] for m in out.messages if m.role == "tool" and "removed by compaction" in m.parts[0].content]
    assert stubbed and all(isinstance(p, ToolResult) for p in stubbed)
    recent = [m for m in out.messages if m.role == "tool"][-2:]
    assert all("removed by compaction" not in m.parts[0].content for m in recent)  # two most recent kept


def test_nothing_shrinks_is_a_clear_error_not_a_loop() -> None:
    t = resolve("anthropic", None, "claude-opus-4-6")
    h = _session(1, out_size=100)
    with pytest.raises(CompactionError, match="cannot compact below the context budget"):
        compress(h, t, summarize=lambda old: "s", budget=50)


def test_summary_not_smaller_falls_back_to_salvage() -> None:
    t = resolve("anthropic", None, "claude-opus-4-6")
    h = _session(4)
    whole = est.estimate_history(h, t)
    out = compact(h, t, summarize=lambda old: "word " * 20_000, budget=int(whole * 0.8))
    assert out is not None and out.replaced == 0 and out.stubbed >= 1 and "not smaller" in out.line


def test_context_budget_table() -> None:
    assert context_budget(resolve("anthropic", None, "claude-opus-4-6")) == 150_000
    assert context_budget(resolve("openrouter", None, "openai/gpt-5")) == 300_000
    assert context_budget(resolve("deepseek", None, "deepseek-v4"), 50_000) == 50_000
    assert context_budget(resolve("generic", "http://x.example/v1", "mystery")) == 96_000


# ----------------------------------------------------------------------------- properties

ROUTES = [resolve("anthropic", None, "claude-opus-4-6"), resolve("anthropic", None, "claude-sonnet-4-5"),
          resolve("bedrock", "https://bedrock-runtime.us-west-2.amazonaws.com", "anthropic.claude-sonnet-4-5"),
          resolve("gemini", None, "gemini-2.5-pro"), resolve("openai-responses", None, "gpt-5"),
          resolve("deepseek", None, "deepseek-v4"), resolve("openrouter", None, "anthropic/claude-opus-4.6")]
ORIGINS = [r.key for r in ROUTES]
WORDS = st.text(st.sampled_from("ab 字\n{}"), max_size=30)


@st.composite
def histories(draw: Any) -> list[Message]:
    out: list[Message] = []
    if draw(st.booleans()):
        out += [Message.user("ancient"), Message("user", (Compaction("older summary " + draw(WORDS), 2),))]
    prompt_at = draw(st.one_of(st.none(), st.integers(0, 5)))  # `chat --system` before that turn
    for turn in range(draw(st.integers(1, 6))):
        if turn == prompt_at:
            out.append(Message.system(f"system prompt {draw(WORDS)}"))
        out.append(Message.user(f"question {turn} {draw(WORDS)}"))
        for step in range(draw(st.integers(0, 2))):
            origin = draw(st.sampled_from(ORIGINS))
            kind = {"anthropic": "anthropic.signature", "bedrock": "anthropic.signature",
                    "openai-responses": "openai.encrypted"}.get(origin.provider)
            r = Reasoning(draw(WORDS), origin, f"B{turn}{step}" * draw(st.integers(1, 60)) if kind else None, kind,
                          f"rs_{turn}_{step}")
            calls = [ToolCall(f"c{turn}{step}{i}", "read_file", '{"path": "x"}') for i in range(draw(st.integers(0, 2)))]
            out.append(Message("assistant", (r, Text(draw(WORDS)), *calls)))
            if calls:
                out.append(Message("tool", tuple(ToolResult(c.id, "z" * draw(st.sampled_from([10, 500, 3000, 9000])),
                                                            "read_file") for c in calls)))
    return out


def _summary(old: Any) -> str:
    return f"summary of {len(old)} messages"


PROPS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(histories(), st.sampled_from(ROUTES), st.floats(0.05, 1.5), st.integers(1, 3), st.sampled_from([1.0, 0.6]))
def test_compress_lands_under_budget_keeps_reasoning_and_is_idempotent(
        history: list[Message], target: Any, share: float, keep_last: int, factor: float) -> None:
    whole = est.estimate_history(history, target, factor=factor)
    budget = max(20, int(whole * share))
    try:
        out = compact(history, target, summarize=_summary, budget=budget, keep_last=keep_last, factor=factor)
    except CompactionError as e:
        assert "cannot compact below the context budget" in str(e)
        return
    if out is None:
        assert whole <= budget
        return
    new = [*history, *out.messages]
    # The tail walk's prediction is exactly the next preflight estimate, and it fits.
    w = _walk(new, target, Learned(), Settings(), (), factor)
    assert out.after == est.estimate_history(new, target, factor=factor) == w.total(w.costs)
    assert out.after <= budget and out.after < out.before
    start, win = window(new)
    assert start == len(history) and isinstance(win[0].parts[0], Compaction)
    # Retained messages: the same objects (tool outputs may be stubbed, nothing else changes).
    originals = {id(m) for m in history}
    for m in win[1:]:
        assert id(m) in originals or (m.role == "tool" and any("removed by compaction" in p.content
                                                              for p in m.parts if isinstance(p, ToolResult)))
    # A tool call is never separated from its results, and the last user turn is kept.
    calls = {c.id for m in win for c in m.tool_calls}
    assert all(p.call_id in calls for m in win for p in m.parts if isinstance(p, ToolResult))
    last_user = max(i for i, m in enumerate(history) if m.role == "user" and not isinstance(m.parts[0], Compaction))
    assert any(m is history[last_user] for m in win)
    # The system prompt in force stays in force (kept after the checkpoint, never summarised).
    assert system_prompt(new) == system_prompt(history)
    # Idempotent: compressing the output again changes nothing.
    assert compress(new, target, summarize=_summary, budget=budget, keep_last=keep_last, factor=factor) is None


@PROPS
@given(histories(), st.sampled_from(ROUTES))
def test_checkpoint_cost_is_the_planned_cost(history: list[Message], target: Any) -> None:
    """A user / tool message is priced the same wherever it sits (the walk relies on it)."""
    plan = plan_replay(history, target)
    basis = est.basis_for(target)
    for pm, m in zip(plan.messages, window(history)[1], strict=True):
        if m.role in ("user", "tool"):
            assert est.message_cost(pm, basis) == est.message_cost(PlannedMessage(0, m.role, m.parts), basis)


def test_cut_never_splits_an_interrupted_loop_from_the_next_question() -> None:
    """A loop killed before its answer ends in a tool result; the next question shares that API
    turn, so the loop stays open. Cutting at that question would start a new loop whose thinking
    the request suddenly may carry (thinking back on), and the estimate the cut was chosen by
    would be wrong. Found by the property test above."""
    bedrock, anthropic = ROUTES[2], ROUTES[0]

    def turn(tag: str, origin: Any, calls: int) -> Message:
        return Message("assistant", (Reasoning("", origin.key, f"B{tag}" * 30, "anthropic.signature", f"rs_{tag}"),
                                     Text(""), *(ToolCall(f"c{tag}{i}", "read_file", '{"path": "x"}')
                                                 for i in range(calls))))

    def results(tag: str, calls: int) -> Message:
        return Message("tool", tuple(ToolResult(f"c{tag}{i}", "z" * 10, "read_file") for i in range(calls)))

    history = [Message("user", (Text("question 0 " * 40),)), turn("0", anthropic, 0),
               Message("user", (Text("question 1"),)), turn("1", anthropic, 1), results("1", 1),  # killed here
               Message("user", (Text("question 2"),)), turn("2", bedrock, 2), results("2", 2), turn("3", bedrock, 0)]
    whole = est.estimate_history(history, bedrock)
    out = compact(history, bedrock, summarize=_summary, budget=whole, keep_last=1)
    assert out is not None
    new = [*history, *out.messages]
    assert out.after == est.estimate_history(new, bedrock)
    assert out.messages[1] is history[2]  # the cut keeps the interrupted loop whole
    assert plan_replay(new, bedrock).thinking is False  # its foreign turn still turns thinking off
