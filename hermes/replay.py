"""The replay planner: one pure step that decides what every stored part becomes on a route.

``plan_replay(history, target, learned)`` never modifies ``history``; it returns a
``ReplayPlan`` whose messages hold only what the wire must render:

* chat-completions routes: reasoning leaves the parts and becomes message ``fields``
  (exactly the row's carriers, minus learned rejections; must-echo pads; owned native fields);
* native-block wires (Anthropic, Bedrock, Responses): reasoning parts stay in order when
  their blob may go to this target, are reduced to readable text where the row's policy
  says so, and are dropped otherwise;
* Gemini: signatures are lifted from the private record onto calls and the last text part;
  a call without one of its own gets the documented ``skip_thought_signature_validator``.

Every reasoning part gets a ``Decision`` with a reason, which ``hermes replay`` prints.
Wire modules render the plan and never decide again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import orjson

from .history import open_loop_start, window
from .messages import Message, Part, Reasoning, RouteKey, Text, ToolCall, ToolResult, blob_hash
from .resolve import Resolved
from .routes import Route, at_path, deep_merge
from .toolids import id_map, valid

__all__ = [
    "GEMINI_SKIP_SIGNATURE",
    "PAD",
    "BuildCache",
    "Decision",
    "Learned",
    "PlannedMessage",
    "ReplayPlan",
    "Settings",
    "blob_allowed",
    "blob_hash",
    "plan_replay",
]

PAD = " "
"""Must-echo placeholder: a single space (DeepSeek rejects ``""``)."""
GEMINI_SKIP_SIGNATURE = "skip_thought_signature_validator"
DETAILS = "openrouter.details"
Action = Literal["native", "field", "text", "drop", "pad"]


@dataclass(frozen=True, slots=True)
class Learned:
    """What this (provider, host, model) has taught us; see ``rejections``."""

    dropped: frozenset[str] = frozenset()
    """Carrier fields the route rejected as unknown."""
    suppressed: frozenset[str] = frozenset()
    """``blob_hash`` of signed blobs the route rejected."""
    echo: bool = False
    """The route refused a tool turn without ``reasoning_content``: treat it as must-echo."""


@dataclass(frozen=True, slots=True)
class Settings:
    thinking: bool = True
    effort: str | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    part: int | None
    """Index into the stored message's parts; None for a message-level decision."""
    action: Action
    fields: tuple[str, ...]
    reason: str


@dataclass(frozen=True, slots=True)
class PlannedMessage:
    index: int
    """Position in the stored history."""
    role: str
    parts: tuple[Part, ...]
    """What the wire renders, in order; reasoning only where it goes as a native block."""
    fields: Mapping[str, Any] = field(default_factory=dict)
    """Chat-completions assistant carrier fields, in render order."""
    tool_signatures: Mapping[str, str] = field(default_factory=dict)
    """call id → signature to render on that call (Gemini / Copilot)."""
    thought_signature: str | None = None
    """Gemini text-turn signature for the last text part."""
    decisions: tuple[Decision, ...] = ()


@dataclass(frozen=True, slots=True)
class ReplayPlan:
    target: Resolved
    messages: tuple[PlannedMessage, ...]
    request_fields: Mapping[str, Any]
    """Top-level body fields from the row: keep-thinking switches and effort."""
    thinking: bool
    notes: tuple[str, ...] = ()



def blob_allowed(part: Reasoning, target: Resolved, learned: Learned = Learned()) -> str | None:
    """None when the part's blob may be sent to ``target``; otherwise the reason it may not."""
    if part.blob is None or part.blob_kind is None:
        return "no blob"
    route = target.route
    accepted = route.blob_kinds | ({DETAILS} if "reasoning_details" in route.carriers else set())
    if part.blob_kind not in accepted:
        return f"{route.key} does not take {part.blob_kind} blobs"
    if not _same_origin(part.origin, target):
        return f"blob minted by {_who(part.origin)}, not sendable to {_who(target.key)}"
    if blob_hash(part.blob) in learned.suppressed:
        return "blob suppressed after the route rejected it"
    return None


def _same_origin(origin: RouteKey, target: Resolved) -> bool:
    if origin.provider != target.route.key or origin.host != target.host:
        return False
    return target.route.blob_scope == "provider" or origin.model == target.model


def _who(k: RouteKey) -> str:
    return f"{k.provider}@{k.host}/{k.model}"


