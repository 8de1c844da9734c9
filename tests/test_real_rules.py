"""Request rules that real providers enforce and our first emulators did not, each over real HTTP
against an emulator that now enforces the real rule with the real error body:

* gateways return a readable and an encrypted ``reasoning_details`` entry that share
  ``index: 0`` — both must be stored and sent back as returned (streamed and whole);
* Anthropic's ``signature_delta`` carries the whole signature: a repeated delta must not
  corrupt the stored blob;
* tool-call ids cross routes: Mistral takes only 9 characters of ``[A-Za-z0-9]``, Anthropic only
  ``^[a-zA-Z0-9_-]+$`` — ids are mapped at render time, stored history keeps the originals;
* must-echo models behind aggregators (``deepseek/*`` …) need reasoning on every tool turn, and
  a wrapped must-echo 400 teaches "pad", never "drop";
* ``hermes replay`` shows the request the session would really send, learned rejections applied.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from _cli import cli

from hermes.agent import provider
from hermes.core.messages import Message, Reasoning, ToolResult, dumps
from hermes.emulate import Emulator
from hermes.routing.resolve import Resolved, resolve
from hermes.store import Store
from hermes.wire import ToolSpec

TOOLS = (ToolSpec("ls", "List files", {"type": "object", "properties": {"path": {"type": "string"}},
                                       "required": ["path"]}),)
KEY = "test-key"


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    """Our own emulator: faults and drift set here cannot reach other tests."""
    with Emulator(["vercel", "openrouter", "anthropic", "mistral", "kimi", "deepseek", "groq"]) as e:
        yield e


def target(emu: Emulator, key: str, model: str) -> Resolved:
    return resolve(key, emu.url(key), model)


def step(emu: Emulator, r: Resolved, history: list[Message], *, stream: bool) -> tuple[Message, dict[str, Any]]:
    """One real request; (the stored turn, the body the emulator logged)."""
    name = r.route.key
    before = len(emu.requests(name))
    msg = provider.complete(r, history, tools=TOOLS, stream=stream, api_key=KEY).response.message
    logged = emu.requests(name)[before:]
    assert len(logged) == 1, "one request, no retry"
    return msg, logged[0]["body"]


def results(m: Message) -> Message:
    return Message("tool", tuple(ToolResult(c.id, "a.txt b.txt", c.name) for c in m.tool_calls))


def tool_turn(emu: Emulator, r: Resolved, question: str, *, stream: bool) -> list[Message]:
    """A history ending in an open tool loop on ``r``: question, tool call, its result."""
    h = [Message.system("You are terse."), Message.user(question)]
    msg, _ = step(emu, r, h, stream=stream)
    assert msg.tool_calls
    return [*h, msg, results(msg)]


# ---------------------------------------------------------------- reasoning_details pairs


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize(("key", "model", "kinds"), [
    ("vercel", "openai/gpt-5", ["reasoning.summary", "reasoning.encrypted"]),
    ("vercel", "google/gemini-3-pro-preview", ["reasoning.text", "reasoning.encrypted"]),
    ("openrouter", "openai/gpt-5.1", ["reasoning.summary", "reasoning.encrypted"]),
])
def test_details_sharing_index_zero_are_stored_and_sent_back_as_returned(
        emu: Emulator, key: str, model: str, kinds: list[str], stream: bool) -> None:
    r = target(emu, key, model)
    h = tool_turn(emu, r, f"what is in the workspace? ({key} {model} {stream})", stream=stream)
    [part] = [p for p in h[2].parts if isinstance(p, Reasoning)]
    stored = orjson.loads(part.blob or "[]")
    assert [e["type"] for e in stored] == kinds and [e["index"] for e in stored] == [0, 0]
    assert all(set(e) >= {"type", "format", "index"} for e in stored)
    answer, body = step(emu, r, h, stream=stream)  # the emulator verifies each pair
    assert answer.text
    sent = next(m for m in body["messages"] if m["role"] == "assistant")["reasoning_details"]
    assert orjson.dumps(sent) == part.blob.encode(), "same entries, keys and bytes as returned"


def test_streamed_and_whole_details_fold_to_the_same_stored_turn(emu: Emulator) -> None:
    """Invariant 10 on the real emulator: the same scripted turn streamed and whole."""
    r = target(emu, "vercel", "google/gemini-3-pro-preview")
    turns = []
    for stream in (False, True):
        h = [Message.user("what is in the workspace? (invariant 10)")]
        msg, _ = step(emu, r, h, stream=stream)
        turns.append(dumps(msg))
    assert turns[0] == turns[1]


# ---------------------------------------------------------------- Anthropic signature_delta


def test_a_repeated_signature_delta_is_assigned_not_appended(emu: Emulator) -> None:
    r = target(emu, "anthropic", "claude-sonnet-4-5")
    emu.state.set_control("anthropic", fault="repeat_signature", times=1)
    h = tool_turn(emu, r, "what is in the workspace? (repeat signature)", stream=True)
    [part] = [p for p in h[2].parts if isinstance(p, Reasoning)]
    sent = emu.requests("anthropic")[-1]
    assert part.blob and part.blob_kind == "anthropic.signature"
    answer, body = step(emu, r, h, stream=True)  # refused with "Invalid `signature`" if doubled
    assert answer.text
    block = body["messages"][1]["content"][0]
    assert block["type"] == "thinking" and block["signature"] == part.blob
    assert sent["body"]["stream"] is True


# ---------------------------------------------------------------- tool-call ids


def _ids(body: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for m in body.get("messages") or []:
        out += [c["id"] for c in m.get("tool_calls") or []]
        if m.get("role") == "tool":
            out.append(m["tool_call_id"])
        if isinstance(m.get("content"), list):
            out += [b.get("id") or b.get("tool_use_id") for b in m["content"]
                    if b.get("type") in ("tool_use", "tool_result")]
    return out


@pytest.mark.parametrize(("origin", "model"), [("kimi", "kimi-k2.6"), ("deepseek", "deepseek-v4-pro"),
                                               ("anthropic", "claude-sonnet-4-5")])
def test_mistral_gets_nine_character_ids_the_same_for_call_and_result(emu: Emulator, origin: str, model: str) -> None:
    h = tool_turn(emu, target(emu, origin, model), f"what is in the workspace? ({origin} → mistral)", stream=False)
    original = h[2].tool_calls[0].id
    assert len(original) != 9
    before = [dumps(m) for m in h]
    m = target(emu, "mistral", "magistral-medium-2509")
    # Mistral answers the open loop, then calls its own tool: both sides' ids in one request
    answer, body = step(emu, m, h, stream=False)
    h += [answer, Message.user("and in the parent directory?")]
    call, _ = step(emu, m, h, stream=True)
    assert call.tool_calls
    h += [call, results(call)]
    _, body2 = step(emu, m, h, stream=False)
    ids = _ids(body2)
    assert all(len(i) == 9 and i.isalnum() for i in ids)
    assert ids[0] == ids[1] == _ids(body)[0], "call and result agree, and stay the same across requests"
    assert call.tool_calls[0].id in ids, "Mistral's own id goes back unchanged"
    assert [dumps(x) for x in h[:4]] == before, "stored history keeps the original ids"
    assert h[2].tool_calls[0].id == original


def test_kimi_ids_are_mapped_for_anthropic(emu: Emulator) -> None:
    h = tool_turn(emu, target(emu, "kimi", "kimi-k2.6"), "what is in the workspace? (kimi → claude)", stream=True)
    assert ":" in h[2].tool_calls[0].id and "." in h[2].tool_calls[0].id
    a = target(emu, "anthropic", "claude-sonnet-4-5")
    answer, body = step(emu, a, h, stream=False)
    assert answer.text
    ids = _ids(body)
    assert len(ids) == 2 and ids[0] == ids[1] and ids[0].replace("_", "").replace("-", "").isalnum()
    assert ids[0].startswith("functions_ls_")


def test_unmapped_ids_are_refused_with_the_real_bodies(emu: Emulator) -> None:
    """The rules themselves, as the real services word them (what today's ids would get)."""
    import httpx

    call = {"id": "functions.ls:0", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    r = httpx.post(f"{emu.url('mistral')}/chat/completions", json={
        "model": "magistral-medium-2509", "messages": [
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "functions.ls:0", "content": "x"}]})
    assert r.status_code == 400 and r.json() == {
        "object": "error", "message": "Tool call id was functions.ls:0 but must be a-z, A-Z, 0-9, with a length of 9.",
        "type": "invalid_request_message_error", "param": None, "code": "3280"}
    r = httpx.post(f"{emu.url('anthropic')}/v1/messages", headers={"x-api-key": KEY, "anthropic-version": "2023-06-01"},
                   json={"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [
                       {"role": "user", "content": "hi"},
                       {"role": "assistant", "content": [{"type": "tool_use", "id": "functions.ls:0", "name": "ls",
                                                          "input": {}}]},
                       {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "functions.ls:0",
                                                     "content": "x"}]}]})
    assert r.status_code == 400
    assert r.json()["error"]["message"] == \
        "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"


