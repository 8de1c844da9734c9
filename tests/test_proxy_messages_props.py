"""Properties of the Messages door over whole histories, on three kinds of route (hypothesis).

The Responses door's properties (tests/test_proxy_responses_props.py), for the other front door;
test_proxy_anthropic_door.py holds the one-turn DeepSeek properties and the event grammar.

* **Through the door and back, exactly.** Any stored tool-loop history, handed to a Messages
  client (Claude Code) as answers — its reasoning a ``thinking`` block whose ``signature`` is the
  sealed envelope — and sent back by it as its assistant messages, reaches the route with
  exactly the reasoning keys the planner gives the stored history itself: on a must-echo route
  (DeepSeek), a signed-details route (OpenRouter, Claude) and a per-call-signature route
  (Gemini's OpenAI endpoint).
* **Only as sealed.** The same history with one signature altered, or sent under another
  tenant, or opened by another deployment's key, restores nothing for that turn, and none of
  its reasoning text reaches the route.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_proxy_responses_props import (
    SEALER,
    TARGETS,
    TENANT,
    _reasoning_keys,
    _reference,
    check_restores_only_as_sealed,
    turns,
)

from hermes.core.messages import Message, ToolResult
from hermes.proxy.anthropic_door import to_chat
from hermes.proxy.anthropic_out import whole_message
from hermes.proxy.door import open_turns, seal_turn
from hermes.proxy.rewrite import rewrite
from hermes.proxy.seal import Sealer
from hermes.replay import Learned

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
"""Half the Responses door's examples: the generator and the planner are the same, only the door differs."""


def _as_messages(history: list[Message], tenant: str, route: str) -> list[dict[str, Any]]:
    """The history as a Messages client sends it back: each answer's content blocks as they came."""
    model = TARGETS[route].model
    out: list[dict[str, Any]] = []
    for m in history:
        if m.role == "user":
            out.append({"role": "user", "content": m.text})
        elif m.role == "tool":
            out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": p.call_id,
                                                     "content": p.content}
                                                    for p in m.parts if isinstance(p, ToolResult)]})
        else:
            answer = whole_message(m, "tool_calls" if m.tool_calls else "stop", {}, model,
                                   lambda parts: seal_turn(parts, SEALER, tenant=tenant, route=route) or "")
            out.append({"role": "assistant", "content": answer["content"]})
    return out


def _through_door(history: list[Message], route: str, *, seal_tenant: str = TENANT, opener: Sealer = SEALER,
                  alter: int | None = None) -> list[dict[str, Any]]:
    """The assistant messages of the chat body the route receives."""
    target = TARGETS[route]
    messages = _as_messages(history, seal_tenant, route)
    if alter is not None:
        signed = [b for m in messages if m["role"] == "assistant" for b in m["content"]
                  if b["type"] == "thinking" and b["signature"]]
        block = signed[alter % len(signed)]
        s = block["signature"]
        at = len(s) // 2
        block["signature"] = s[:at] + ("A" if s[at] != "A" else "B") + s[at + 1:]
    tr = to_chat({"model": target.model, "max_tokens": 1024, "messages": messages}, target)
    extra, _ = open_turns(tr.body["messages"], tr.envelopes, opener, tenant=TENANT, route=route)
    rw = rewrite(tr.body, target, lambda keys: {}, Learned(), extra)
    body = rw.body if rw.body is not None else tr.body
    return [m for m in body["messages"] if m["role"] == "assistant"]


@FAST
@given(st.sampled_from(sorted(TARGETS)).flatmap(lambda r: st.tuples(st.just(r), turns(r))))
def test_a_history_through_the_messages_door_restores_exactly(case: tuple[str, list[Message]]) -> None:
    route, history = case
    got = [_reasoning_keys(m) for m in _through_door(history, route)]
    want = [_reasoning_keys(m) for m in _reference(history, route)]
    assert got == want
    assert any(len(k) > 1 for k in got), "the route takes some reasoning back"


@FAST
@given(st.sampled_from(sorted(TARGETS)).flatmap(lambda r: st.tuples(st.just(r), turns(r))),
       st.integers(0, 5), st.sampled_from(["altered", "tenant", "deployment"]))
def test_a_signature_restores_only_as_sealed(case: tuple[str, list[Message]], which: int, how: str) -> None:
    check_restores_only_as_sealed(_through_door, *case, which, how)
