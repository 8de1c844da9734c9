"""AWS Bedrock Converse / ConverseStream: render a ``ReplayPlan`` as Converse keyword arguments.

Wire facts (from the Bedrock Converse API reference and observed exchanges):

* Reasoning goes back as ``reasoningContent`` blocks in the assistant message, in the order
  captured: ``{"reasoningText": {"text", "signature"?}}`` (signature only for a signed
  ``anthropic.signature`` blob) or ``{"redactedContent": <bytes>}`` (the stored base64 of an
  ``anthropic.redacted`` blob, decoded). Which parts reach the wire is the planner's decision
  (route row ``bedrock``: Claude signed, DeepSeek R1 / Kimi K3 strip, others unsigned).
* Captured reasoning is stored Anthropic-shaped (``anthropic.signature`` / ``anthropic.redacted``)
  so a turn reloaded from state.db replays the same blocks.
* Converse needs user-first / user-last alternation and non-blank content: consecutive user-side
  messages merge, placeholder user turns are inserted, empty content becomes ``(empty)``.
* Streams carry no start event for text or reasoning blocks: every delta is keyed by
  ``contentBlockIndex``; signature deltas concatenate.

The transport is botocore's (SigV4 signing and event-stream decoding are not hand-written here):
``call`` opens a ``bedrock-runtime`` client and feeds deltas into the shared fold.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import orjson

from ..errors import (
    AuthFailed,
    ConfigError,
    HermesError,
    ProviderConnectionError,
    ProviderHTTPError,
    RateLimited,
    StreamError,
    UnsupportedPart,
    register_secret,
)
from ..messages import Compaction, Part, Reasoning, Text, ToolCall, ToolResult
from ..replay import ReplayPlan, Settings
from ..resolve import Resolved
from ..routes import deep_merge
from ..stream import Delta, FinishDelta, ReasoningDelta, TextDelta, ToolCallDelta, UsageDelta
from . import ToolSpec

__all__ = ["EMPTY", "PLACEHOLDER_USER", "call", "decode_event", "from_wire", "parse_converse",
           "stream_deltas", "thinking_fields", "to_wire"]

EMPTY = "(empty)"
"""Stands in for blank content: Converse rejects empty content lists and blank text blocks."""
PLACEHOLDER_USER = "(continue)"
"""Inserted user turn where the history would break Converse's user-first/last alternation."""
SIGNATURE, REDACTED = "anthropic.signature", "anthropic.redacted"

# --- model facts for the thinking request (small tables, matched on the lower-case model id)
_ADAPTIVE = re.compile(r"claude-(opus|sonnet|haiku)-4-[6-9]|claude-[a-z]+-[5-9](?![0-9])")
"""Claude models that take ``thinking: {"type": "adaptive"}`` instead of a manual budget."""
_NOVA2 = re.compile(r"nova-2")
_BUDGET = {"minimal": 1024, "low": 2048, "medium": 8000, "high": 16000, "xhigh": 24000, "max": 32000}
_DEFAULT_BUDGET = _BUDGET["medium"]
_DEFAULT_MAX_TOKENS = 8192
"""Claude's output cap when we set one; raised above the thinking budget when thinking."""
_ANTHROPIC_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh",
                     "max": "max"}
_NOVA_EFFORT = {"minimal": "low", "low": "low", "medium": "medium"}
_INTERLEAVED = "interleaved-thinking-2025-05-14"


# ----------------------------------------------------------------------------- request


