"""Responses API (OpenAI and xAI): the wire against the emulators, over real HTTP.

The emulators are checked against the official ``openai`` SDK first (it parses every body and
every streamed event), then Hermes runs real tool loops through ``provider.complete`` and the
tests read what actually went over the wire from the emulator's request log.
"""

from __future__ import annotations

from typing import Any

import openai
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.agent import provider
from hermes.core.errors import ProviderHTTPError, StreamError, UnsupportedPart
from hermes.core.messages import Message, Reasoning, RouteKey, Text, ToolCall, ToolResult
from hermes.core.stream import fold
from hermes.emulate.openai_responses import partial_blob, stream_events
from hermes.replay import PlannedMessage, ReplayPlan, Settings, plan_replay
from hermes.routing.resolve import resolve
from hermes.wire import ToolSpec
from hermes.wire import openai_responses as wire

KEY = "sk-test-responses-0123456789"
TOOLS = [ToolSpec("list_files", "List files in a directory",
                  {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})]
SDK_TOOLS: list[Any] = [{"type": "function", "name": "list_files", "description": "List files",
                         "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                        "required": ["path"]}}]


def _client(emulator: Any, name: str = "openai-responses") -> openai.OpenAI:
    return openai.OpenAI(base_url=emulator.url(name), api_key=KEY, max_retries=0)


def _since(emulator: Any, name: str, n: int) -> list[dict[str, Any]]:
    return [r["body"] for r in emulator.requests(name)[n:]]


# ----------------------------------------------------------------------------- SDK fidelity


@pytest.mark.parametrize("name", ["openai-responses", "xai-responses"])
def test_sdk_parses_responses_and_rejects_status_on_replayed_items(emulator: Any, name: str) -> None:
    c = _client(emulator, name)
    r = c.responses.create(model="gpt-5", input="list my files", tools=SDK_TOOLS, store=False,
                           include=["reasoning.encrypted_content"], reasoning={"summary": "auto"})
    assert [o.type for o in r.output] == ["reasoning", "function_call"]
    rs, fc = r.output
    assert rs.type == "reasoning" and fc.type == "function_call"
    assert rs.encrypted_content and rs.summary and rs.id.startswith("rs_")
    assert rs.encrypted_content.startswith("gAAAAA") == (name == "openai-responses")
    assert r.usage is not None and r.usage.output_tokens_details.reasoning_tokens > 0
    # Replaying the SDK's output objects as-is carries `status`: the real API says no.
    items = [{"role": "user", "content": "list my files"}, *(o.model_dump(exclude_none=True) for o in r.output),
             {"type": "function_call_output", "call_id": fc.call_id, "output": "a.txt"}]
    with pytest.raises(openai.BadRequestError) as e:
        c.responses.create(model="gpt-5", input=items, tools=SDK_TOOLS, store=False)
    assert e.value.body == {"message": "Unknown parameter: 'input[1].status'.", "type": "invalid_request_error",
                            "param": "input[1].status", "code": "unknown_parameter"}
    for it in items:
        it.pop("status", None)
    r2 = c.responses.create(model="gpt-5", input=items, tools=SDK_TOOLS, store=False)
    assert r2.output[-1].type == "message" and "1 tool result" in r2.output_text


def test_sdk_stream_events_in_recorded_order(emulator: Any) -> None:
    c = _client(emulator)
    with c.responses.create(model="gpt-5", input="list my files", tools=SDK_TOOLS, store=False,
                            reasoning={"summary": "auto"}, stream=True) as s:
        events = list(s)
    types = [e.type for e in events]
    assert types[:5] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.reasoning_summary_part.added", "response.reasoning_summary_text.delta"]
    assert types[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    added = [e for e in events if e.type == "response.output_item.added"]
    done = [e for e in events if e.type == "response.output_item.done"]
    assert [e.item.type for e in added] == [e.item.type for e in done] == ["reasoning", "function_call"]
    partial, full = added[0].item.encrypted_content, done[0].item.encrypted_content
    assert partial and full and full.startswith(partial) and partial != full
    summary = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
    assert summary == done[0].item.summary[0].text
    completed = events[-1]
    assert completed.type == "response.completed" and completed.response.usage is not None


def test_sdk_sees_unknown_top_level_and_item_parameters(emulator: Any) -> None:
    c = _client(emulator)
    with pytest.raises(openai.BadRequestError) as e:
        c.responses.create(model="gpt-5", input="hi", extra_body={"reasoning_content": "x"})
    assert e.value.body["code"] == "unknown_parameter" and e.value.body["param"] == "reasoning_content"
    with pytest.raises(openai.BadRequestError) as e:
        c.responses.create(model="gpt-5", input=[{"role": "user", "content": "hi", "metadata": {}}])  # type: ignore[list-item]
    assert e.value.body["message"] == "Unknown parameter: 'input[0].metadata'."


# ----------------------------------------------------------------------------- tool loops


def _loop(emulator: Any, name: str, model: str, *, stream: bool, history: list[Message] | None = None,
          user: str = "what is in my workspace?") -> tuple[list[Message], list[dict[str, Any]]]:
    """One user turn run to its answer through provider.complete; returns history and bodies sent."""
    resolved = resolve(name, emulator.url(name), model)
    history = [*(history or [Message.system("You are terse.")]), Message.user(user)]
    start = len(emulator.requests(name))
    for _ in range(4):
        ex = provider.complete(resolved, history, tools=TOOLS, stream=stream, api_key=KEY)
        history.append(ex.response.message)
        calls = ex.response.message.tool_calls
        if not calls:
            assert ex.response.finish_reason == "stop"
            break
        assert ex.response.finish_reason == "tool_calls"
        history.append(Message("tool", tuple(ToolResult(c.id, "a.txt b.txt", c.name) for c in calls)))
    else:  # pragma: no cover - the scripted model answers after one tool result
        raise AssertionError("tool loop did not end")
    return history, _since(emulator, name, start)


def _reasoning_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in body["input"] if i.get("type") == "reasoning"]


@pytest.mark.parametrize("stream", [False, True])
def test_tool_loop_replays_reasoning_items_byte_exact(emulator: Any, stream: bool) -> None:
    history, bodies = _loop(emulator, "openai-responses", "gpt-5", stream=stream)
    assert len(bodies) == 2
    first, second = bodies
    assert first["store"] is False and first["include"] == ["reasoning.encrypted_content"]
    assert first["reasoning"] == {"summary": "auto"} and first["stream"] is stream
    assert _reasoning_items(first) == []
    stored = [p for m in history for p in m.reasoning]
    assert len(stored) == 2 and all(p.blob_kind == "openai.encrypted" for p in stored)
    assert all(p.origin == RouteKey("openai-responses", "127.0.0.1", "gpt-5", "openai_responses") for p in stored)
    assert stored[0].text.startswith("The user asked")
    inp = second["input"]
    idx = next(n for n, i in enumerate(inp) if i.get("type") == "reasoning")
    assert inp[idx] == {"type": "reasoning", "id": stored[0].item_id,
                        "summary": [{"type": "summary_text", "text": stored[0].text}],
                        "encrypted_content": stored[0].blob}
    assert inp[idx + 1]["type"] == "function_call" and inp[idx + 2]["type"] == "function_call_output"
    assert all("status" not in i and "id" not in i for i in inp if i.get("type") != "reasoning")
    # Second user turn: both earlier reasoning items ride along, each before its follower.
    history, bodies = _loop(emulator, "openai-responses", "gpt-5", stream=stream, history=history,
                            user="and in the parent directory?")
    items = _reasoning_items(bodies[-1])
    assert [i["id"] for i in items] == [p.item_id for m in history[:-1] for p in m.reasoning]
    assert [i["encrypted_content"] for i in items] == [p.blob for m in history[:-1] for p in m.reasoning]
    assert history[-1].text.startswith("Done (gpt-5)")


def test_xai_tool_loop_streams_and_replays(emulator: Any) -> None:
    history, bodies = _loop(emulator, "xai-responses", "grok-4", stream=True)
    blob = history[2].reasoning[0].blob
    assert blob and not blob.startswith("gAAAAA")
    assert _reasoning_items(bodies[1])[0]["encrypted_content"] == blob


def test_stream_keeps_full_blob_from_output_item_done_not_the_partial(emulator: Any) -> None:
    name = "openai-responses"
    resolved = resolve(name, emulator.url(name), "gpt-5")
    history = [Message.user("list my files")]
    seen: list[Any] = []
    ex = provider.complete(resolved, history, tools=TOOLS, stream=True, api_key=KEY, on_delta=seen.append)
    part = ex.response.message.reasoning[0]
    assert part.blob is not None
    # Deltas before output_item.done carried no blob; the one that did is the whole token.
    blobs = [d.blob for d in seen if getattr(d, "blob", None)]
    assert blobs == [part.blob]
    call = ex.response.message.tool_calls[0]
    tool = Message("tool", (ToolResult(call.id, "a.txt"),))
    # The emulator sent a partial prefix in output_item.added; replaying that is rejected...
    partial = Message("assistant", (Reasoning(part.text, part.origin, partial_blob(part.blob), part.blob_kind,
                                              part.item_id), call))
    with pytest.raises(ProviderHTTPError) as e:
        provider.complete(resolved, [*history, partial, tool], tools=TOOLS, api_key=KEY)
    assert e.value.status == 400
    assert e.value.json()["error"]["code"] == "invalid_encrypted_content"
    assert "could not be verified" in e.value.json()["error"]["message"]
    # ...while the stored (full) one is accepted.
    ok = provider.complete(resolved, [*history, ex.response.message, tool], tools=TOOLS, api_key=KEY)
    assert ok.response.finish_reason == "stop"


# A reasoning item goes back only to the model that made it: sibling variants of one family
# included (docs/replay.md, "Why a sibling variant's Responses item is not sent").
SWITCHES = [("gpt-5", "gpt-5-mini"), ("gpt-5.1", "gpt-5.1-codex"), ("gpt-5.6-sol", "gpt-5.6-luna"),
            ("o4-mini", "gpt-5")]


@pytest.mark.parametrize(("made_by", "sent_to"), SWITCHES)
def test_switching_models_sends_no_foreign_encrypted_item(emulator: Any, made_by: str, sent_to: str) -> None:
    name = "openai-responses"
    history, _ = _loop(emulator, name, made_by, stream=False)
    made = [p for m in history for p in m.reasoning]
    # Mid-loop switch: one model made the call, the other continues the same loop.
    other = resolve(name, emulator.url(name), sent_to)
    open_loop = [*history, Message.user("again please")]
    ex = provider.complete(resolve(name, emulator.url(name), made_by), open_loop, tools=TOOLS, api_key=KEY)
    call = ex.response.message.tool_calls[0]
    open_loop += [ex.response.message, Message("tool", (ToolResult(call.id, "c.txt"),))]
    start = len(emulator.requests(name))
    done = provider.complete(other, open_loop, tools=TOOLS, api_key=KEY)
    body = _since(emulator, name, start)[0]
    assert _reasoning_items(body) == [] and body["model"] == sent_to
    assert any(i.get("type") == "function_call" and i["call_id"] == call.id for i in body["input"])
    assert done.response.finish_reason == "stop"
    assert all(d.action == "drop" for m in done.plan.messages for d in m.decisions)
    # The emulator binds blobs to the model: had one gone, it would have been refused...
    c = _client(emulator)
    rs = made[0]
    assert rs.item_id and rs.blob

    def replay(model: str) -> Any:
        return c.responses.create(model=model, store=False, input=[
            {"role": "user", "content": "x"},
            {"type": "reasoning", "id": rs.item_id, "summary": [], "encrypted_content": rs.blob},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "y"}]}])

    with pytest.raises(openai.BadRequestError) as e:
        replay(sent_to)
    assert e.value.body["code"] == "invalid_encrypted_content"
    assert e.value.body["message"] == f"The encrypted content {rs.blob[:4]}...{rs.blob[-4:]} could not be verified."
    # ...while the model that made it takes it back.
    assert replay(made_by).status == "completed"