# ---------------------------------------------------------------- must-echo behind aggregators


def test_deepseek_behind_openrouter_gets_the_pad_after_a_turn_without_reasoning(emu: Emulator) -> None:
    h = tool_turn(emu, target(emu, "mistral", "mistral-medium-latest"), "what is here? (mistral → or/deepseek)",
                  stream=False)
    assert not h[2].reasoning
    r = target(emu, "openrouter", "deepseek/deepseek-v4")
    answer, body = step(emu, r, h, stream=True)
    assert answer.text
    sent = next(m for m in body["messages"] if m["role"] == "assistant")
    assert sent["reasoning_content"] == " "
    # a model that is not must-echo on the same gateway gets no pad
    _, body = step(emu, target(emu, "openrouter", "anthropic/claude-sonnet-4.5"), h, stream=False)
    assert "reasoning_content" not in next(m for m in body["messages"] if m["role"] == "assistant")


def test_a_wrapped_must_echo_refusal_teaches_padding(emu: Emulator, hermes_home: Path, tmp_path: Path) -> None:
    """A routes.toml that forgot the model glob: the real wrapped 400 comes back, the classifier
    reads it as must-echo (not "drop reasoning_content"), pads, retries once, and remembers."""
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "routes.toml").write_text('[[route]]\nkey = "openrouter"\nmust_echo_models = []\n')
    url = emu.url("openrouter")
    model = "deepseek/deepseek-v4"
    # a session whose tool turn came from a route that returns no reasoning
    first = orjson.loads(cli(hermes_home, "chat", "--json", "--no-stream", "-q", "What is here?",
                             "-p", "mistral", "-u", emu.url("mistral"), "-m", "mistral-medium-latest",
                             cwd=tmp_path).stdout)
    before = len(emu.requests("openrouter"))
    out = orjson.loads(cli(hermes_home, "chat", "--json", "--no-stream", "--resume", first["session_id"],
                           "-q", "and now?", "-p", "openrouter", "-u", url, "-m", model, cwd=tmp_path).stdout)
    reqs = emu.requests("openrouter")[before:]
    assert out["stopped"] == "answer" and len(out["learned"]) == 1 and "reasoning_content" in out["learned"][0]
    tool_turns = [[m for m in r["body"]["messages"] if m["role"] == "assistant" and m.get("tool_calls")]
                  for r in reqs]
    assert "reasoning_content" not in tool_turns[0][0]
    assert tool_turns[1][0]["reasoning_content"] == " ", "retried with the pad, the field was not dropped"
    with Store(hermes_home / "state.db") as store:
        assert store.capabilities("openrouter", "127.0.0.1", model).get("must_echo") is True
        assert "rejected_carriers" not in store.capabilities("openrouter", "127.0.0.1", model)
    # hermes replay shows the lesson and the pad
    shown = orjson.loads(cli(hermes_home, "replay", first["session_id"], "--json").stdout)
    assert shown["learned"]["must_echo"] is True


