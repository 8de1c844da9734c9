"""Anthropic Messages wire: direct API, Vertex AI (``rawPredict``) and Azure Foundry.

Pure translation, no I/O. The three variants share one body shape; they differ only in
where the request goes and in two body fields (Vertex: ``model`` moves into the URL and
``anthropic_version: vertex-2023-10-16`` joins the body). Which variant a request is comes
from the route row (``Route.variant``); how the model thinks, from its profile.

Rendering rules (the plan already decided *what* goes; this module decides only *how*):

* ``system`` messages become the top-level ``system`` string;
* tool results become ``user`` messages of ``tool_result`` blocks; a message the plan marks
  ``joins`` merges into the previous one (the planner decides where alternation needs it);
* an assistant turn is its parts in stored order: signed reasoning → ``thinking`` /
  ``redacted_thinking`` byte-exact (signatures are checked against the block), text →
  ``text`` (empty skipped), calls → ``tool_use``. On a ``keep`` row (the vendors'
  Anthropic-compatible endpoints) a reasoning part with no blob is an unsigned ``thinking``
  block; anywhere else, and with another kind of blob, it cannot be a block: ``UnsupportedPart``
  (the planner never sends one).

Decoding: every content block keeps its stream ``index`` as the delta key ``b{index}`` so the
fold keeps Anthropic's block order. A stream needs a little memory (which index is a thinking
block), so streams go through ``new_decoder()``; ``from_wire`` emits the very deltas the
stream would, so both fold to the same turn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import orjson

from ..core.attempt import Attempt, Carried, blocks, build, signed
from ..core.errors import StreamError, UnsupportedPart
from ..core.messages import Compaction, Reasoning, Text, ToolCall, ToolResult
from ..core.stream import (
    Delta,
    FinishDelta,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
)
from ..replay import PlannedMessage, ReplayPlan, Settings
from ..replay.blocks import plan_blocks
from ..replay.structure import Turns
from ..routing.models import Profile
from ..routing.resolve import Resolved
from ..routing.routes import Route, deep_merge
from . import FunctionDecoder, ToolSpec

__all__ = [
    "API_VERSION",
    "ITEMS",
    "PLANNER",
    "REDACTED",
    "SIGNATURE",
    "TURNS",
    "VERTEX_VERSION",
    "StreamDecoder",
    "attempt",
    "betas",
    "bound",
    "decode_event",
    "decoder",
    "endpoint",
    "from_wire",
    "new_decoder",
    "render_message",
    "thinking_config",
    "to_wire",
]

PLANNER = plan_blocks
TURNS: Turns | None = Turns("the Messages API wants user and assistant turns to alternate", empty_summary=True)

API_VERSION = "2023-06-01"
VERTEX_VERSION = "vertex-2023-10-16"
SIGNATURE = "anthropic.signature"
REDACTED = "anthropic.redacted"

ANSWER_ROOM = 8192
"""Output tokens left for the answer on top of a thinking budget (``max_tokens > budget``)."""
INTERLEAVED_BETA = "interleaved-thinking-2025-05-14"
"""Claude 4.x budget models think between tool calls only with this beta."""
BINDING_BETA = "thinking-binding-controls-2026-08-01"
"""The beta that lets a request set ``thinking.block_binding``."""
DROP_BLOCK = {"prefix_mismatch_behavior": "drop_block"}
"""``thinking.block_binding`` of a prefix-bound model: a block whose prefix changed (compaction
rewrote the turns before it) is dropped by the API instead of refusing the request."""


def betas(profile: Profile) -> tuple[str, ...]:
    """The ``anthropic-beta`` values every request for this model carries (any wire variant)."""
    out = (INTERLEAVED_BETA,) if profile.interleaved and profile.thinking == "budget" else ()
    return (*out, BINDING_BETA) if profile.prefix_bound else out


def bound(fields: dict[str, Any], profile: Profile) -> dict[str, Any]:
    """``fields`` with an adaptive ``thinking`` of a prefix-bound model opting into ``drop_block``."""
    thinking = fields.get("thinking")
    if profile.prefix_bound and isinstance(thinking, dict) and thinking.get("type") == "adaptive":
        return {**fields, "thinking": {**thinking, "block_binding": dict(DROP_BLOCK)}}
    return fields


def thinking_config(profile: Profile, settings: Settings) -> tuple[dict[str, Any], int]:
    """(body fields for thinking, max_tokens) for a request that thinks, from the model's profile."""
    effort = settings.effort
    shown = {"display": profile.display} if profile.display else {}
    if profile.thinking == "adaptive":
        fields: dict[str, Any] = {"thinking": {"type": "adaptive", **shown}}
        if effort and (level := profile.levels.get(effort)):
            fields["output_config"] = {"effort": level}
        return bound(fields, profile), profile.thinking_max_tokens
    budget = max(profile.budgets.get(effort or "default", profile.budgets.get("default", 8000)), 1024)
    return {"thinking": {"type": "enabled", "budget_tokens": budget, **shown}}, budget + ANSWER_ROOM