OPENAI_MODELS = st.sampled_from(["gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5-codex", "gpt-5.1", "gpt-5.1-codex",
                                 "gpt-5.1-codex-mini", "gpt-5.5", "gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna",
                                 "o3", "o4-mini"])


@settings(max_examples=120, deadline=None)
@given(OPENAI_MODELS, OPENAI_MODELS, st.booleans())
def test_a_reasoning_item_goes_only_to_the_model_that_made_it(made_by: str, sent_to: str, in_loop: bool) -> None:
    """Never to another model, sibling variant or not; always to its own inside the open loop."""
    target = resolve("openai-responses", "https://api.openai.com/v1", sent_to)
    origin = resolve("openai-responses", "https://api.openai.com/v1", made_by).key
    rs = Reasoning("I will look.", origin, "gAAAAABblob", "openai.encrypted", "rs_1")
    history = [Message.user("list my files"), Message("assistant", (rs, ToolCall("call_1", "list_files", "{}"))),
               Message("tool", (ToolResult("call_1", "a.txt"),))]
    if not in_loop:
        history += [Message("assistant", (Text("Done."),)), Message.user("thanks")]
    body = wire.to_wire(plan_replay(history, target), tools=TOOLS, stream=False)
    sent = _reasoning_items(body)
    if made_by != sent_to:
        assert sent == []
    elif in_loop:
        assert sent == [{"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "I will look."}],
                         "encrypted_content": "gAAAAABblob"}]
    assert all(i["encrypted_content"] == "gAAAAABblob" for i in sent)