class BuildCache:
    """Memo of per-message plans and renders for one conversation, keyed by object identity.

    Stored messages are immutable and planning one depends only on (message, route, learned,
    position, inside the open loop or not), so a request rebuilt after every tool step
    re-plans and re-renders only what changed. Each entry keeps the object it was computed
    from, so an ``id()`` can never be reused by another object while cached. Cached values are
    shared between requests: treat plans and rendered bodies as read-only.
    """

    __slots__ = ("_costs", "_entries", "last_ids", "last_plan", "last_render", "last_window")

    def __init__(self) -> None:
        self._entries: dict[int, tuple[object, object, Any]] = {}
        self._costs: dict[int, tuple[object, object, int]] = {}
        """Token cost per planned message (``estimate``), apart so it never evicts a render."""
        self.last_plan: tuple[object, Sequence[Message], int, list[PlannedMessage]] | None = None
        """(key, messages, loop start, planned) of the previous plan: its prefix is reused whole."""
        self.last_window: tuple[list[Message], int] | None = None
        """(history, window start) of the previous plan: only a grown tail is scanned again."""
        self.last_render: tuple[object, Sequence[PlannedMessage], Any] | None = None
        """(key, planned, rendered chunks) of the previous render, for the wire's own reuse."""
        self.last_ids: tuple[str, list[Message], list[str], bool] | None = None
        """(id rule, messages, their tool-call ids, all valid) of the previous request: a grown
        history scans only its new messages for ids the route would refuse."""

    def get(self, obj: object, key: object, compute: Any) -> Any:
        e = self._entries.get(id(obj))
        if e is not None and e[0] is obj and e[1] == key:
            return e[2]
        value = compute()
        self._entries[id(obj)] = (obj, key, value)
        return value

    def cost(self, obj: object, key: object, compute: Any) -> int:
        """``get`` for the token estimate of a planned message: the preflight before every
        request and the usage feedback after it price the same plan, so each message once."""
        e = self._costs.get(id(obj))
        if e is not None and e[0] is obj and e[1] == key:
            return e[2]
        value: int = compute()
        self._costs[id(obj)] = (obj, key, value)
        return value


def common_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    """How many leading items of ``a`` and ``b`` are the same objects (or equal values, which
    plan and render identically at the same position)."""
    n = min(len(a), len(b))
    if n and a[n - 1] is b[n - 1] and list(a[:n]) == list(b[:n]):
        return n  # the usual case, a grown history: one identity-first comparison in C
    i = 0
    while i < n and a[i] is b[i]:
        i += 1
    return i


def plan_replay(
    history: Sequence[Message],
    target: Resolved,
    learned: Learned = Learned(),
    settings: Settings = Settings(),
    *,
    cache: BuildCache | None = None,
) -> ReplayPlan:
    """Decide, per stored part, what the request to ``target`` carries. Pure (the optional
    ``cache`` only memoises results)."""
    known = known_start = 0
    if cache is not None and cache.last_window is not None:
        prev, prev_start = cache.last_window
        if common_prefix(prev, history) == len(prev):
            known, known_start = len(prev), prev_start
    start, msgs = window(history, known=known, known_start=known_start)
    if cache is not None:
        cache.last_window = (list(history), start)
    loop_start = open_loop_start(msgs)
    route = target.route
    planner = _PLANNERS[route.wire]
    planned: list[PlannedMessage] = []
    prefix_key = (route, target.host, target.model, learned, start)
    if cache is not None and cache.last_plan is not None and cache.last_plan[0] == prefix_key:
        _, prev_msgs, prev_loop, prev_planned = cache.last_plan
        keep = min(common_prefix(prev_msgs, msgs), prev_loop, loop_start)
        planned = prev_planned[:keep]
    for offset in range(len(planned), len(msgs)):
        m = msgs[offset]
        index = start + offset
        if m.role != "assistant":
            if cache is None:
                planned.append(PlannedMessage(index, m.role, m.parts))
            else:
                planned.append(cache.get(m, index, lambda m=m, i=index: PlannedMessage(i, m.role, m.parts)))
            continue
        in_loop = offset >= loop_start
        if cache is None:
            planned.append(planner(index, m, target, learned, in_loop))
        else:
            key = (route, target.host, target.model, learned, in_loop, index)
            planned.append(cache.get(m, key, lambda m=m, i=index, loop=in_loop: planner(i, m, target, learned, loop)))
    if cache is not None:
        cache.last_plan = (prefix_key, list(msgs), loop_start, list(planned))
    if route.tool_ids != "any":
        mapping = _request_id_map(msgs, route.tool_ids, cache)
        if mapping:
            planned = [_remap_ids(pm, mapping, cache) for pm in planned]
    notes: list[str] = []
    thinking = settings.thinking
    if thinking and route.policy == "signed" and route.wire in ("anthropic", "bedrock"):
        bare = [p for p in planned[loop_start:] if p.role == "assistant" and _needs_thinking(p)]
        if bare:
            thinking = False
            notes.append(
                f"thinking off for this request: open tool-loop turn #{bare[0].index} has no "
                "thinking block this route may receive (it came from another route)"
            )
    if not thinking and route.policy == "signed" and route.wire in ("anthropic", "bedrock"):
        planned = [_without_reasoning(p) for p in planned]
    return ReplayPlan(target, tuple(planned), _request_fields(target, settings, thinking), thinking, tuple(notes))