# ----------------------------------------------------------------------------- endpoint


def endpoint(resolved: Resolved, *, stream: bool) -> tuple[str, dict[str, str]]:
    """(URL, non-auth headers) for one Messages request on the row's endpoint variant."""
    base = resolved.base_url.rstrip("/")
    headers = dict(resolved.route.headers)
    if wanted := betas(resolved.profile):
        have = [b.strip() for b in headers.pop("anthropic-beta", "").split(",") if b.strip()]
        headers["anthropic-beta"] = ",".join(dict.fromkeys((*have, *wanted)))
    if resolved.route.variant == "vertex":
        verb = "streamRawPredict" if stream else "rawPredict"
        return f"{base}/publishers/anthropic/models/{quote(resolved.model, safe='@')}:{verb}", headers
    return f"{base}/v1/messages", {"anthropic-version": API_VERSION, **headers}


# ----------------------------------------------------------------------------- request


def _block(part: object, role: str, unsigned: bool = False) -> dict[str, Any] | None:
    """One neutral part as one content block (None: nothing to send, e.g. empty text)."""
    match part:
        case Text():
            return {"type": "text", "text": part.text} if part.text else None
        case Compaction():
            return {"type": "text", "text": part.summary} if part.summary else None
        case Reasoning() if role == "assistant":
            if part.blob is not None and part.blob_kind == SIGNATURE:
                return {"type": "thinking", "thinking": part.text, "signature": part.blob}
            if part.blob is not None and part.blob_kind == REDACTED:
                return {"type": "redacted_thinking", "data": part.blob}
            if part.blob is None and unsigned:  # a ``keep`` route's unsigned block: readable text
                return {"type": "thinking", "thinking": part.text}
            raise UnsupportedPart(
                f"reasoning without an Anthropic blob (blob_kind={part.blob_kind!r}) cannot be a "
                "thinking block; the replay plan should have dropped it")
        case ToolCall() if role == "assistant":
            try:
                args = orjson.loads(part.arguments or "{}")
            except orjson.JSONDecodeError:
                raise UnsupportedPart(
                    f"tool call {part.id!r} ({part.name}) has arguments that are not JSON: "
                    f"{part.arguments[:80]!r}") from None
            if not isinstance(args, dict):
                raise UnsupportedPart(f"tool call {part.id!r} ({part.name}) arguments are not a JSON object")
            return {"type": "tool_use", "id": part.id, "name": part.name, "input": args}
        case ToolResult() if role in ("tool", "user"):
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.call_id, "content": part.content}
            if part.is_error:
                block["is_error"] = True
            return block
    raise UnsupportedPart(f"a {type(part).__name__} part cannot appear in a {role!r} message on the Anthropic wire")


ITEMS = "messages"  # see ``Wire.ITEMS``

def render_message(pm: PlannedMessage, route: object = None) -> list[dict[str, Any]]:
    """One planned message as a message of its own, ``[{"role", "content"}]`` (``[]``: it
    renders nothing — a system message, whose text goes to the top-level ``system``, or only
    empty text). Pure, so the builder memoises it per planned message; whole, so a message
    that opens a turn nobody joins is spliced as its serialised bytes, never copied."""
    if pm.role == "system":
        return []
    unsigned = isinstance(route, Route) and route.policy == "keep"
    content = [b for p in pm.parts if (b := _block(p, pm.role, unsigned)) is not None]
    if not content:
        return []
    return [{"role": "assistant" if pm.role == "assistant" else "user", "content": content}]