def test_openrouter_history_goes_to_responses_without_foreign_reasoning(emulator: Any) -> None:
    name = "openai-responses"
    orr = RouteKey("openrouter", "openrouter.ai", "openai/gpt-5", "openai_chat")
    details = orjson.dumps([{"type": "reasoning.encrypted", "data": "gAAAAABforeign", "id": "rs_x",
                             "format": "openai-responses-v1", "index": 0}]).decode()
    history = [
        Message.user("list my files"),
        Message("assistant", (Reasoning("I will look.", orr, details, "openrouter.details"),
                              Reasoning("", orr, "gAAAAABforeignblob", "openai.encrypted", "rs_foreign"),
                              ToolCall("call_1", "list_files", '{"path": "."}'))),
        Message("tool", (ToolResult("call_1", "a.txt"),)),
    ]
    start = len(emulator.requests(name))
    ex = provider.complete(resolve(name, emulator.url(name), "gpt-5"), history, tools=TOOLS, api_key=KEY,
                           stream=True)
    body = _since(emulator, name, start)[0]
    assert _reasoning_items(body) == []
    assert "foreign" not in orjson.dumps(body).decode()
    assert [i.get("type", "message") for i in body["input"]] == ["message", "function_call", "function_call_output"]
    assert ex.response.finish_reason == "stop"