def _part_ids(parts: Sequence[Part]) -> list[str]:
    out: list[str] = []
    for p in parts:  # ``kind`` compares cheaper than isinstance over a union, on every request
        k = p.kind
        if k == "tool_call":
            out.append(p.id)  # type: ignore[union-attr]
        elif k == "tool_result":
            out.append(p.call_id)  # type: ignore[union-attr]
    return out


def _tool_ids(msgs: Sequence[Message]) -> list[str]:
    """Every tool-call id of the request, in history order (calls and the results answering them)."""
    return [i for m in msgs for i in _part_ids(m.parts)]


def _request_id_map(msgs: Sequence[Message], rule: str, cache: BuildCache | None) -> dict[str, str]:
    """original → wire id for the ids of this request that ``rule`` refuses (usually none)."""
    prev = cache.last_ids if cache is not None else None
    if prev is not None and prev[0] == rule and common_prefix(prev[1], msgs) == len(prev[1]):
        fresh = _tool_ids(msgs[len(prev[1]):])
        ids, all_valid = prev[2] + fresh, prev[3] and all(valid(rule, i) for i in fresh)
    else:
        ids = _tool_ids(msgs)
        all_valid = all(valid(rule, i) for i in ids)
    if cache is not None:
        cache.last_ids = (rule, list(msgs), ids, all_valid)
    return {} if all_valid else id_map(rule, ids)


def _remap_ids(pm: PlannedMessage, mapping: Mapping[str, str], cache: BuildCache | None) -> PlannedMessage:
    """``pm`` with its tool-call ids as the target route accepts them (stored history keeps the
    originals). The same planned message with the same mapping gives the same object, so the
    wires' render reuse still sees an unchanged prefix."""
    hit = tuple(sorted({(i, mapping[i]) for i in _part_ids(pm.parts) if i in mapping}))
    if not hit:
        return pm

    def remapped() -> PlannedMessage:
        parts = tuple(replace(p, id=mapping.get(p.id, p.id)) if isinstance(p, ToolCall)
                      else replace(p, call_id=mapping.get(p.call_id, p.call_id)) if isinstance(p, ToolResult)
                      else p for p in pm.parts)
        sigs = {mapping.get(k, k): v for k, v in pm.tool_signatures.items()}
        return replace(pm, parts=parts, tool_signatures=sigs)

    return remapped() if cache is None else cache.get(pm, ("tool_ids", hit), remapped)


def _without_reasoning(p: PlannedMessage) -> PlannedMessage:
    """Thinking off on a signed wire: a thinking block in the request would be rejected."""
    if not any(isinstance(x, Reasoning) for x in p.parts):
        return p
    decisions = tuple(Decision(d.part, "drop", (), "thinking is off for this request") if d.action != "drop" else d
                      for d in p.decisions)
    return replace(p, parts=tuple(x for x in p.parts if not isinstance(x, Reasoning)), decisions=decisions)


def _needs_thinking(p: PlannedMessage) -> bool:
    return any(isinstance(x, ToolCall) for x in p.parts) and not any(isinstance(x, Reasoning) for x in p.parts)


def _request_fields(target: Resolved, settings: Settings, thinking: bool) -> dict[str, Any]:
    """The row's thinking switches (or its off switch), plus the effort where the route and the
    model take it: an effort the route's map lacks, or the model does not accept, is not sent."""
    route = target.route
    if not thinking:
        return deep_merge({}, route.thinking_off)
    out = deep_merge({}, route.switches)
    if settings.effort and route.wire == "openai_chat":
        value = route.effort_map.get(settings.effort) if route.effort_map else settings.effort
        if value and target.profile.takes_effort(value):
            out = deep_merge(out, at_path(route.effort_field, value))
    return out


