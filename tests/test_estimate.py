"""The token estimator: accuracy against bpe_openai per category, one pricing for preflight and
tail walk, parts a route will not receive at zero, and the usage factor learned over HTTP."""

from __future__ import annotations

import base64
import inspect
import json
import random
import textwrap
from typing import Any

import bpe_openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.agent.compaction import _walk
from hermes.agent.compactor import AutoCompactor, CompactContext
from hermes.agent.loop import Agent
from hermes.builder import estimate as est
from hermes.core.messages import (
    Compaction,
    Message,
    NativeRecord,
    Reasoning,
    RouteKey,
    Text,
    ToolCall,
    ToolResult,
)
from hermes.replay import Learned, Settings, plan_replay
from hermes.routing.resolve import resolve
from hermes.routing.routes import ROUTES
from hermes.store import Store
from hermes.tools.builtins import Tool, Toolbox
from hermes.wire import ToolSpec

# ----------------------------------------------------------------------------- corpus

ENGLISH = [
    "Reasoning models think before they answer. Every later request must carry that earlier "
    "reasoning back in exactly the form its provider accepts, or the model loses the thread of "
    "its own tool loop and the provider may reject the request outright.",
    "The store keeps every session in a local SQLite database. Each step - the model's answer plus "
    "the results of the tools it called - is committed in one transaction, so a crash leaves only "
    "whole steps behind. Branches copy rows but share blobs by hash.",
    *(inspect.getdoc(f) or "" for f in (json.dumps, json.loads, textwrap.wrap, textwrap.dedent, random.shuffle,
                                        inspect.getsource, base64.b64encode, str.split, dict.get, list.sort)),
]
CODE = [inspect.getsource(m) for m in (json.encoder, textwrap)] + [
    json.dumps({"files": [{"name": f"src/mod_{i}.py", "size": i * 137, "ok": i % 3 == 0} for i in range(40)]},
               indent=2),
]
CJK = [
    "推理模型在回答之前会先思考。每一次后续请求都必须把模型之前的推理以提供方接受的形式带回去，否则模型会失去上下文，"
    "工具调用的链条也会断裂。如果总结请求失败，系统会改为截断旧的大型工具输出，并明确告诉用户发生了什么。",
    "推論モデルは答える前に考えます。次のリクエストでは、モデルが以前に考えた内容を、プロバイダーが受け付ける形式の"
    "まま送り返す必要があります。東京は今日は晴れで、午後から少し風が強くなるでしょう。",
    "추론 모델은 대답하기 전에 먼저 생각합니다. 다음 요청에는 모델이 이전에 생각한 내용을 제공자가 받아들이는 형식 "
    "그대로 다시 보내야 합니다. 서울은 오늘 맑고 오후에는 바람이 조금 강해지겠습니다.",
]
_rng = random.Random(7)
BLOBS = [base64.b64encode(_rng.randbytes(n)).decode() for n in (380, 660, 1200, 1700, 4096)]
CATEGORIES = {"english": ENGLISH, "code": CODE, "cjk": CJK}


def _ratio(estimated: int, actual: int) -> float:
    return estimated / actual - 1


def _openai_targets() -> list[Any]:
    return [resolve("openai-responses", None, "gpt-5"),       # o200k
            resolve("openai", None, "gpt-4-turbo"),           # cl100k
            resolve("openrouter", None, "openai/gpt-4.1")]    # OpenAI model behind a gateway: o200k


@pytest.mark.parametrize("target", _openai_targets(), ids=lambda t: f"{t.route.key}:{t.model}")
def test_estimate_within_10_percent_of_bpe_on_openai_routes(target: Any, capsys: pytest.CaptureFixture[str]) -> None:
    basis = est.basis_for(target)
    assert basis.encoding is not None
    enc = bpe_openai.get_encoding(basis.encoding)
    report = []
    for name, texts in CATEGORIES.items():
        ours = sum(est.count_text(t, basis) for t in texts)
        real = sum(len(enc.encode_ordinary(t)) for t in texts)
        report.append(f"{name} {_ratio(ours, real):+.1%}")
        assert abs(_ratio(ours, real)) <= 0.10, (name, ours, real)
    # Blobs are priced as blobs (ceil(len/1.4)) wherever they travel: a reasoning signature.
    ours = sum(est.count_blob(b) for b in BLOBS)
    real = sum(len(enc.encode_ordinary(b)) for b in BLOBS)
    report.append(f"base64 {_ratio(ours, real):+.1%}")
    assert abs(_ratio(ours, real)) <= 0.10
    with capsys.disabled():
        print(f"\n  accuracy {target.route.key}:{target.model} [{basis.label}]: " + ", ".join(report))