def test_missing_reasoning_is_accepted_but_orphan_reasoning_is_not(emulator: Any) -> None:
    c = _client(emulator)
    r = c.responses.create(model="gpt-5", input="list my files", tools=SDK_TOOLS, store=False)
    rs, fc = r.output
    assert rs.type == "reasoning" and fc.type == "function_call"
    call = {"type": "function_call", "call_id": fc.call_id, "name": fc.name, "arguments": fc.arguments}
    out = {"type": "function_call_output", "call_id": fc.call_id, "output": "a.txt"}
    ok = c.responses.create(model="gpt-5", input=[{"role": "user", "content": "list my files"}, call, out],
                            tools=SDK_TOOLS, store=False)
    assert ok.status == "completed"
    item = {"type": "reasoning", "id": rs.id, "summary": [], "encrypted_content": rs.encrypted_content}
    with pytest.raises(openai.BadRequestError) as e:
        c.responses.create(model="gpt-5", input=[{"role": "user", "content": "list my files"}, item, out],
                           tools=SDK_TOOLS, store=False)
    assert e.value.body["message"] == (f"Item '{rs.id}' of type 'reasoning' was provided without its "
                                       "required following item.")


def test_to_wire_never_sends_reasoning_without_its_follower() -> None:
    resolved = resolve("openai-responses", "https://api.openai.com/v1", "gpt-5")
    rs = Reasoning("t", resolved.key, "gAAAAABx", "openai.encrypted", "rs_1")
    plan = ReplayPlan(resolved, (PlannedMessage(0, "user", (Text("hi"),)),
                                 PlannedMessage(1, "assistant", (rs,))), {}, True)
    with pytest.raises(UnsupportedPart, match="without its required following item"):
        wire.to_wire(plan, tools=(), stream=False)
    text_only = PlannedMessage(1, "assistant", (Reasoning("t", resolved.key), Text("x")))
    with pytest.raises(UnsupportedPart):
        wire.to_wire(ReplayPlan(resolved, (text_only,), {}, True))
    assert wire.endpoint(resolved, stream=True)[0] == "https://api.openai.com/v1/responses"