def thinking_fields(model: str, settings: Settings, thinking: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """(additionalModelRequestFields, inferenceConfig) that ask ``model`` to think (or not)."""
    m = model.lower()
    effort = settings.effort
    if "claude" in m:
        if _ADAPTIVE.search(m):
            if not thinking:
                return {"thinking": {"type": "disabled"}}, {"maxTokens": _DEFAULT_MAX_TOKENS}
            extra: dict[str, Any] = {"thinking": {"type": "adaptive", "display": "summarized"}}
            if effort:
                extra["output_config"] = {"effort": _ANTHROPIC_EFFORT.get(effort, "high")}
            return extra, {"maxTokens": _DEFAULT_MAX_TOKENS}
        if not thinking:
            return {}, {"maxTokens": _DEFAULT_MAX_TOKENS}
        budget = _BUDGET.get(effort or "", _DEFAULT_BUDGET)
        extra = {"thinking": {"type": "enabled", "budget_tokens": budget}}
        if "claude-3" not in m:
            extra["anthropic_beta"] = [_INTERLEAVED]
        return extra, {"maxTokens": max(_DEFAULT_MAX_TOKENS, budget + 4096)}
    if _NOVA2.search(m) and thinking:
        level = _NOVA_EFFORT.get(effort or "medium", "high")
        return {"reasoningConfig": {"type": "enabled", "maxReasoningEffort": level}}, {}
    return {}, {}


def to_wire(plan: ReplayPlan, *, tools: Sequence[ToolSpec] = (), settings: Settings | None = None,
            stream: bool = False, cache: object = None) -> dict[str, Any]:
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
        if turns and turns[-1][0] == side == "user":
            turns[-1][1].extend(blocks)
            continue
        if side == "assistant" and (not turns or turns[-1][0] == "assistant"):
            turns.append(("user", [{"text": PLACEHOLDER_USER}]))
        turns.append((side, blocks))
    if not turns or turns[-1][0] == "assistant":
        turns.append(("user", [{"text": PLACEHOLDER_USER}]))
    messages = [{"role": role, "content": _tool_results_first(blocks) or [{"text": EMPTY}]}
                for role, blocks in turns]

    model = plan.target.model
    extra, inference = thinking_fields(model, settings or Settings(), plan.thinking)
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


def _region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


_CLIENTS: dict[tuple[Any, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def _client(resolved: Resolved) -> Any:
    """A bedrock-runtime client for this endpoint and these credentials (cached: building one
    costs botocore a few hundred milliseconds; clients are thread-safe)."""
    import botocore.session
    from botocore.config import Config

    session = botocore.session.get_session()
    creds = session.get_credentials()
    bearer = os.environ.get("AWS_BEARER_TOKEN_BEDROCK")
    if creds is None and not bearer:
        raise ConfigError("no AWS credentials for Bedrock",
                          hint="set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), "
                               "or AWS_BEARER_TOKEN_BEDROCK")
    frozen = creds.get_frozen_credentials() if creds is not None else None
    if frozen is not None:
        register_secret(frozen.secret_key)
        register_secret(frozen.token)
    register_secret(bearer)
    attempts = int(os.environ.get("AWS_MAX_ATTEMPTS") or 3)
    mode = os.environ.get("AWS_RETRY_MODE") or "standard"
    key = (resolved.base_url, _region(), attempts, mode, bearer, tuple(frozen) if frozen else None)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            config = Config(retries={"mode": mode, "total_max_attempts": attempts}, read_timeout=300,
                            connect_timeout=30, user_agent_extra="hermes")
            client = session.create_client("bedrock-runtime", region_name=_region(),
                                           endpoint_url=resolved.base_url or None, config=config)
            if len(_CLIENTS) >= 8:
                _CLIENTS.pop(next(iter(_CLIENTS))).close()
            _CLIENTS[key] = client
    return client


def call(resolved: Resolved, body: Mapping[str, Any], *, stream: bool, api_key: str | None,
         feed: Callable[[Sequence[Delta]], None]) -> None:
    """Send ``body`` with botocore (SigV4 from the standard AWS chain) and feed the deltas.

    ``api_key`` is not used: Bedrock authenticates with AWS credentials (or botocore's own
    ``AWS_BEARER_TOKEN_BEDROCK``).
    """
    from botocore.exceptions import BotoCoreError, ClientError

    route = resolved.route.key
    client = _client(resolved)
    try:
        if not stream:
            with _malformed(route):
                payload = client.converse(**body)
            feed(from_wire(payload))
            return
        events = client.converse_stream(**body)["stream"]
        try:
            stream_deltas(events, route, feed)
        finally:
            events.close()
    except ClientError as e:
        raise _client_error(e, route) from None
    except BotoCoreError as e:
        raise _boto_error(e, route) from None


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


def parse_converse(raw: bytes, shape: Any, route: str) -> list[Delta]:
    """A Converse HTTP 200 body parsed the way ``client.converse`` does (botocore's REST-JSON
    parser against the ``Converse`` output shape), then :func:`from_wire`. Used by the fuzzer to
    drive the real parse without a network round trip."""
    from botocore.parsers import RestJSONParser

    with _malformed(route):
        payload = RestJSONParser().parse({"status_code": 200, "headers": {}, "body": raw}, shape)
    return from_wire(payload)


def stream_deltas(events: Any, route: str, feed: Callable[[Sequence[Delta]], None]) -> None:
    """Feed the deltas of a botocore ``EventStream`` (ConverseStream's ``stream`` member)."""
    for name, data in _iter_events(events, route):
        feed(decode_event(name, data))


def _iter_events(events: Any, route: str) -> Iterator[tuple[str, Any]]:
    from botocore.eventstream import ParserError
    from botocore.exceptions import BotoCoreError, EventStreamError
    from botocore.parsers import ResponseParserError
    from urllib3.exceptions import HTTPError as Urllib3Error

    it = iter(events)
    while True:
        try:
            event = next(it)
        except StopIteration:
            return
        except EventStreamError as e:
            err = e.response.get("Error", {})
            raise StreamError(f"{route}: stream failed with {err.get('Code', 'error')}: "
                              f"{err.get('Message', '')}; nothing was stored") from None
        except ParserError as e:
            raise StreamError(f"{route}: malformed event-stream frame ({e}); nothing was stored") from None
        except (BotoCoreError, OSError, Urllib3Error) as e:
            raise StreamError(f"{route}: stream broke off ({e}); nothing was stored") from None
        except (*_PARSE_ERRORS, ResponseParserError) as e:  # botocore's event payload parser: bad JSON / wrong member types
            raise StreamError(f"{route}: malformed event ({type(e).__name__}: {str(e)[:120]}); "
                              "nothing was stored") from None
        if not isinstance(event, Mapping):
            raise StreamError(f"{route}: malformed event ({type(event).__name__}); nothing was stored")
        yield from event.items()


def _client_error(e: Any, route: str) -> ProviderHTTPError:
    err = e.response.get("Error", {})
    meta = e.response.get("ResponseMetadata", {})
    code = str(err.get("Code") or "UnknownError")
    message = str(err.get("Message") or "")
    status = int(meta.get("HTTPStatusCode") or 0)
    body = orjson.dumps({"__type": code, "message": message}).decode()
    cls: type[ProviderHTTPError] = ProviderHTTPError
    hint = ""
    if status in (401, 403) or code in ("AccessDeniedException", "UnrecognizedClientException"):
        cls, hint = AuthFailed, "check the AWS credentials and that the model is enabled for this account"
    elif status == 429 or code == "ThrottlingException":
        cls, hint = RateLimited, "Bedrock is throttling; wait and retry"
    return cls(f"{route}: HTTP {status} {code}: {message}", status=status, body=body, route=route,
               headers=dict(meta.get("HTTPHeaders") or {}), hint=hint)


def _boto_error(e: Exception, route: str) -> HermesError:
    from botocore.exceptions import ConnectionError as BotoConnectionError
    from botocore.exceptions import NoCredentialsError, ParamValidationError

    if isinstance(e, ParamValidationError):
        return HermesError(f"{route}: botocore refused the request before sending it: {e}",
                           hint="a Converse field is misspelled or has the wrong type")
    if isinstance(e, NoCredentialsError):
        return ConfigError("no AWS credentials for Bedrock", hint="set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
    if isinstance(e, BotoConnectionError):
        return ProviderConnectionError(f"{route}: cannot reach Bedrock: {e}")
    return StreamError(f"{route}: {type(e).__name__}: {e}; nothing was stored")
