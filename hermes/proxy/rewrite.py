"""Putting one client request right for its route: restore, pad, strip, switch. Pure.

The client's body is forwarded as it is except for the reasoning keys of assistant messages
and the route's keep-thinking switches. Nothing here knows a provider rule; it builds the
neutral history the planner reads and lets the planner and the chat wire decide:

1. every assistant message is **recognised** in the tenant's memory (``memory.client_key``
   over what it shows and the conversation before it, ``memory.prefixes``) and stands for
   the turn as the route sent it; an unrecognised one is decoded from what the client sent
   (``ChatDecoder``, so a client that does keep ``reasoning_content`` or ``reasoning_details``
   loses nothing);
2. ``plan_replay`` decides per message what the route takes — carriers, the must-echo pad,
   Gemini / Copilot native fields, the validator skip for a call without a signature, learned
   rejections — and ``openai_chat.render_message`` places it;
3. the client's message gets exactly the reasoning keys of that rendering: missing ones are
   restored, different ones replaced, the rest stripped (e.g. ``reasoning_content`` sent to
   Mistral). Content, tool calls, names and every other key stay byte-for-byte the client's.

Top-level keep-thinking switches are added when the request carries reasoning back, and only
where the client did not set a value (a client that turns thinking off keeps it off; a first
request, with nothing to carry back, goes out as the client sent it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import HermesError
from ..core.messages import Message, Reasoning
from ..core.stream import Accumulator
from ..replay import Learned, ReplayPlan, Settings, plan_replay
from ..routing.resolve import Resolved
from ..routing.routes import deep_merge
from ..wire.chat_decode import ChatDecoder
from ..wire.openai_chat import render_message
from .memory import turn_keys

__all__ = ["REASONING_KEYS", "MessageAction", "Rewrite", "decode_message", "rewrite"]

REASONING_KEYS = ("reasoning_content", "reasoning", "reasoning_details", "reasoning_text", "reasoning_opaque",
                  "extra_content")
"""Assistant-message keys that carry reasoning on some chat route (the proxy owns these)."""
_CALL_KEYS = ("extra_content",)
_FN_KEYS = ("thought_signature",)
_ROLES = {"user": "user", "assistant": "assistant", "tool": "tool", "function": "tool"}

Recall = Callable[[Sequence[str]], Mapping[str, Message]]
_OPENED: Mapping[int, Message] = {}


@dataclass(frozen=True, slots=True)
class MessageAction:
    """What happened to one assistant message of the request (``hermes logs`` shows it)."""

    index: int
    recognised: bool
    restored: tuple[str, ...] = ()
    padded: tuple[str, ...] = ()
    stripped: tuple[str, ...] = ()
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"index": self.index, "recognised": self.recognised}
        for name in ("restored", "padded", "stripped"):
            if getattr(self, name):
                d[name] = list(getattr(self, name))
        if self.note:
            d["note"] = self.note
        return d


@dataclass(frozen=True, slots=True)
class Rewrite:
    body: dict[str, Any] | None
    """The body to send; None when nothing changed (the client's bytes go as they are)."""
    history: list[Message]
    """The neutral history the plan was made from."""
    plan: ReplayPlan | None
    actions: tuple[MessageAction, ...] = ()
    switches: tuple[str, ...] = ()
    keys: dict[int, str] = field(default_factory=dict)
    mapped_ids: int = 0
    """Tool-call ids rewritten to the route's id rule (calls and the results answering them)."""
    prefix: str = ""
    """The digest of the client's conversation (``memory.prefixes``): the answer's turn is
    recorded under it, so it is recognised only after this very conversation."""

    def summary(self) -> dict[str, Any]:
        """For the request log: per message what was restored / padded / stripped; no values."""
        changed = [a.as_dict() for a in self.actions if a.restored or a.padded or a.stripped or a.note]
        return {"assistant_messages": len(self.actions),
                "recognised": sum(1 for a in self.actions if a.recognised),
                "messages": changed, "switches": list(self.switches),
                **({"mapped_ids": self.mapped_ids} if self.mapped_ids else {})}


def decode_message(msg: Mapping[str, Any], target: Resolved) -> Message | None:
    """An assistant message as a client sent it, decoded like a response from ``target``.

    Reasoning keys the decoder cannot read (a client's malformed ``reasoning_details``) are
    left out, so they are stripped rather than forwarded; None only when the visible message
    itself is malformed (then it goes untouched and the upstream says what is wrong)."""
    route = target.route
    for m in (msg, _without_reasoning(msg)):
        try:
            dec = ChatDecoder(call_signature=route.call_signature, text_signature=route.text_signature)
            deltas = dec.from_wire({"choices": [{"message": m, "finish_reason": "stop"}]})
            return Accumulator(target.key).feed_all(deltas).result().message
        except (HermesError, TypeError, ValueError, AttributeError):
            continue
    return None


def _without_reasoning(msg: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in msg.items() if k not in REASONING_KEYS}
    calls = out.get("tool_calls")
    if isinstance(calls, list):
        out["tool_calls"] = [{k: v for k, v in c.items() if k not in _CALL_KEYS} if isinstance(c, Mapping) else c
                             for c in calls]
    return out


def rewrite(body: Mapping[str, Any], target: Resolved, recall: Recall, learned: Learned = Learned(),
            opened: Mapping[int, Message] = _OPENED) -> Rewrite:
    """The request ``body`` put right for ``target`` (see the module docstring). ``opened``:
    assistant turns already known by their index in ``messages`` (a front door's envelopes),
    recognised without asking ``recall``."""
    msgs = body.get("messages")
    if not isinstance(msgs, list):
        return Rewrite(None, [], None)
    think = target.route.think_tags
    keys, conversation = turn_keys(msgs, think_tags=think)
    asked = [k for i, k in keys.items() if i not in opened]
    recalled = recall(list(dict.fromkeys(asked))) if asked else {}
    history: list[Message] = []
    decoded: dict[int, bool] = {}
    for i, m in enumerate(msgs):
        role = _ROLES.get(str(m.get("role")) if isinstance(m, Mapping) else "", "system")
        if role != "assistant":
            history.append(Message(role, ()))  # type: ignore[arg-type]
            continue
        known = opened.get(i) or recalled.get(keys.get(i, ""))
        neutral = known if known is not None else decode_message(m, target)
        if neutral is None:
            history.append(Message("assistant", ()))
            continue
        decoded[i] = known is not None
        history.append(neutral)
    plan = plan_replay(history, target, learned, Settings())
    new_msgs: list[Any] | None = None
    actions: list[MessageAction] = []
    ids: dict[str, str] = {}
    planned = {pm.index: pm for pm in plan.messages}
    for i, recognised in decoded.items():
        pm = planned[i]
        pads = {f for d in pm.decisions if d.action == "pad" for f in d.fields}
        patched, action = _patch(msgs[i], render_message(pm, target.route)[-1], pads, i, recognised, ids,
                                 target.route.signature_pad)
        if not recognised and not action.note:
            own = any(isinstance(p, Reasoning) for p in history[i].parts)
            action = _with_note(action, "unrecognised: " + ("the client's own reasoning" if own else
                                                            "padded" if action.padded else "nothing to restore"))
        actions.append(action)
        if patched is not msgs[i]:
            if new_msgs is None:
                new_msgs = list(msgs)
            new_msgs[i] = patched
    if ids:  # results answer the calls under their new ids
        new_msgs = new_msgs if new_msgs is not None else list(msgs)
        for i, m in enumerate(new_msgs):
            cid = m.get("tool_call_id") if isinstance(m, Mapping) and m.get("role") == "tool" else None
            if cid is not None and str(cid) in ids:
                new_msgs[i] = {**m, "tool_call_id": ids[str(cid)]}
    out: dict[str, Any] | None = None
    if new_msgs is not None:
        out = dict(body)
        out["messages"] = new_msgs
    switched: list[str] = []
    # keep-thinking switches only for a conversation that thinks: a request carrying reasoning
    # back (a pad alone does not count — the client may run the model without thinking)
    thinks = any(d.action in ("field", "native") for pm in plan.messages for d in pm.decisions)
    for name, value in plan.request_fields.items() if thinks else ():
        cur = body.get(name)
        merged = value if name not in body else deep_merge(value, cur) if (
            isinstance(value, Mapping) and isinstance(cur, Mapping)) else cur
        if merged != cur or name not in body:
            out = out if out is not None else dict(body)
            out[name] = merged
            switched.append(name)
    return Rewrite(out, history, plan, tuple(actions), tuple(switched), keys, len(ids), conversation)


def _with_note(a: MessageAction, note: str) -> MessageAction:
    return MessageAction(a.index, a.recognised, a.restored, a.padded, a.stripped, note)


def _patch(msg: Mapping[str, Any], want: Mapping[str, Any], pads: set[str], index: int,
           recognised: bool, ids: dict[str, str], skip: str) -> tuple[Mapping[str, Any], MessageAction]:
    """``msg`` with exactly the reasoning keys of the rendered ``want`` (same object if no change);
    tool-call ids the route renders differently are changed too and collected in ``ids``."""
    out: dict[str, Any] | None = None
    restored: list[str] = []
    padded: list[str] = []
    stripped: list[str] = []

    def edit() -> dict[str, Any]:
        nonlocal out
        if out is None:
            out = dict(msg)
        return out

    for k in REASONING_KEYS:
        if k in want:
            if msg.get(k) != want[k]:
                edit()[k] = want[k]
                (padded if k in pads else restored).append(k)
        elif k in msg:
            del edit()[k]
            stripped.append(k)
    calls = msg.get("tool_calls")
    if isinstance(calls, list) and calls:
        # rendered calls come in the client's order (a recognised turn matched on every call, in
        # order; an unrecognised one was decoded from these very calls)
        wanted = list(want.get("tool_calls") or ())
        new_calls: list[Any] | None = None
        for j, call in enumerate(calls):
            if not isinstance(call, Mapping) or j >= len(wanted):
                continue
            fixed = _patch_call(call, wanted[j], pads, restored, padded, stripped, skip)
            if wanted[j].get("id") != call.get("id"):  # the route's tool-call id rule
                fixed = {**fixed, "id": wanted[j]["id"]}
                ids[str(call.get("id"))] = str(wanted[j]["id"])
            if fixed is not call:
                if new_calls is None:
                    new_calls = list(calls)
                new_calls[j] = fixed
        if new_calls is not None:
            edit()["tool_calls"] = new_calls
    action = MessageAction(index, recognised, tuple(restored), tuple(padded), tuple(stripped))
    return (out if out is not None else msg), action


def _patch_call(call: Mapping[str, Any], want: Mapping[str, Any], pads: set[str], restored: list[str],
                padded: list[str], stripped: list[str], skip: str) -> Mapping[str, Any]:
    out: dict[str, Any] | None = None
    for k in _CALL_KEYS:
        if k in want and call.get(k) != want[k]:
            out = out or dict(call)
            out[k] = want[k]
            sig = bool(skip) and _holds(want[k], skip)
            (padded if sig and pads else restored).append(f"tool_calls.{k}")
        elif k not in want and k in call:
            out = out or dict(call)
            del out[k]
            stripped.append(f"tool_calls.{k}")
    fn, want_fn = call.get("function"), want.get("function") or {}
    if isinstance(fn, Mapping):
        new_fn: dict[str, Any] | None = None
        for k in _FN_KEYS:
            if k in want_fn and fn.get(k) != want_fn[k]:
                new_fn = new_fn or dict(fn)
                new_fn[k] = want_fn[k]
                restored.append(f"tool_calls.function.{k}")
            elif k not in want_fn and k in fn:
                new_fn = new_fn or dict(fn)
                del new_fn[k]
                stripped.append(f"tool_calls.function.{k}")
        if new_fn is not None:
            out = out or dict(call)
            out["function"] = new_fn
    return out if out is not None else call


def _holds(value: Any, skip: str) -> bool:
    """Whether the rendered ``value`` is (or nests) the row's ``signature_pad``: a pad, not a restore."""
    if isinstance(value, Mapping):
        return any(_holds(v, skip) for v in value.values())
    return value == skip

