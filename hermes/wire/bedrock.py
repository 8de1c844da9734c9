"""AWS Bedrock Converse / ConverseStream: render a ``ReplayPlan`` as Converse keyword arguments.

Wire facts (docs/replay.md, docs/emulators.md):

* Reasoning goes back as ``reasoningContent`` blocks in the assistant message, in the order
  captured: ``{"reasoningText": {"text", "signature"?}}`` (signature only for a signed
  ``anthropic.signature`` blob) or ``{"redactedContent": <bytes>}`` (the stored base64 of an
  ``anthropic.redacted`` blob, decoded). Which parts reach the wire is the planner's decision
  (route row ``bedrock``: Claude signed, DeepSeek R1 / Kimi K3 strip, others unsigned).
* Captured reasoning is stored Anthropic-shaped (``anthropic.signature`` / ``anthropic.redacted``)
  so a turn reloaded from state.db replays the same blocks.
* Converse needs user-first / user-last alternation and non-blank content: the plan marks which
  user-side messages merge and where a placeholder user turn goes (``replay.structure``, shown
  by ``hermes replay``); empty content becomes ``(empty)``.
* Streams carry no start event for text or reasoning blocks: every delta is keyed by
  ``contentBlockIndex``; signature deltas concatenate.

Pure translation, like every wire: the botocore transport (SigV4 signing, the binary event
stream, client errors) lives in ``hermes.transport.aws``, which feeds this module's decoder.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import orjson

from ..core.attempt import Attempt, Carried, blocks, build, signed
from ..core.errors import (
    StreamError,
    UnsupportedPart,
)
from ..core.messages import Compaction, Part, Reasoning, Text, ToolCall, ToolResult
from ..core.stream import Delta, FinishDelta, ReasoningDelta, TextDelta, ToolCallDelta, UsageDelta
from ..replay import ReplayPlan, Settings
from ..replay.blocks import plan_blocks
from ..replay.structure import Turns
from ..routing.models import Profile
from ..routing.resolve import Resolved
from ..routing.routes import deep_merge
from . import FunctionDecoder, ToolSpec
from .anthropic import BINDING_BETA, INTERLEAVED_BETA, bound

__all__ = [
    "EMPTY",
    "ITEMS",
    "PLACEHOLDER_USER",
    "PLANNER",
    "TURNS",
    "attempt",
    "decode_event",
    "decoder",
    "endpoint",
    "from_wire",
    "render_message",
    "thinking_fields",
    "to_wire",
]

PLANNER = plan_blocks
TURNS: Turns | None = Turns("Converse wants user and assistant turns to alternate", placeholders=True)

ITEMS = "messages"  # see ``Wire.ITEMS``

render_message: Callable[..., Any] | None = None
"""This wire renders the whole plan in ``to_wire``; nothing per message to reuse."""

EMPTY = "(empty)"
"""Stands in for blank content: Converse rejects empty content lists and blank text blocks."""
PLACEHOLDER_USER = "(continue)"
"""Inserted user turn where the history would break Converse's user-first/last alternation."""
SIGNATURE, REDACTED = "anthropic.signature", "anthropic.redacted"

_ANSWER_ROOM = 4096
"""Output tokens left for the answer above a manual thinking budget."""


# ----------------------------------------------------------------------------- request