def test_to_wire_effort_and_thinking_off() -> None:
    resolved = resolve("openai-responses", "https://api.openai.com/v1", "gpt-5")
    history = [Message.system("be brief"), Message.user("hi")]
    on = wire.to_wire(plan_replay(history, resolved, settings=Settings(effort="low")), tools=TOOLS,
                      settings=Settings(effort="low"), stream=True)
    assert on["reasoning"] == {"effort": "low", "summary": "auto"}
    assert on["input"] == [{"role": "system", "content": [{"type": "input_text", "text": "be brief"}]},
                           {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]
    assert on["tools"] == [{"type": "function", "name": "list_files", "description": "List files in a directory",
                            "parameters": dict(TOOLS[0].parameters)}]
    off = wire.to_wire(plan_replay(history, resolved, settings=Settings(thinking=False)),
                       settings=Settings(thinking=False))
    assert "reasoning" not in off and "include" not in off and off["store"] is False


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("fault", ["truncate", "malformed", "failed"])
def test_broken_streams_raise_stream_error(emulator: Any, fault: str) -> None:
    name = "openai-responses"
    resolved = resolve(name, emulator.url(name), "gpt-5")
    emulator.state.set_control(name, fault=fault)
    with pytest.raises(StreamError):
        provider.complete(resolved, [Message.user("hi")], tools=TOOLS, stream=True, api_key=KEY)


@pytest.mark.parametrize("fault", ["truncate", "malformed", "failed"])
def test_broken_bodies_raise_stream_error(emulator: Any, fault: str) -> None:
    name = "openai-responses"
    emulator.state.set_control(name, fault=fault)
    with pytest.raises(StreamError):
        provider.complete(resolve(name, emulator.url(name), "gpt-5"), [Message.user("hi")], api_key=KEY)


@pytest.mark.parametrize("fault", ["500", "429"])
def test_transient_faults_are_retried(emulator: Any, fault: str) -> None:
    name = "xai-responses"
    start = len(emulator.requests(name))
    emulator.state.set_control(name, fault=fault)
    ex = provider.complete(resolve(name, emulator.url(name), "grok-4"), [Message.user("hi")], stream=True,
                           api_key=KEY)
    assert ex.response.finish_reason == "stop"
    assert len(emulator.requests(name)) - start == 2  # the fault, then the retry


def test_slow_stream_still_folds(emulator: Any) -> None:
    name = "xai-responses"
    emulator.state.set_control(name, fault="slow")
    seen: list[Any] = []
    ex = provider.complete(resolve(name, emulator.url(name), "grok-4"), [Message.user("hi")], stream=True,
                           api_key=KEY, on_delta=seen.append)
    assert ex.response.message.text.startswith("Done (grok-4)") and len(seen) > 5


def test_decode_event_errors() -> None:
    with pytest.raises(StreamError, match="non-JSON"):
        wire.decode_event("response.output_text.delta", "{oops")
    with pytest.raises(StreamError, match="overloaded"):
        wire.decode_event("response.failed", orjson.dumps(
            {"type": "response.failed", "response": {"status": "failed",
                                                     "error": {"code": "server_error", "message": "overloaded"}}}).decode())
    with pytest.raises(StreamError, match="bad"):
        wire.decode_event("error", '{"type": "error", "code": "x", "message": "bad"}')


# ----------------------------------------------------------------------------- parse == fold

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
_ident = st.text("abcdef0123456789", min_size=4, max_size=12)


@st.composite
def _responses(draw: st.DrawFn) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    for n in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["reasoning", "message", "function_call"]))
        iid = f"{kind[:2]}_{n}_{draw(_ident)}"
        if kind == "reasoning":
            item: dict[str, Any] = {"id": iid, "type": "reasoning", "summary": [], "status": "completed"}
            texts = draw(st.lists(_text, max_size=3))
            if draw(st.booleans()):
                item["summary"] = [{"type": "summary_text", "text": t} for t in texts]
            else:
                item["content"] = [{"type": "reasoning_text", "text": t} for t in texts]
            if draw(st.booleans()):
                item["encrypted_content"] = "gAAAAAB" + draw(_ident) * 3
        elif kind == "message":
            item = {"id": iid, "type": "message", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": t, "annotations": []}
                                for t in draw(st.lists(_text, max_size=3))]}
        else:
            item = {"id": iid, "type": "function_call", "status": "completed", "call_id": f"call_{n}",
                    "name": draw(st.sampled_from(["ls", "read_file"])), "arguments": draw(_text)}
        output.append(item)
    usage = {"input_tokens": draw(st.integers(0, 99)), "output_tokens": draw(st.integers(0, 99)),
             "output_tokens_details": {"reasoning_tokens": draw(st.integers(0, 99))}, "total_tokens": 5}
    return {"id": "resp_1", "object": "response", "status": draw(st.sampled_from(["completed", "incomplete"])),
            "model": "gpt-5", "output": output, "usage": usage}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_responses())
def test_parse_of_completed_response_equals_fold_of_its_stream(resp: dict[str, Any]) -> None:
    origin = RouteKey("openai-responses", "api.openai.com", "gpt-5", "openai_responses")
    parsed = fold(origin, wire.from_wire(resp))
    deltas = [d for event, data in stream_events(resp) for d in wire.decode_event(event, orjson.dumps(data).decode())]
    assert fold(origin, deltas) == parsed
    calls = [i for i in resp["output"] if i["type"] == "function_call"]
    assert parsed.finish_reason == ("length" if resp["status"] == "incomplete" else "tool_calls" if calls else "stop")
    assert parsed.usage["reasoning_tokens"] == resp["usage"]["output_tokens_details"]["reasoning_tokens"]
    blobs = [p.blob for p in parsed.message.reasoning if p.blob]
    assert blobs == [i["encrypted_content"] for i in resp["output"] if i.get("encrypted_content")]