# ---------------------------------------------------------------- hermes replay


def test_replay_applies_the_sessions_learned_rejections(emu: Emulator, hermes_home: Path, tmp_path: Path) -> None:
    url = emu.url("openrouter")
    model = "anthropic/claude-sonnet-4.5"
    emu.state.set_control("openrouter", reject_fields=["reasoning_details"])
    try:
        out = orjson.loads(cli(hermes_home, "chat", "--json", "--no-stream", "-q", "What is here?",
                               "-p", "openrouter", "-u", url, "-m", model, cwd=tmp_path).stdout)
    finally:
        emu.state.set_control("openrouter", reject_fields=[])
    assert len(out["learned"]) == 1
    sid = out["session_id"]
    shown = orjson.loads(cli(hermes_home, "replay", sid, "--json").stdout)
    assert shown["learned"]["dropped"] == ["reasoning", "reasoning_details"]
    fields = {k for m in shown["messages"] for k in m["fields"]}
    assert fields == {"reasoning_content"}, "the exact fields the next request sends"
    body = orjson.loads(cli(hermes_home, "replay", sid, "--body").stdout)
    sent = {k for m in body["messages"] if m["role"] == "assistant" for k in m}
    assert "reasoning_details" not in sent and "reasoning" not in sent
    text = cli(hermes_home, "replay", sid).stdout
    assert "learned from earlier rejections: not sending reasoning, reasoning_details" in text