@pytest.mark.parametrize("family", ["o200k", "cl100k"])
def test_calibrated_text_model_tracks_its_encoding(family: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The ratio path (routes without an offline tokenizer) against the encoding it was fitted to."""
    basis = est.Basis(None, est.FAMILIES[family])
    enc = bpe_openai.get_encoding(f"{family}_base")
    report = []
    for name, texts in {**CATEGORIES, "base64-in-text": [f"image: {b}" for b in BLOBS]}.items():
        ours = sum(est.count_text(t, basis) for t in texts)
        real = sum(len(enc.encode_ordinary(t)) for t in texts)
        report.append(f"{name} {_ratio(ours, real):+.1%}")
        assert abs(_ratio(ours, real)) <= 0.15, (name, ours, real)
    with capsys.disabled():
        print(f"\n  text model {family}: " + ", ".join(report))


def test_basis_rule() -> None:
    assert est.basis_for(resolve("openai-responses", None, "gpt-5")).encoding == "o200k_base"
    assert est.basis_for(resolve("openai-responses", None, "some-future-model")).encoding == "o200k_base"
    assert est.basis_for(resolve("openrouter", None, "openai/gpt-5-mini")).encoding == "o200k_base"
    assert est.basis_for(resolve("openai", None, "gpt-3.5-turbo")).encoding == "cl100k_base"
    assert est.basis_for(resolve("openrouter", None, "anthropic/claude-sonnet-4.5")).label == "ratio:cl100k"
    assert est.basis_for(resolve("anthropic", None, "claude-opus-4-6")).label == "ratio:cl100k"
    assert est.basis_for(resolve("deepseek", None, "deepseek-v4")).label == "ratio:o200k"
    assert est.basis_for(resolve("gemini", None, "gemini-2.5-pro")).label == "ratio:o200k"


def test_long_text_is_encoded_in_chunks() -> None:
    basis = est.basis_for(resolve("openai-responses", None, "gpt-5"))
    text = ("The quick brown fox jumps over the lazy dog. " * 40_000)  # 1.8M chars: too long for one call
    n = est.count_text(text, basis)
    one = len(bpe_openai.get_encoding("o200k_base").encode_ordinary("The quick brown fox jumps over the lazy dog. " * 1000))
    assert abs(n - one * 40) <= 40


# ----------------------------------------------------------------------------- what is priced

ANT = RouteKey("anthropic", "api.anthropic.com", "claude-opus-4-6", "anthropic")
SIG = base64.b64encode(random.Random(1).randbytes(600)).decode()


def test_blob_the_route_will_not_receive_costs_nothing() -> None:
    signed = Message("assistant", (Reasoning("let me think", ANT, SIG, "anthropic.signature"), Text("hi")))
    h = [Message.user("q"), signed]
    own = est.estimate_history(h, resolve("anthropic", None, "claude-opus-4-6"))
    plain = est.estimate_history([Message.user("q"), Message("assistant", (Text("hi"),))],
                                 resolve("anthropic", None, "claude-opus-4-6"))
    assert own - plain >= len(SIG) / 1.4  # the signature goes back: priced as a blob
    # Sent to another model / route, the signature is dropped by the planner: priced at zero.
    for other in (resolve("anthropic", None, "claude-opus-4-5"), resolve("deepseek", None, "deepseek-v4"),
                  resolve("openai-responses", None, "gpt-5")):
        cost = est.estimate_history(h, other)
        bare = est.estimate_history([Message.user("q"), Message("assistant", (Text("hi"),))], other)
        assert cost - bare < 40, other.route.key  # at most the readable thinking text


def test_rows_before_the_latest_checkpoint_cost_nothing() -> None:
    t = resolve("gemini", None, "gemini-2.5-pro")
    old = [Message.user("x " * 5000), Message("assistant", (Text("y " * 5000),))]
    tail = [Message("user", (Compaction("summary"),)), Message.user("q")]
    assert est.estimate_history([*old, *tail], t) == est.estimate_history(tail, t)


def test_prompt_token_spellings() -> None:
    assert est.prompt_tokens({"input_tokens": 10, "cache_read_input_tokens": 5, "cache_creation_input_tokens": 1}) == 16
    assert est.prompt_tokens({"prompt_tokens": 7, "completion_tokens": 3}) == 7
    assert est.prompt_tokens({"inputTokens": 9, "cacheReadInputTokens": 2}) == 11
    assert est.prompt_tokens({"promptTokenCount": 4}) == 4
    assert est.prompt_tokens({"output_tokens": 4}) is None


# ----------------------------------------------------------------------------- properties

MODELS = ["m-1", "claude-opus-4-6"]


def _target(key: str, model: str) -> Any:
    row = next(r for r in ROUTES if r.key == key)
    return resolve(key, None if row.base_url else "http://127.0.0.1:9/v1", model)


TARGETS = st.builds(_target, st.sampled_from([r.key for r in ROUTES]), st.sampled_from(MODELS))
ORIGINS = st.builds(lambda t: t.key, st.builds(_target, st.sampled_from(
    ["deepseek", "openrouter", "anthropic", "bedrock", "gemini", "openai-responses", "copilot"]), st.sampled_from(MODELS)))
WORDS = st.text(st.sampled_from("abc 漢字\n{}\":"), max_size=60)
BLOB = st.text(st.sampled_from("ABCxyz0189+/="), min_size=1, max_size=120)


@st.composite
def reasoning(draw: Any) -> Reasoning:
    kind = draw(st.sampled_from([None, "anthropic.signature", "anthropic.redacted", "openai.encrypted",
                                 "openrouter.details"]))
    blob = None
    if kind == "openrouter.details":
        blob = json.dumps([{"type": "reasoning.text", "text": draw(WORDS), "signature": draw(BLOB)}])
    elif kind:
        blob = draw(BLOB)
    native = None
    if draw(st.booleans()):
        native = NativeRecord(thought_signature=draw(st.one_of(st.none(), BLOB)),
                              tool_signatures=(("c0", draw(BLOB)),) if draw(st.booleans()) else (),
                              reasoning_opaque=draw(st.one_of(st.none(), BLOB)))
    return Reasoning(draw(WORDS), draw(ORIGINS), blob, kind, "rs_1" if draw(st.booleans()) else None, native)


@st.composite
def histories(draw: Any) -> list[Message]:
    out: list[Message] = []
    if draw(st.booleans()):
        out += [Message.user("old"), Message("user", (Compaction(draw(WORDS), 3),))]
    for turn in range(draw(st.integers(1, 4))):
        out.append(Message.user(f"question {turn} {draw(WORDS)}"))
        for _ in range(draw(st.integers(0, 2))):
            calls = [ToolCall(f"c{i}", "read_file", json.dumps({"path": draw(WORDS)})) for i in range(draw(st.integers(0, 2)))]
            out.append(Message("assistant", (*draw(st.lists(reasoning(), max_size=2)), Text(draw(WORDS)), *calls)))
            if calls:
                out.append(Message("tool", tuple(ToolResult(c.id, draw(WORDS) * draw(st.integers(1, 50)), "read_file")
                                                 for c in calls)))
    return out


TOOLS = [ToolSpec("read_file", "Read a text file.", {"type": "object", "properties": {"path": {"type": "string"}}})]
FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(histories(), TARGETS, st.sampled_from([1.0, 0.37, 2.5]), st.booleans())
def test_preflight_equals_tail_walk(history: list[Message], target: Any, factor: float, with_tools: bool) -> None:
    tools = TOOLS if with_tools else []
    preflight = est.estimate_history(history, target, tools=tools, factor=factor)
    w = _walk(history, target, Learned(), Settings(), tools, factor)  # compaction's walk of the window
    walk = [w.total(w.costs[i:]) for i in range(len(w.costs))]  # the request keeping the window from i on
    assert walk[0] == preflight
    assert walk == sorted(walk, reverse=True)  # dropping older messages never costs more
    plan = plan_replay(history, target, Learned())
    assert est.estimate_plan(plan, tools=tools, factor=factor) == preflight


# ----------------------------------------------------------------------------- usage feedback

KEY = "sk-test-estimate-0123456789"


def _echo_tool() -> Toolbox:
    spec = ToolSpec("list_files", "List files in a directory",
                    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    return Toolbox([Tool(spec, lambda args, ctx: "\n".join(f"file_{i}.py  {i * 97} bytes" for i in range(60)))])


class Recorder(AutoCompactor):
    """An AutoCompactor that also records (predicted, reported) per request."""

    def __init__(self) -> None:
        super().__init__(budget=10_000_000)
        self.pairs: list[tuple[int, int]] = []
        self._predicted = 0

    def before_request(self, ctx: CompactContext, resolved: Any, history: list[Message],
                       pending: list[Message], **kw: Any) -> list[Message]:
        out = super().before_request(ctx, resolved, history, pending, **kw)
        self._predicted = est.estimate_history([*out, *pending], resolved, tools=ctx.tools,
                                               factor=est.token_factor(ctx.store, resolved))
        return out

    def after_request(self, ctx: CompactContext, resolved: Any, exchange: Any) -> None:
        super().after_request(ctx, resolved, exchange)
        reported = est.prompt_tokens(exchange.response.usage)
        assert reported is not None
        self.pairs.append((self._predicted, reported))


@pytest.mark.parametrize("route,model", [("openai-responses", "gpt-5"), ("gemini", "gemini-2.5-flash"),
                                         ("anthropic", "claude-opus-4-6")])
def test_usage_factor_converges_within_three_turns(emulator: Any, route: str, model: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    resolved = resolve(route, emulator.url(route), model)
    rec = Recorder()
    with Store() as store:
        sid = store.create_session(provider=route, model=model)
        agent = Agent(store, _echo_tool(), stream=False, api_key=KEY, compactor=rec)
        for i in range(4):
            agent.run_turn(sid, f"turn {i}: list the files in src/ and tell me which is largest", resolved)
        errors = [p / r - 1 for p, r in rec.pairs]
        cap = store.capabilities(resolved.key.provider, resolved.key.host, model)[est.FACTOR_KIND]
    assert cap["basis"] == est.VERSION
    # Turn 1 starts from factor 1.0; from the third turn on (requests 5-8) prediction is within 10 %.
    assert all(abs(e) <= 0.10 for e in errors[4:]), errors
    with capsys.disabled():
        print(f"\n  factor {route}: {cap['factor']:.3f}; prediction error per request: "
              + " ".join(f"{e:+.0%}" for e in errors))


def test_factor_of_another_basis_is_ignored_and_replaced() -> None:
    resolved = resolve("gemini", None, "gemini-2.5-pro")
    k = resolved.key
    with Store() as store:
        store.learn(k.provider, k.host, k.model, est.FACTOR_KIND, {"factor": 3.0, "basis": "est-0"}, {})
        assert est.token_factor(store, resolved) == 1.0
        assert est.observe_usage(store, resolved, 1000, {"input_tokens": 1200}) == 1.2
        assert est.token_factor(store, resolved) == 1.2
        f = est.observe_usage(store, resolved, 1000, {"input_tokens": 1000})
        assert f == pytest.approx(0.3 * 1.2 + 0.7 * 1.0)


_TEXTY = st.lists(st.sampled_from([*"abcXYZ019 \n\t.,:;!?-_/+=()[]{}\"'#*", "....", "          ", "é", "中"]),
                  max_size=120).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_TEXTY, st.text(max_size=200),
                 st.builds(lambda a, b, c: a + b + c, _TEXTY, st.sampled_from(["a" * 16, "Ab1" * 30, "!" * 9, ""]),
                           _TEXTY)))
def test_fast_ascii_count_equals_the_regex_definition(text: str) -> None:
    """The byte-operation counter is an optimisation only: every text prices exactly as the
    regex definition prices it, in every family."""
    # a probe model whose weights keep every count apart (words, digits, punct runs, newlines,
    # space runs, long-word letters), so a wrong count cannot hide in the rounding
    probe = est.TextModel("probe", 1, 1e3, 1e6, 1e9, 1e12, 0, 0, 1e15)
    for m in [*est.FAMILIES.values(), probe]:
        assert est._model_count(text, m) == est._regex_count(text, m)
