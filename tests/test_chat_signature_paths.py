"""Thought signatures on the chat wire: one source for where they go — the row's paths.

The renderer writes a call's signature at the row's ``call_signature`` path and the turn's at
``text_signature``; the decoder reads them from the very same paths. A user row from
``routes.toml`` with its own paths round-trips through both, and a signature at another
route's path is not taken for this one's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes.core.messages import Message, Reasoning, ToolCall, ToolResult
from hermes.core.stream import Accumulator
from hermes.replay import plan_replay
from hermes.routing.resolve import Resolved, load_table, resolve
from hermes.wire import openai_chat

ROW = ('[[route]]\nkey = "acme-sig"\nwire = "openai_chat"\nhosts = ["llm.acme.example"]\n'
       'carriers = ["reasoning_content"]\nnative = ["thought_signature", "tool_signatures"]\n'
       'call_signature = "function.meta.sig"\ntext_signature = "vendor.sig"\n')


def _target(tmp_path: Path, extra: str = "") -> Resolved:
    f = tmp_path / "routes.toml"
    f.write_text(ROW + extra)
    return resolve("acme-sig", "https://llm.acme.example/v1", "acme-1", table=load_table(f))


def _response(call_extra: dict[str, Any], msg_extra: dict[str, Any]) -> dict[str, Any]:
    call = {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    for k, v in call_extra.items():
        call[k] = {**call.get(k, {}), **v}
    msg = {"role": "assistant", "content": "looking", "reasoning_content": "hm", "tool_calls": [call], **msg_extra}
    return {"choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls"}]}


def _turn(target: Resolved, payload: dict[str, Any]) -> Message:
    return Accumulator(target.key).feed_all(openai_chat.decoder(target).from_wire(payload)).result().message


def _native(m: Message) -> Any:
    return next(p for p in m.parts if isinstance(p, Reasoning)).native


def test_a_custom_rows_paths_are_read_and_written_back_at_the_same_place(tmp_path: Path) -> None:
    target = _target(tmp_path)
    turn = _turn(target, _response({"function": {"meta": {"sig": "CALLSIG"}}}, {"vendor": {"sig": "TEXTSIG"}}))
    native = _native(turn)
    assert native.thought_signature == "TEXTSIG" and dict(native.tool_signatures) == {"call_1": "CALLSIG"}
    body = openai_chat.to_wire(plan_replay([Message.user("hi"), turn], target))
    sent = body["messages"][-1]
    assert sent["vendor"] == {"sig": "TEXTSIG"}
    assert sent["tool_calls"][0]["function"]["meta"] == {"sig": "CALLSIG"}


def test_a_signature_at_another_rows_path_is_not_read(tmp_path: Path) -> None:
    target = _target(tmp_path)
    gemini_style = {"google": {"thought_signature": "G"}}
    turn = _turn(target, _response({"extra_content": gemini_style}, {"extra_content": gemini_style}))
    native = _native(turn)
    assert native is None or (not native.thought_signature and not native.tool_signatures)
    # the built-in Gemini-compat row reads exactly those
    gem = resolve("gemini-openai", None, "gemini-3-pro-preview")
    native = _native(_turn(gem, _response({"extra_content": gemini_style}, {"extra_content": gemini_style})))
    assert native.thought_signature == "G" and dict(native.tool_signatures) == {"call_1": "G"}


@pytest.mark.parametrize("pad", ["acme-skip", ""])
def test_a_call_without_a_signature_gets_the_rows_pad_if_it_has_one(tmp_path: Path, pad: str) -> None:
    target = _target(tmp_path, f'signature_pad = "{pad}"\n' if pad else "")
    history = [Message.user("hi"), Message("assistant", (ToolCall("call_1", "ls", "{}"),)),
               Message("tool", (ToolResult("call_1", "a.txt", "ls"),))]
    plan = plan_replay(history, target)
    call = openai_chat.to_wire(plan)["messages"][1]["tool_calls"][0]
    if pad:
        assert dict(plan.messages[1].tool_signatures) == {"call_1": pad}
        assert call["function"]["meta"] == {"sig": pad}
    else:
        assert not plan.messages[1].tool_signatures and "meta" not in call["function"]