def thinking_fields(profile: Profile, settings: Settings, thinking: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """(additionalModelRequestFields, inferenceConfig) that ask the model to think (or not).

    The model's profile says how: Claude's ``thinking`` object (adaptive or a manual budget),
    Nova's ``reasoningConfig`` (a level), or nothing."""
    effort = settings.effort
    if profile.thinking == "adaptive":
        binding = {"anthropic_beta": [BINDING_BETA]} if profile.prefix_bound else {}
        if not thinking and profile.keeps_thinking:
            return {**bound(profile.thinking_off(), profile), **binding}, {"maxTokens": profile.thinking_max_tokens}
        if not thinking:
            return {"thinking": {"type": "disabled"}}, {"maxTokens": profile.max_tokens}
        extra: dict[str, Any] = {"thinking": {"type": "adaptive", "display": "summarized"}}
        if effort and (level := profile.levels.get(effort)):
            extra["output_config"] = {"effort": level}
        return {**bound(extra, profile), **binding}, {"maxTokens": profile.thinking_max_tokens}
    if profile.thinking == "budget":
        if not thinking:
            return {}, {"maxTokens": profile.max_tokens}
        budget = max(profile.budgets.get(effort or "default", profile.budgets.get("default", 8000)), 1024)
        extra = {"thinking": {"type": "enabled", "budget_tokens": budget}}
        if profile.interleaved:
            extra["anthropic_beta"] = [INTERLEAVED_BETA]
        return extra, {"maxTokens": max(profile.max_tokens, budget + _ANSWER_ROOM)}
    if profile.thinking == "level" and thinking:
        level = profile.levels.get(effort or "medium", "medium")
        return {"reasoningConfig": {"type": "enabled", "maxReasoningEffort": level}}, {}
    return {}, {}


def to_wire(plan: ReplayPlan, *, tools: Sequence[ToolSpec] = (), settings: Settings | None = None,
            stream: bool = False, rendered: object = None) -> dict[str, Any]:
    """The Converse keyword arguments for ``plan`` (the same for converse and converse_stream)."""
    system: list[dict[str, Any]] = []
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    used_tools: dict[str, None] = {}
    for pm in plan.messages:
        if pm.role == "system":
            system += [{"text": t} for t in _texts(pm.parts) if t.strip()]
            continue
        side = "assistant" if pm.role == "assistant" else "user"
        blocks = [b for p in pm.parts for b in _block(p, side)]
        for b in blocks:
            if "toolUse" in b:
                used_tools[b["toolUse"]["name"]] = None
        # the turn structure is the plan's decision (replay.structure); this only follows it
        if pm.joins and turns:
            turns[-1][1].extend(blocks)
            continue
        if pm.placeholder:
            turns.append(("user", [{"text": PLACEHOLDER_USER}]))
        turns.append((side, blocks))
    if plan.placeholder_after or not turns:
        turns.append(("user", [{"text": PLACEHOLDER_USER}]))
    messages = [{"role": role, "content": _tool_results_first(blocks) or [{"text": EMPTY}]}
                for role, blocks in turns]

    model = plan.target.model
    extra, inference = thinking_fields(plan.target.profile, settings or Settings(), plan.thinking)
    if plan.thinking and plan.request_fields:
        extra = deep_merge(extra, plan.request_fields)
    body: dict[str, Any] = {"modelId": model, "messages": messages}
    if system:
        body["system"] = system
    if inference:
        body["inferenceConfig"] = inference
    specs = [_tool_spec(t) for t in tools]
    offered = {t.name for t in tools}
    # Converse refuses toolUse/toolResult blocks without a toolConfig: declare the tools the
    # history used even when this request offers none.
    specs += [_tool_spec(ToolSpec(n, f"tool {n}")) for n in used_tools if n not in offered]
    if not specs and any("toolResult" in b for _, bs in turns for b in bs):
        specs.append(_tool_spec(ToolSpec("tool", "placeholder for earlier tool results")))
    if specs:
        body["toolConfig"] = {"tools": specs}
    if extra:
        body["additionalModelRequestFields"] = extra
    return body


def _texts(parts: Sequence[Part]) -> list[str]:
    out = []
    for p in parts:
        if isinstance(p, Text):
            out.append(p.text)
        elif isinstance(p, Compaction):
            out.append(_summary(p))
        else:
            raise UnsupportedPart(f"bedrock: a system message cannot carry a {p.kind} part")
    return out


def _summary(p: Compaction) -> str:
    return f"Summary of the earlier conversation:\n{p.summary}"


def _tool_results_first(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Claude wants tool results before any text in a user turn; keep the rest in order."""
    return [b for b in blocks if "toolResult" in b] + [b for b in blocks if "toolResult" not in b]


def _block(p: Part, side: str) -> list[dict[str, Any]]:
    match p:
        case Text():
            return [{"text": p.text}] if p.text.strip() else []
        case Compaction():
            return [{"text": _summary(p)}]
        case Reasoning() if side == "assistant":
            return _reasoning_block(p)
        case ToolCall() if side == "assistant":
            return [{"toolUse": {"toolUseId": p.id, "name": p.name, "input": _tool_input(p.arguments)}}]
        case ToolResult() if side == "user":
            res: dict[str, Any] = {"toolUseId": p.call_id, "content": [{"text": p.content or EMPTY}]}
            if p.is_error:
                res["status"] = "error"
            return [{"toolResult": res}]
    raise UnsupportedPart(f"bedrock: a {side} turn cannot carry a {p.kind} part")


def _reasoning_block(p: Reasoning) -> list[dict[str, Any]]:
    if p.blob_kind == REDACTED:
        try:
            data = base64.b64decode(p.blob or "", validate=True)
        except (binascii.Error, ValueError):
            raise UnsupportedPart("bedrock: stored redacted reasoning is not valid base64") from None
        return [{"reasoningContent": {"redactedContent": data}}]
    if p.blob_kind == SIGNATURE:
        return [{"reasoningContent": {"reasoningText": {"text": p.text, "signature": p.blob}}}]
    if p.blob is not None:
        raise UnsupportedPart(f"bedrock: cannot carry a {p.blob_kind} reasoning blob")
    if not p.text.strip():
        return []
    return [{"reasoningContent": {"reasoningText": {"text": p.text}}}]


def _tool_input(arguments: str) -> Any:
    """The call's arguments as a JSON document; unparseable text goes as a JSON string."""
    try:
        return orjson.loads(arguments or "{}")
    except orjson.JSONDecodeError:
        return arguments


def _tool_spec(t: ToolSpec) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": t.name, "inputSchema": {"json": dict(t.parameters)}}
    if t.description:
        spec["description"] = t.description
    return {"toolSpec": spec}


# ----------------------------------------------------------------------------- response


def _b64(data: Any) -> str:
    """botocore hands blobs over as bytes; raw JSON has them base64 already."""
    if isinstance(data, bytes | bytearray):
        return base64.b64encode(bytes(data)).decode()
    if isinstance(data, str):
        return data
    raise StreamError(f"bedrock: redactedContent is neither bytes nor base64 text: {type(data).__name__}")


def _key(index: Any) -> str:
    if not isinstance(index, int) or isinstance(index, bool):
        raise StreamError(f"bedrock: contentBlockIndex is not an integer: {index!r:.40}")
    return f"b{index}"


def _reasoning_deltas(key: str, rc: Mapping[str, Any]) -> list[Delta]:
    out: list[Delta] = []
    if "reasoningText" in rc:  # whole block (converse)
        rt = rc["reasoningText"] or {}
        sig = rt.get("signature")
        out.append(ReasoningDelta(key, rt.get("text") or "", blob=sig or None, blob_kind=SIGNATURE if sig else None))
    if rc.get("text"):  # stream delta
        out.append(ReasoningDelta(key, rc["text"]))
    if rc.get("signature"):
        out.append(ReasoningDelta(key, blob=rc["signature"], blob_kind=SIGNATURE))
    if "redactedContent" in rc:
        out.append(ReasoningDelta(key, blob=_b64(rc["redactedContent"]), blob_kind=REDACTED, blob_mode="replace"))
    return out


def _usage(usage: Any) -> list[Delta]:
    return [UsageDelta(dict(usage))] if isinstance(usage, Mapping) and usage else []


def _plain(payload: Any) -> None:
    """botocore decodes JSON with the stdlib, which lets through what the store cannot write
    (lone surrogates, integers past 64 bits): refuse those here, like the other wires' orjson."""
    try:
        orjson.dumps(payload, default=lambda o: "" if isinstance(o, bytes | bytearray) else repr(o))
    except orjson.JSONEncodeError as e:
        raise StreamError(f"bedrock: response carries a value that is not plain JSON ({e})") from None


def from_wire(payload: Mapping[str, Any]) -> list[Delta]:
    """A whole Converse response as the deltas its stream would have produced."""
    _plain(payload)
    with _malformed("bedrock"):
        return _from_wire(payload)


def _from_wire(payload: Mapping[str, Any]) -> list[Delta]:
    try:
        message = payload["output"]["message"]
        content = message["content"]
    except (KeyError, TypeError):
        raise StreamError("bedrock: response has no output.message.content") from None
    out: list[Delta] = []
    for i, block in enumerate(content):
        key = f"b{i}"
        if "text" in block:
            out.append(TextDelta(key, block["text"]))
        elif "reasoningContent" in block:
            out += _reasoning_deltas(key, block["reasoningContent"])
        elif "toolUse" in block:
            tu = block["toolUse"]
            args = orjson.dumps(tu.get("input", {})).decode()
            out.append(ToolCallDelta(key, id=tu.get("toolUseId"), name=tu.get("name"), arguments=args))
    out += _usage(payload.get("usage"))
    if not payload.get("stopReason"):
        raise StreamError("bedrock: response has no stopReason")
    out.append(FinishDelta(payload["stopReason"]))
    return out


_STREAM_ERRORS = ("internalServerException", "modelStreamErrorException", "validationException",
                  "throttlingException", "serviceUnavailableException")


def decode_event(event: str, data: Any) -> list[Delta]:
    """One ConverseStream event (botocore's parsed member, or its JSON text) as deltas."""
    if isinstance(data, str | bytes):
        try:
            data = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise StreamError(f"bedrock: {event} event is not JSON: {data[:80]!r}") from None
    if not isinstance(data, Mapping):
        raise StreamError(f"bedrock: {event} event is not an object")
    if event in _STREAM_ERRORS:
        raise StreamError(f"bedrock: stream failed with {event}: {data.get('message', '')}")
    _plain(data)
    with _malformed("bedrock"):
        return _decode(event, data)


def _decode(event: str, data: Mapping[str, Any]) -> list[Delta]:
    match event:
        case "contentBlockStart":
            start = data.get("start") or {}
            if "toolUse" in start:
                tu = start["toolUse"]
                return [ToolCallDelta(_key(data.get("contentBlockIndex")), id=tu.get("toolUseId"), name=tu.get("name"))]
            return []
        case "contentBlockDelta":
            key = _key(data.get("contentBlockIndex"))
            delta = data.get("delta") or {}
            if "text" in delta:
                return [TextDelta(key, delta["text"])]
            if "reasoningContent" in delta:
                return _reasoning_deltas(key, delta["reasoningContent"])
            if "toolUse" in delta:
                return [ToolCallDelta(key, arguments=(delta["toolUse"] or {}).get("input") or "")]
            return []
        case "messageStop":
            reason = data.get("stopReason")
            if not reason:
                raise StreamError("bedrock: messageStop without stopReason")
            return [FinishDelta(reason)]
        case "metadata":
            return _usage(data.get("usage"))
    return []  # messageStart, contentBlockStop, and events added later carry nothing we keep


# ----------------------------------------------------------------------------- transport


_DECODER = FunctionDecoder(decode_event, from_wire)


def decoder(resolved: Resolved) -> FunctionDecoder:
    """Converse events carry their block index: one stateless decoder serves every request."""
    return _DECODER


def endpoint(resolved: Resolved, *, stream: bool) -> tuple[str, dict[str, str]]:
    """Where botocore sends the request (the row's base URL, else the region's runtime host)."""
    model = quote(resolved.model, safe="")
    base = resolved.base_url or f"https://bedrock-runtime.{_region()}.amazonaws.com"
    return f"{base}/model/{model}/{'converse-stream' if stream else 'converse'}", {}


def _region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


_PARSE_ERRORS: tuple[type[Exception], ...] = (ValueError, TypeError, KeyError, AttributeError, IndexError,
                                              RecursionError, OverflowError)


@contextmanager
def _malformed(route: str) -> Iterator[None]:
    """botocore parses the response body outside its own error handling: invalid UTF-8, deep
    nesting or a member of the wrong type escape as ``UnicodeDecodeError`` / ``RecursionError`` /
    ``TypeError``. Those mean a malformed response, so they become ``StreamError``."""
    from botocore.parsers import ResponseParserError

    try:
        yield
    except (*_PARSE_ERRORS, ResponseParserError) as e:
        raise StreamError(f"{route}: malformed response ({type(e).__name__}: {str(e)[:120]}); "
                          "nothing was stored") from None




# ----------------------------------------------------------------------------- attempt


def attempt(plan: ReplayPlan, body: Mapping[str, Any]) -> Attempt:
    """What the Converse arguments carried back: reasoning blocks (a signature or the redacted
    bytes by the hash of their stored base64 form) and the turns holding ``toolUse``."""
    carried: list[Carried] = []
    turns: list[int] = []
    for i, k, b in blocks(body, "messages", "content"):
        if "toolUse" in b:
            turns.append(i)
        rc = b.get("reasoningContent")
        if not isinstance(rc, Mapping):
            continue
        at = f"content.{k}.reasoningContent"
        if "redactedContent" in rc:
            data = rc["redactedContent"]
            stored = base64.b64encode(data).decode() if isinstance(data, bytes) else data
            carried.append(Carried(i, f"{at}.redactedContent", *signed(stored, REDACTED)))
        rt = rc.get("reasoningText")
        if isinstance(rt, Mapping):
            h, kind = signed(rt.get("signature"), SIGNATURE)
            carried.append(Carried(i, f"{at}.reasoningText.{'signature' if h else 'text'}", h, kind))
    return build("bedrock", plan.target.route.must_echo, body, carried, turns)