# ----------------------------------------------------------------------------- chat wire


def _readable(parts: Sequence[tuple[int, Reasoning]]) -> str:
    texts = [p.text for _, p in parts if p.text.strip()]
    return texts[0] if len(texts) == 1 else "\n\n".join(texts)


def _plan_chat(index: int, m: Message, target: Resolved, learned: Learned, in_loop: bool) -> PlannedMessage:
    route = target.route
    reasoning = [(i, p) for i, p in enumerate(m.parts) if isinstance(p, Reasoning)]
    others = tuple(p for p in m.parts if not isinstance(p, Reasoning))
    carriers = route.carriers - learned.dropped
    must_echo = route.must_echo or learned.echo
    if must_echo and not route.strict:
        carriers |= {"reasoning_content"}
    decisions: list[Decision] = []
    if route.strict:
        decisions += [Decision(i, "drop", (), f"{route.key} is a strict schema: no reasoning key") for i, _ in reasoning]
        return PlannedMessage(index, m.role, others, decisions=tuple(decisions))

    text = _readable(reasoning)
    fields: dict[str, Any] = {}
    text_fields = tuple(f for f in ("reasoning_content", "reasoning") if f in carriers)
    if text and text_fields:
        for f in text_fields:
            fields[f] = text
    elif must_echo and "reasoning_content" in carriers:
        fields["reasoning_content"] = PAD
        decisions.append(Decision(None, "pad", ("reasoning_content",), f"{route.key} must echo: placeholder {PAD!r}"))

    details: list[Any] = []
    tool_sigs: dict[str, str] = {}
    native_fields: dict[str, Any] = {}
    for i, p in reasoning:
        sent: list[str] = [f for f in text_fields if p.text.strip() and text]
        why = []
        if p.blob_kind == DETAILS and "reasoning_details" in carriers:
            refusal = blob_allowed(p, target, learned)
            if refusal is None:
                details.extend(orjson.loads(p.blob or "[]"))
                sent.append("reasoning_details")
            else:
                why.append(refusal)
        elif p.blob is not None:
            why.append(blob_allowed(p, target, learned) or f"{route.key} takes no {p.blob_kind} on this wire")
        if p.native:
            owned, refusal = _native_owned(p, target, learned)
            if refusal:
                why.append(refusal)
            for name in owned:
                sent.append(name)
            _lift_native(p, owned, route, native_fields, tool_sigs)
        if sent:
            reason = "; ".join(["as carried by this route", *why]) if why else "as carried by this route"
            decisions.append(Decision(i, "field", tuple(sent), reason))
        elif not p.text.strip() and p.blob is None and not p.native:
            decisions.append(Decision(i, "drop", (), "empty reasoning"))
        else:
            missing = "route reads none of its carriers" if not text_fields else "nothing sendable"
            decisions.append(Decision(i, "drop", (), "; ".join(why) or missing))
    if details:
        fields["reasoning_details"] = details
    fields.update(native_fields)
    calls = [p for p in others if isinstance(p, ToolCall)]
    if "thought_signature" in route.native and calls and not any(c.id in tool_sigs for c in calls):
        tool_sigs[calls[0].id] = GEMINI_SKIP_SIGNATURE
        decisions.append(Decision(None, "pad", ("thought_signature",),
                                  "call has no signature of its own: documented validator skip"))
    return PlannedMessage(index, m.role, others, fields, tool_sigs, None, tuple(decisions))


def _native_owned(p: Reasoning, target: Resolved, learned: Learned) -> tuple[list[str], str | None]:
    """Which fields of the part's private record go to ``target``, or why none do."""
    assert p.native is not None
    have = p.native.fields()
    n = p.native
    values = [v for v in (n.thought_signature, n.reasoning_opaque, *(s for _, s in n.tool_signatures)) if v]
    if learned.suppressed and any(blob_hash(v) in learned.suppressed for v in values):
        return [], "native record suppressed after the route rejected it"
    owned = have & target.route.native
    if not owned:
        return [], f"native record ({', '.join(sorted(have))}) is owned by {p.origin.provider}, not {target.route.key}"
    if not _same_origin(p.origin, target):
        return [], f"native record minted by {_who(p.origin)}, not sendable to {_who(target.key)}"
    names = sorted(owned)
    if "reasoning_text" in names and "reasoning_opaque" not in names:
        names.remove("reasoning_text")  # Copilot clients send it only next to its opaque blob
    return names, None