def _system(m: PlannedMessage) -> list[str]:
    texts = []
    for p in m.parts:
        if isinstance(p, Text | Compaction):
            text = p.text if isinstance(p, Text) else p.summary
            if text:
                texts.append(text)
        else:
            raise UnsupportedPart(f"a {type(p).__name__} part cannot appear in a system message")
    return texts


def _messages(plan: ReplayPlan) -> tuple[str, list[dict[str, Any]]]:
    """(system text, messages), merging the messages the plan marks ``joins``."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    last: list[dict[str, Any]] | None = None  # the open message's content list
    for m in plan.messages:
        if m.role == "system":
            system += _system(m)
            continue
        rendered = render_message(m, plan.target.route)
        if not rendered:
            continue
        content = rendered[0]["content"]
        if m.joins and last is not None:  # the plan's structure decision (replay.structure)
            last.extend(content)
        else:
            last = content
            out.append(rendered[0])
    return "\n\n".join(system), out


_OPEN = {"assistant": b'{"role":"assistant","content":[', "user": b'{"role":"user","content":['}


def _spliced(plan: ReplayPlan, rendered: Sequence[bytes]) -> tuple[str, list[orjson.Fragment]]:
    """``_messages`` from serialised per-message renders (``builder.memo``): the same JSON,
    assembled as bytes — no block is serialised again, and a turn of one message is its
    render's bytes as they are (only merged turns are joined)."""
    system: list[str] = []
    out: list[Any] = []  # per turn: the render's bytes, or the pieces of a merged turn
    for m, whole in zip(plan.messages, rendered, strict=True):
        if m.role == "system":
            system += _system(m)
            continue
        if not whole:
            continue
        if m.joins and out:
            inner = whole[len(_OPEN["assistant" if m.role == "assistant" else "user"]):-2]
            prev = out[-1]
            out[-1] = [prev[:-2], b",", inner] if isinstance(prev, bytes) else [*prev, b",", inner]
        else:
            out.append(whole)
    fragments = [orjson.Fragment(t if isinstance(t, bytes) else b"".join([*t, b"]}"])) for t in out]
    return "\n\n".join(system), fragments


_DEFAULT_SETTINGS = Settings()


def to_wire(plan: ReplayPlan, *, tools: Sequence[ToolSpec] = (), settings: Settings = _DEFAULT_SETTINGS,
            stream: bool = False, rendered: Sequence[bytes] | None = None) -> dict[str, Any]:
    """The Messages request body for ``plan`` (Vertex: without ``model``, with its version).
    ``rendered``: each planned message's ``render_message``, serialised (``builder.memo``),
    when the caller kept them: spliced into the body as bytes, after the plan's kept runs."""
    target = plan.target
    messages: Any
    system, messages = _messages(plan) if rendered is None else _spliced(plan, rendered)
    if plan.kept:  # kept runs: turns already built (the planner made sure none joins the next)
        system = "\n\n".join([*(r.system for r in plan.kept if r.system), *([system] if system else [])])
        messages = [*(orjson.Fragment(r.body) for r in plan.kept if r.body), *messages]
    body: dict[str, Any] = {"model": target.model}
    if plan.thinking:
        fields, max_tokens = thinking_config(target.profile, settings)
    elif fields := bound(target.profile.thinking_off(), target.profile):
        max_tokens = target.profile.thinking_max_tokens if target.profile.keeps_thinking else target.profile.max_tokens
    else:
        max_tokens = target.profile.max_tokens
    body["max_tokens"] = max_tokens
    if system:
        body["system"] = system
    body["messages"] = messages
    if tools:
        body["tools"] = [
            {"name": t.name, **({"description": t.description} if t.description else {}),
             "input_schema": dict(t.parameters)}
            for t in tools
        ]
    body.update(fields)
    if stream:
        body["stream"] = True
    body = deep_merge(body, plan.request_fields)
    if target.route.variant == "vertex":
        body.pop("model", None)
        body["anthropic_version"] = VERTEX_VERSION
    return body


