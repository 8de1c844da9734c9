"""Rejection memory end to end: emulators drifting into rejecting a carrier, over real HTTP,
driven through the real ``hermes`` CLI in fresh processes (and the Agent for the property).

An emulator personality switched into drift mode answers a replayed field with the provider's
real unknown-field error. Hermes must retry that request once without the field, remember the
lesson per (provider, host, model) in the session and the global ledger, and never send it
there again — next turn, ``--resume``, a branch, a brand-new session — while a sibling model on
the same gateway keeps the field and a must-echo route never drops ``reasoning_content``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from _cli import cli
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from hermes.core.errors import ProviderHTTPError
from hermes.core.events import LessonLearned
from hermes.core.messages import Reasoning, dumps
from hermes.emulate import Emulator
from hermes.rejections import mentions
from hermes.store import Store

MODEL = "anthropic/claude-sonnet-4.5"
SIBLING = "openai/gpt-5.1"
CARRIERS = ("reasoning_content", "reasoning", "reasoning_details")


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    """Our own emulator: drift controls are per personality, so no other test shares them."""
    with Emulator(["openrouter", "deepseek"]) as e:
        yield e


@pytest.fixture(autouse=True)
def no_drift(emu: Emulator) -> Iterator[None]:
    yield
    for name in ("openrouter", "deepseek"):
        emu.state.set_control(name, reject_fields=[], fault=None)


def assistants(req: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in req["body"]["messages"] if m.get("role") == "assistant"]


def carried(req: dict[str, Any]) -> set[str]:
    return {c for m in assistants(req) for c in CARRIERS if c in m}


def chat(emu: Emulator, home: Path, cwd: Path, *args: str, check: bool = True) -> tuple[Any, list[dict[str, Any]]]:
    """One CLI turn; returns (parsed --json output or the process, the requests it made)."""
    before = len(emu.requests())
    r = cli(home, "chat", "--json", "--no-stream", *args, cwd=cwd, check=check)
    reqs = emu.requests()[before:]
    return (orjson.loads(r.stdout) if r.returncode == 0 else r), reqs


def test_drift_is_learned_once_and_never_paid_again(emu: Emulator, hermes_home: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    url = emu.url("openrouter")
    route = ["-p", "openrouter", "-u", url]
    emu.state.set_control("openrouter", reject_fields=["reasoning_details"])

    # 1. the first rejected request is retried once, without the field, and succeeds
    out, reqs = chat(emu, hermes_home, tmp_path, "-q", "What is here?", *route, "-m", MODEL)
    sid = out["session_id"]
    assert out["stopped"] == "answer" and len(out["learned"]) == 1
    assert "reasoning_details" in out["learned"][0]
    assert len(reqs) == 3, "step 1, the rejected step 2, its one retry"
    assert carried(reqs[0]) == set()
    assert carried(reqs[1]) == set(CARRIERS)
    assert carried(reqs[2]) == {"reasoning_content"}, "R and RD dropped together; RC keeps the text"
    with Store(hermes_home / "state.db") as store:
        history = store.load(sid)
        tool_turn = next(m for m in history if m.role == "assistant" and m.tool_calls)
        details = [p for p in tool_turn.parts if isinstance(p, Reasoning) and p.blob_kind == "openrouter.details"]
        assert details, "stored history keeps the reasoning_details blob the route rejected"
        assert store.model_config(sid)["reasoning_rejections"]
        caps = store.capabilities("openrouter", "127.0.0.1", MODEL)
        assert sorted(caps["rejected_carriers"]) == ["reasoning", "reasoning_details"]

    def clean(reqs: list[dict[str, Any]]) -> None:
        assert reqs and all(not carried(r) & {"reasoning", "reasoning_details"} for r in reqs)
        assert any("reasoning_content" in carried(r) for r in reqs)

    # 2. the next turn (a --resume in a new process) sends no such field and gets no 400
    out, reqs = chat(emu, hermes_home, tmp_path, "--resume", sid, "-q", "And then?")
    assert out["learned"] == [] and len(reqs) == 2
    clean(reqs)
    # 3. a branch
    branch = orjson.loads(cli(hermes_home, "sessions", "branch", sid, "--json").stdout)["id"]
    out, reqs = chat(emu, hermes_home, tmp_path, "--resume", branch, "-q", "On the branch?")
    assert out["learned"] == [] and len(reqs) == 2
    clean(reqs)
    # 4. a brand-new session on the same (provider, host, model): the ledger, not the session
    out, reqs = chat(emu, hermes_home, tmp_path, "-q", "Fresh start?", *route, "-m", MODEL)
    assert out["session_id"] not in (sid, branch) and out["learned"] == [] and len(reqs) == 2
    clean(reqs)

    # 5. a sibling model on the same gateway keeps the field
    emu.state.set_control("openrouter", reject_fields=[])
    out, reqs = chat(emu, hermes_home, tmp_path, "-q", "Sibling?", *route, "-m", SIBLING)
    assert out["learned"] == [] and len(reqs) == 2
    assert "reasoning_details" in carried(reqs[1])

    # 6. the ledger is visible, and forgetting it brings the field back
    ledger = orjson.loads(cli(hermes_home, "routes", "learned", "--json").stdout)
    [entry] = [e for e in ledger if e["model"] == MODEL and e["kind"] == "rejected_carriers"]
    assert (entry["provider"], entry["host"], entry["kind"]) == ("openrouter", "127.0.0.1", "rejected_carriers")
    assert entry["value"] == ["reasoning", "reasoning_details"]
    assert entry["evidence"]["status"] == 400 and "reasoning_details" in entry["evidence"]["error"]
    assert abs(entry["evidence"]["time"] - time.time()) < 600
    text = cli(hermes_home, "routes", "learned").stdout
    assert "openrouter @ 127.0.0.1 / anthropic/claude-sonnet-4.5" in text and "HTTP 400" in text
    said = cli(hermes_home, "routes", "forget", "--provider", "openrouter", "--model", MODEL).stdout
    assert said.startswith("forgot ") and "ledger entr" in said and "session cop" in said
    left = orjson.loads(cli(hermes_home, "routes", "learned", "--json").stdout)
    assert not [e for e in left if e["model"] == MODEL], "every fact about that model is gone"
    out, reqs = chat(emu, hermes_home, tmp_path, "--resume", sid, "-q", "Again with details?")
    assert "reasoning_details" in carried(reqs[0]), "forgotten: the session sends the field again"


def test_must_echo_route_never_drops_reasoning_content(emu: Emulator, hermes_home: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    emu.state.set_control("deepseek", reject_fields=["reasoning_content"])
    r, reqs = chat(emu, hermes_home, tmp_path, "-q", "What is here?", "-p", "deepseek", "-u", emu.url("deepseek"),
                   "-m", "deepseek-v4-pro", check=False)
    assert r.returncode == 1, "the error is reported, not learned around"
    assert "400" in r.stderr and "reasoning_content" in r.stderr
    assert len(reqs) == 2, "no retry"
    assert "reasoning_content" in carried(reqs[1])
    learned = orjson.loads(cli(hermes_home, "routes", "learned", "--json").stdout)
    assert not [e for e in learned if e["kind"] in ("rejected_carriers", "suppressed_blobs")]
    # the drift ends: the session goes on with reasoning_content, nothing was learned to drop it
    emu.state.set_control("deepseek", reject_fields=[])
    sid = Store(hermes_home / "state.db").latest_session()
    assert sid is not None
    out, reqs = chat(emu, hermes_home, tmp_path, "--resume", sid.id, "-q", "Again?")
    assert out["stopped"] == "answer"
    assert all("reasoning_content" in m for q in reqs for m in assistants(q) if m.get("tool_calls"))


# --- property: any sequence of errors ------------------------------------------------------------

_CORPUS = [orjson.loads(p.read_bytes()) for p in sorted((Path(__file__).parent / "fixtures" / "rejections")
                                                         .glob("*.json"))]
_BODIES = [(c["status"], c["body"]) for c in _CORPUS]
_FIELD = st.sampled_from(CARRIERS)
_RANDOM = st.builds(
    lambda status, field, idx, shape: (status, shape.format(f=field, i=idx)),
    st.sampled_from([400, 404, 409, 422, 500, 502, 503]), _FIELD, st.integers(0, 6),
    st.sampled_from(['{{"error":{{"message":"unknown field `{f}`"}}}}', "messages.{i}.{f}: Extra inputs are not permitted",
                     '{{"detail":[{{"type":"extra_forbidden","loc":["body","messages",{i},"assistant","{f}"]}}]}}',
                     "{f} must not be empty", "Provider returned error", "property '{f}' is unsupported"]))
_ERROR = st.one_of(st.sampled_from(_BODIES), _RANDOM)
# per request: None = let the emulator answer; ("drift", field) = emulator drift; (status, body) = injected
_STEP = st.one_of(st.none(), st.tuples(st.just("drift"), _FIELD), _ERROR)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=st.lists(_STEP, min_size=1, max_size=8), turns=st.integers(1, 2))
def test_requests_per_turn_bounded_and_history_untouched(emu: Emulator, tmp_path: Path, plan: list[Any],
                                                         turns: int) -> None:
    """For any sequence of provider errors — emulator drift, corpus bodies, random ones — across a
    tool loop: requests per user turn ≤ 2 × model steps, and learning never changes stored bytes."""
    from hermes.agent.loop import Agent
    from hermes.routing.resolve import resolve
    from hermes.tools.builtins import ToolContext, load_toolbox
    from hermes.transport.http import HttpTransport

    queue = list(plan)

    class Scripted(HttpTransport):
        """Real HTTP to the emulator; a scheduled error is raised the way the transport raises a
        non-2xx answer (so the agent cannot tell), and drift is switched on the emulator."""

        def post_json(self, url: str, body: bytes, headers: Any, *, route: str = "") -> Any:
            step = queue.pop(0) if queue else None
            emu.state.set_control("openrouter", reject_fields=[step[1]] if step and step[0] == "drift" else [])
            sent.append(orjson.loads(body))
            if step and step[0] != "drift":
                raise ProviderHTTPError(f"{route}: HTTP {step[0]}", status=step[0], body=step[1], route=route)
            return super().post_json(url, body, headers, route=route)

    sent: list[dict[str, Any]] = []
    (tmp_path / "notes.txt").write_text("hello\n")
    db = tmp_path / f"p{time.monotonic_ns()}.db"
    with Store(db) as store:
        target = resolve("openrouter", emu.url("openrouter"), MODEL)
        sid = store.create_session(provider="openrouter", model=MODEL, base_url=emu.url("openrouter"))
        agent = Agent(store, load_toolbox(ToolContext(allow_commands=False, cwd=tmp_path)), stream=False,
                      api_key="k", transport=Scripted(), on_event=lambda e: isinstance(e, LessonLearned) and event("learned"))
        for n in range(turns):
            before = b"".join(store.export_jsonl(sid))
            stored_before = store.load(sid)
            sent.clear()
            try:
                steps = agent.run_turn(sid, f"turn {n}: what is here?", target).steps
                failed = 0
            except ProviderHTTPError:
                event("reported")
                steps = sum(m.role == "assistant" for m in store.load(sid)[len(stored_before):])
                failed = 1  # the step whose error was reported
            assert len(sent) <= 2 * (steps + failed)
            after = b"".join(store.export_jsonl(sid))
            assert after.startswith(before), "learning must never rewrite stored history"
            assert [dumps(m) for m in store.load(sid)[: len(stored_before)]] == [dumps(m) for m in stored_before]
    emu.state.set_control("openrouter", reject_fields=[])


@pytest.mark.timeout(120)
@given(st.text(max_size=3000))
@settings(max_examples=200, deadline=None)
def test_error_reading_never_backtracks_catastrophically(text: str) -> None:
    """Error bodies are attacker-shaped text: reading one must never backtrack catastrophically.
    A catastrophic pattern hangs on these inputs (the timeout catches it); its speed is
    measured in ``bench/fuzz.py``, not asserted here."""
    mentions(400, text + " unknown field (" + "a " * 2000 + ")")


def test_signature_rejection_suppresses_the_blob_by_hash_and_retries_once(emu: Emulator, tmp_path: Path) -> None:
    """A stored reasoning_details blob whose signature no longer verifies (OpenRouter passes
    Anthropic's 400 through in metadata.raw): that blob — named in the error's attempt record by the
    hash of the stored blob the planner noted when it merged it into the list — is suppressed by hash, the
    request is retried once without it, and the stored history keeps it."""
    from hermes.agent.loop import Agent
    from hermes.core.messages import Message, Text, ToolCall, ToolResult
    from hermes.replay import blob_hash
    from hermes.routing.resolve import resolve
    from hermes.tools.builtins import ToolContext, load_toolbox

    (tmp_path / "notes.txt").write_text("hello\n")
    target = resolve("openrouter", emu.url("openrouter"), MODEL)
    bad = orjson.dumps([{"type": "reasoning.text", "text": "I should read it.", "signature": "EsTAMPERED==",
                         "format": "anthropic-claude-v1", "index": 0}]).decode()
    with Store(tmp_path / "state.db") as store:
        sid = store.create_session(provider="openrouter", model=MODEL, base_url=emu.url("openrouter"))
        store.append_turn(sid, [
            Message.user("read notes.txt"),
            Message("assistant", (Reasoning("I should read it.", target.key, blob=bad, blob_kind="openrouter.details"),
                                  ToolCall("call_1", "read_file", '{"path": "notes.txt"}'))),
            Message("tool", (ToolResult("call_1", "hello", "read_file"),)),
            Message("assistant", (Text("It says hello."),)),
        ], route_key=target.key)
        before = b"".join(store.export_jsonl(sid))
        notes: list[str] = []
        agent = Agent(store, load_toolbox(ToolContext(cwd=tmp_path)), stream=True, api_key="k",
                      on_event=lambda e: notes.append(e.note) if isinstance(e, LessonLearned) else None)
        start = len(emu.requests("openrouter"))
        result = agent.run_turn(sid, "and now?", target)
        reqs = emu.requests("openrouter")[start:]
        assert result.stopped == "answer" and len(notes) == 1 and "signed reasoning" in notes[0]
        assert "reasoning_details" in assistants(reqs[0])[0]
        assert "reasoning_details" not in assistants(reqs[1])[0], "the retry drops the rejected blob"
        assert assistants(reqs[1])[0].get("reasoning") == "I should read it.", "its readable text still goes"
        assert len(reqs) == 1 + result.steps, "one retry, then every later step is clean"
        assert b"".join(store.export_jsonl(sid)).startswith(before)
        caps = store.capabilities("openrouter", "127.0.0.1", MODEL)
        assert caps["suppressed_blobs"] == [blob_hash(bad)]