def _lift_native(p: Reasoning, owned: Sequence[str], route: Route, out: dict[str, Any],
                 tool_sigs: dict[str, str]) -> None:
    n = p.native
    assert n is not None
    if "thought_signature" in owned and n.thought_signature and route.text_signature:
        out.update(deep_merge(out, at_path(route.text_signature, n.thought_signature)))
    if "reasoning_text" in owned and n.reasoning_text:
        out["reasoning_text"] = n.reasoning_text
    if "reasoning_opaque" in owned and n.reasoning_opaque:
        out["reasoning_opaque"] = n.reasoning_opaque
    if "tool_signatures" in owned:
        tool_sigs.update(dict(n.tool_signatures))


# ----------------------------------------------------------------------------- block wires


def _plan_blocks(index: int, m: Message, target: Resolved, learned: Learned, in_loop: bool) -> PlannedMessage:
    """Anthropic, Bedrock and Responses: reasoning stays a block, in its original order."""
    route = target.route
    policy = route.policy
    keep_prior = route.prior_turns == "all" and policy != "strip"
    parts: list[Part] = []
    decisions: list[Decision] = []
    for i, p in enumerate(m.parts):
        if not isinstance(p, Reasoning):
            parts.append(p)
            continue
        refusal = blob_allowed(p, target, learned)
        own = _same_origin(p.origin, target)
        if not in_loop and not keep_prior:
            decisions.append(Decision(i, "drop", (), f"turn before the open tool loop; {route.key} "
                                      f"{'strips earlier turns' if policy == 'strip' else 'keeps only loop thinking for this model'}"))
        elif refusal is None and (policy != "unsigned" or in_loop):
            parts.append(p)
            decisions.append(Decision(i, "native", (p.blob_kind or "",), "signed block from this route and model"))
        elif policy == "unsigned" or (policy == "strip" and own):
            if p.text.strip():
                parts.append(replace(p, blob=None, blob_kind=None, native=None))
                why = refusal or "earlier turn on an unsigned-policy model"
                decisions.append(Decision(i, "text", ("reasoningText",), f"readable text only: {why}"))
            else:
                decisions.append(Decision(i, "drop", (), f"no readable text; {refusal or 'earlier turn'}"))
        else:
            decisions.append(Decision(i, "drop", (), (refusal if p.blob is not None else None)
                                      or f"{route.key} takes only signed reasoning"))
    if not any(isinstance(x, (Text, ToolCall)) and (not isinstance(x, Text) or x.text) for x in parts):
        kept = [d for d in decisions if d.action in ("native", "text")]
        if kept:
            parts = [x for x in parts if not isinstance(x, Reasoning)]
            decisions = [d if d.action not in ("native", "text") else
                         Decision(d.part, "drop", (), "reasoning-only assistant turn would be read as prefill")
                         for d in decisions]
    return PlannedMessage(index, m.role, tuple(parts), decisions=tuple(decisions))


def _plan_gemini(index: int, m: Message, target: Resolved, learned: Learned, in_loop: bool) -> PlannedMessage:
    """Gemini rehydrates thoughts from signatures: send signatures, not thought text."""
    parts: list[Part] = []
    decisions: list[Decision] = []
    sigs: dict[str, str] = {}
    thought_sig: str | None = None
    for i, p in enumerate(m.parts):
        if not isinstance(p, Reasoning):
            parts.append(p)
            continue
        if p.native:
            owned, refusal = _native_owned(p, target, learned)
            if owned:
                n = p.native
                sigs.update(dict(n.tool_signatures))
                thought_sig = n.thought_signature or thought_sig
                decisions.append(Decision(i, "native", tuple(owned), "own thought signatures"))
                continue
            decisions.append(Decision(i, "drop", (), refusal or "not owned"))
        else:
            decisions.append(Decision(i, "drop", (), "Gemini takes thoughts back as signatures only"))
    calls = [p for p in parts if isinstance(p, ToolCall)]
    if calls and not any(c.id in sigs for c in calls):
        sigs[calls[0].id] = GEMINI_SKIP_SIGNATURE
        decisions.append(Decision(None, "pad", ("thoughtSignature",),
                                  "call has no signature of its own: documented validator skip"))
    sigs = {c.id: sigs[c.id] for c in calls if c.id in sigs}
    return PlannedMessage(index, m.role, tuple(parts), {}, sigs, thought_sig, tuple(decisions))


_PLANNERS = {
    "openai_chat": _plan_chat,
    "anthropic": _plan_blocks,
    "bedrock": _plan_blocks,
    "openai_responses": _plan_blocks,
    "gemini": _plan_gemini,
}