# ----------------------------------------------------------------------------- response


def _usage(usage: Any) -> list[Delta]:
    return [UsageDelta(dict(usage))] if isinstance(usage, Mapping) and usage else []


def _start_block(index: int, block: Mapping[str, Any], *, whole: bool) -> list[Delta]:
    """Deltas for a block as ``content_block_start`` (``whole=False``) or a complete block."""
    key = f"b{index}"
    kind = block.get("type")
    if kind == "thinking":
        out: list[Delta] = [ReasoningDelta(key, text=_str(block, "thinking"))]
        sig = _str(block, "signature")
        if sig:
            out.append(ReasoningDelta(key, blob=sig, blob_kind=SIGNATURE))
        return out
    if kind == "redacted_thinking":
        data = _str(block, "data")
        if not data:
            raise StreamError(f"redacted_thinking block {index} has no data")
        return [ReasoningDelta(key, blob=data, blob_kind=REDACTED, blob_mode="replace")]
    if kind == "text":
        return [TextDelta(key, _str(block, "text"))]
    if kind == "tool_use":
        args = ""
        if whole:
            raw = block.get("input", {})
            if not isinstance(raw, Mapping):
                raise StreamError(f"tool_use block {index} input is not an object")
            args = orjson.dumps(raw).decode() if raw else ""
        return [ToolCallDelta(key, id=_str(block, "id") or None, name=_str(block, "name") or None,
                              arguments=args)]
    return []  # server-side blocks (web search results ...) are not part of the stored turn


def _str(d: Mapping[str, Any], name: str) -> str:
    v = d.get(name) or ""
    if not isinstance(v, str):
        raise StreamError(f"field {name!r} is not a string: {v!r:.60}")
    return v


def from_wire(payload: Any) -> list[Delta]:
    """A whole Messages response as the deltas its stream would have produced."""
    if not isinstance(payload, Mapping):
        raise StreamError("Anthropic response is not a JSON object")
    if payload.get("type") == "error":
        _raise_error(payload)
    content = payload.get("content")
    if not isinstance(content, list):
        raise StreamError("Anthropic response has no content list")
    out: list[Delta] = []
    for i, block in enumerate(content):
        if not isinstance(block, Mapping):
            raise StreamError(f"content block {i} is not an object")
        out += _start_block(i, block, whole=True)
    out += _usage(payload.get("usage"))
    reason = payload.get("stop_reason")
    if isinstance(reason, str) and reason:
        out.append(FinishDelta(reason))
    return out


def _raise_error(data: Mapping[str, Any]) -> None:
    err = data.get("error")
    if isinstance(err, Mapping):
        raise StreamError(f"provider error in stream: {err.get('type', 'error')}: {err.get('message', '')}")
    raise StreamError(f"provider error in stream: {str(err or data)[:200]}")


class StreamDecoder:
    """Decode one Messages SSE stream, remembering each block's type by index.

    Memory is what lets a malformed stream be refused: a ``signature_delta`` for an index
    that has no thinking block, or a delta for a block that never started, is a
    ``StreamError`` instead of a silently invented reasoning part.
    """

    __slots__ = ("blocks", "track")

    def __init__(self, *, track: bool = True) -> None:
        self.blocks: dict[int, str] = {}
        self.track = track
        """False: no memory (one event at a time); block-consistency checks are skipped."""

    def __call__(self, event: str, data: str) -> list[Delta]:
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise StreamError(f"stream event {event!r} is not JSON: {data[:80]!r}") from None
        if not isinstance(obj, Mapping):
            raise StreamError(f"stream event {event!r} is not a JSON object")
        kind = obj.get("type", event)
        if kind == "error" or event == "error":
            _raise_error(obj)
        match kind:
            case "message_start":
                msg = obj.get("message")
                return _usage(msg.get("usage")) if isinstance(msg, Mapping) else []
            case "content_block_start":
                index, block = self._index(obj), obj.get("content_block")
                if not isinstance(block, Mapping):
                    raise StreamError(f"content_block_start {index} has no content_block")
                self.blocks[index] = str(block.get("type"))
                return _start_block(index, block, whole=False)
            case "content_block_delta":
                return self._delta(self._index(obj), obj.get("delta"))
            case "message_delta":
                out = _usage(obj.get("usage"))
                delta = obj.get("delta")
                reason = delta.get("stop_reason") if isinstance(delta, Mapping) else None
                if isinstance(reason, str) and reason:
                    out.append(FinishDelta(reason))
                return out
        return []  # ping, content_block_stop, message_stop, future event types

    @staticmethod
    def _index(obj: Mapping[str, Any]) -> int:
        index = obj.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise StreamError(f"{obj.get('type')} without a valid block index: {index!r}")
        return index

    def _delta(self, index: int, delta: Any) -> list[Delta]:
        if not isinstance(delta, Mapping):
            raise StreamError(f"content_block_delta {index} has no delta object")
        key, kind, block = f"b{index}", delta.get("type"), self.blocks.get(index)
        if not self.track:
            block = {"signature_delta": "thinking", "thinking_delta": "thinking", "text_delta": "text",
                     "input_json_delta": "tool_use"}.get(str(kind), block)
        if kind == "signature_delta":
            if block != "thinking":
                raise StreamError(f"signature delta with no thinking block (index {index} is {block or 'not started'})")
            # the delta carries the whole signature: assign it (as the SDK's accumulator does),
            # so a repeated delta cannot turn the blob into two signatures glued together
            return [ReasoningDelta(key, blob=_str(delta, "signature"), blob_kind=SIGNATURE, blob_mode="replace")]
        if block is None:
            raise StreamError(f"{kind} for block {index}, which never started")
        if kind == "thinking_delta":
            self._expect(block, "thinking", kind, index)
            return [ReasoningDelta(key, text=_str(delta, "thinking"))]
        if kind == "text_delta":
            self._expect(block, "text", kind, index)
            return [TextDelta(key, _str(delta, "text"))]
        if kind == "input_json_delta":
            self._expect(block, "tool_use", kind, index)
            return [ToolCallDelta(key, arguments=_str(delta, "partial_json"))]
        return []  # citations_delta and future delta types carry nothing we store

    @staticmethod
    def _expect(block: str, want: str, kind: Any, index: int) -> None:
        if block != want:
            raise StreamError(f"{kind} for block {index}, which is a {block} block")


def new_decoder() -> Callable[[str, str], list[Delta]]:
    """A fresh stateful stream decoder (its block memory lives for one response)."""
    return StreamDecoder()


def decoder(resolved: Resolved) -> FunctionDecoder:
    """The decoder for one response: a fresh ``StreamDecoder`` for its events, ``from_wire`` whole."""
    return FunctionDecoder(StreamDecoder(), from_wire)


def decode_event(event: str, data: str) -> list[Delta]:
    """One event decoded without stream memory, so block-consistency is not checked here.

    ``provider.complete`` decodes streams with ``new_decoder()``, which refuses a
    ``signature_delta`` whose block is not a thinking block; use that for whole streams.
    """
    return StreamDecoder(track=False)(event, data)


# ----------------------------------------------------------------------------- attempt


def attempt(plan: ReplayPlan, body: Mapping[str, Any]) -> Attempt:
    """What ``body`` carried back: thinking blocks (signed ones by hash), redacted blocks,
    and the assistant messages holding ``tool_use`` (see ``hermes.core.attempt``)."""
    carried: list[Carried] = []
    turns: list[int] = []
    for i, k, b in blocks(body, "messages", "content"):
        kind = b.get("type")
        if kind == "thinking":
            h, sk = signed(b.get("signature"), SIGNATURE)
            carried.append(Carried(i, f"content.{k}.{'signature' if h else 'thinking'}", h, sk))
        elif kind == "redacted_thinking":
            carried.append(Carried(i, f"content.{k}.data", *signed(b.get("data"), REDACTED)))
        elif kind == "tool_use":
            turns.append(i)
    return build("anthropic", plan.target.route.must_echo, body, carried, turns)
