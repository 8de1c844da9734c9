"""Bedrock Runtime personality: Converse (rest-json) and ConverseStream (AWS event stream).

Serves ``POST /model/{modelId}/converse`` and ``/model/{modelId}/converse-stream`` under the
mount, so a botocore client with ``endpoint_url=emu.url("bedrock")`` talks to it unchanged
(botocore appends the operation path to an endpoint URL's own path).

What it checks, like the service (the Converse API reference and its observed errors):

* a well-formed SigV4 ``Authorization`` header for signing name ``bedrock`` (or a Bedrock API
  key bearer token), else 403 as AWS answers;
* Converse shape: known fields only, user-first alternation, no blank text, ``toolConfig``
  present when tool blocks are;
* Claude: every ``reasoningText`` carries a signature minted for this model and text (HMAC,
  byte-exact), ``redactedContent`` likewise; with thinking on, the final assistant tool turn
  must start with reasoning; 5-generation models refuse a reasoning-only assistant turn
  (prefill); a prefix-checking model (AWS's "Preserved thinking" page: Fable 5.1 runs the
  check, Mythos 5.1 does not) refuses a block whose prefix (system, tools, earlier messages)
  changed, unless ``additionalModelRequestFields`` opts into ``drop_block`` with its beta in
  ``anthropic_beta``;
* other models refuse any ``signature`` or ``redactedContent``.

Errors are ``ValidationException`` (400) etc. with the ``x-amzn-ErrorType`` header and a
``{"message": ...}`` body. The stream's binary framing is encoded here (the client side is
botocore's decoder): 12-byte prelude with CRC32, string headers, JSON payload, message CRC32.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import re
import struct
import zlib
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from .claude_facts import BINDING_BETA, PREFIX_BOUND, refusal
from .core import EmulatorState, Personality, register
from .script import next_step

__all__ = ["encode_frame", "event_frames", "response_payload", "validate"]

_SIGV4 = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<akid>[A-Za-z0-9]{4,128})/(?P<date>\d{8})/(?P<region>[a-z0-9-]+)/"
    r"(?P<service>[a-z0-9-]+)/aws4_request, ?SignedHeaders=(?P<signed>[a-z0-9;.-]+), ?Signature=[0-9a-f]{64}$"
)
_TOP = frozenset({"messages", "system", "inferenceConfig", "toolConfig", "guardrailConfig",
                  "additionalModelRequestFields", "promptVariables", "additionalModelResponseFieldPaths",
                  "requestMetadata", "performanceConfig", "serviceTier", "outputConfig"})
_BLOCKS = frozenset({"text", "image", "document", "video", "audio", "toolUse", "toolResult", "guardContent",
                     "cachePoint", "reasoningContent", "citationsContent", "searchResult"})
_ADAPTIVE = re.compile(r"claude-(opus|sonnet|haiku)-4-[6-9]|claude-[a-z]+-[5-9](?![0-9])")
_NO_PREFILL = re.compile(r"claude-[a-z]+-[5-9](?![0-9])")
_ANTHROPIC_TYPE = {"text": "text", "toolUse": "tool_use", "toolResult": "tool_result", "image": "image",
                   "document": "document", "reasoningContent": "thinking"}
_WRAP = "The model returned the following errors: "
_BOUND = ("Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the "
          'block, or set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".')
_TAG = "~"
"""Separates a prefix-checking model's signature from its prefix tag (the tag binds the prefix)."""


class AwsError(Exception):
    """An AWS-shaped error answer: status, ``x-amzn-ErrorType`` and ``{"message"}``."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message

    def response(self) -> Response:
        return Response(orjson.dumps({"message": self.message}), status_code=self.status,
                        media_type="application/json",
                        headers={"x-amzn-ErrorType": f"{self.kind}:http://internal.amazon.com/coral/com.amazon.bedrock/",
                                 "x-amzn-RequestId": "emu-" + hashlib.sha1(self.message.encode()).hexdigest()[:12]})


def _invalid(message: str) -> AwsError:
    return AwsError(400, "ValidationException", message)


# ----------------------------------------------------------------------------- validation


def check_auth(headers: Mapping[str, str]) -> None:
    """A SigV4 header for service ``bedrock`` (or a Bedrock API key), as AWS insists."""
    auth = headers.get("authorization", "")
    if not auth:
        raise AwsError(403, "MissingAuthenticationTokenException", "Missing Authentication Token")
    if auth.startswith("Bearer ") and len(auth) > 12:
        return
    m = _SIGV4.match(auth)
    if m is None:
        raise AwsError(403, "IncompleteSignatureException",
                       "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' "
                       f"parameters. Authorization={auth.split(' ')[0]}")
    if m["service"] != "bedrock":
        raise AwsError(403, "InvalidSignatureException",
                       "Credential should be scoped to correct service: 'bedrock'. ")
    signed = m["signed"].split(";")
    if "host" not in signed or "x-amz-date" not in signed or not headers.get("x-amz-date"):
        raise AwsError(403, "IncompleteSignatureException",
                       "Date must be in ISO-8601 'basic format'. Got '' . See http://en.wikipedia.org/wiki/ISO_8601")


def _blocks(body: Mapping[str, Any]) -> list[tuple[int, int, str, dict[str, Any]]]:
    """(message index, block index, role, block) for every content block."""
    out = []
    for n, msg in enumerate(body.get("messages") or []):
        for k, block in enumerate(msg.get("content") or []):
            out.append((n, k, msg.get("role", ""), block))
    return out


def _thinking_on(body: Mapping[str, Any]) -> bool:
    t = (body.get("additionalModelRequestFields") or {}).get("thinking") or {}
    return isinstance(t, Mapping) and t.get("type") in ("enabled", "adaptive", "between_tools")


def _redacted_ok(state: EmulatorState, model: str, data: str) -> bool:
    try:
        raw = base64.b64decode(data, validate=True).decode()
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return False
    seed, _, sig = raw.partition("|")
    return state.verify("bedrock", model, "redacted:" + seed, sig, prefix="Rd")


def checks_prefix(model: str) -> bool:
    """Whether Bedrock runs the prefix check for ``model`` (Mythos records the binding, unchecked)."""
    m = model.lower()
    return bool(PREFIX_BOUND.search(m)) and "mythos" not in m


def prefix_of(body: Mapping[str, Any], messages: Sequence[Any]) -> str:
    """The digest a block is bound to: system, tools and the messages before it."""
    data = {"system": body.get("system"), "tools": (body.get("toolConfig") or {}).get("tools"),
            "messages": list(messages)}
    return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _prefix_tag(state: EmulatorState, model: str, prefix: str) -> str:
    return state.mint("bedrock.prefix", model, prefix, prefix="")[:22]


def _unbound(state: EmulatorState, model: str, body: Mapping[str, Any], n: int, signature: str) -> bool:
    """Whether the block at ``messages.n`` with ``signature`` was made under another prefix."""
    _, _, tag = signature.partition(_TAG)
    return tag != _prefix_tag(state, model, prefix_of(body, body["messages"][:n]))


def _drops_unbound(extra: Mapping[str, Any]) -> bool:
    """The request opts into ``drop_block``; ``block_binding`` without its beta is refused."""
    thinking = extra.get("thinking")
    binding = thinking.get("block_binding") if isinstance(thinking, Mapping) else None
    if binding is None:
        return False
    if BINDING_BETA not in (extra.get("anthropic_beta") or ()):
        raise _invalid(f"{_WRAP}thinking.block_binding: setting it requires the `{BINDING_BETA}` value in "
                       "`anthropic_beta`.")
    return isinstance(binding, Mapping) and binding.get("prefix_mismatch_behavior") == "drop_block"


def validate(state: EmulatorState, model: str, body: Any, reject: Collection[str] = ()) -> None:
    """Raise the AWS error the service would answer for ``body``; return when it would accept."""
    if not isinstance(body, Mapping):
        raise AwsError(400, "SerializationException", "Unexpected response from the service: body is not an object")
    extra = sorted(set(body) - _TOP)
    if extra:
        raise _invalid(f"Malformed input request: extraneous key [{extra[0]}] is not permitted, "
                       "please reformat your input and try again.")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _invalid("The messages field is required. Add at least one message and try again.")
    for n, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, Mapping) else None
        if role not in ("user", "assistant") or set(msg) - {"role", "content"}:
            raise _invalid(f"Malformed input request: messages.{n} must have role user|assistant and content only.")
        if n == 0 and role != "user":
            raise _invalid("A conversation must start with a user message. "
                           "Try again with a conversation that starts with a user message.")
        if n and messages[n - 1]["role"] == role:
            raise _invalid("A conversation must alternate between user and assistant roles. Make sure the "
                           "conversation alternates between user and assistant roles and try again.")
        if not msg.get("content"):
            raise _invalid(f"The content field in the Message object at messages.{n} is empty. "
                           "Add a ContentBlock object to the content field and try again.")
    tools_used = False
    for n, k, _role, block in _blocks(body):
        if not isinstance(block, Mapping) or len(block) != 1 or next(iter(block)) not in _BLOCKS:
            raise _invalid(f"Malformed input request: messages.{n}.content.{k} is not a valid ContentBlock "
                           f"(keys {sorted(block) if isinstance(block, Mapping) else block!r}).")
        if "text" in block and not str(block["text"]).strip():
            raise _invalid(f"The text field in the ContentBlock object at messages.{n}.content.{k} is blank. "
                           "Add text to the text field, and try again.")
        tools_used |= "toolUse" in block or "toolResult" in block
        rc = block.get("reasoningContent")
        if rc is not None:
            ok = isinstance(rc, Mapping) and len(rc) == 1 and next(iter(rc)) in ("reasoningText", "redactedContent")
            rt = rc.get("reasoningText") if ok else None
            if not ok or (rt is not None and (not isinstance(rt, Mapping) or set(rt) - {"text", "signature"})):
                raise _invalid(f"Malformed input request: messages.{n}.content.{k}.reasoningContent is not valid.")
    if tools_used and not body.get("toolConfig"):
        raise _invalid("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
    for field in reject:
        if any(field in (b.get("reasoningContent") or {}) or field in ((b.get("reasoningContent") or {})
               .get("reasoningText") or {}) for _, _, _, b in _blocks(body)):
            raise _invalid(f"Malformed input request: extraneous key [{field}] is not permitted, "
                           "please reformat your input and try again.")
    if "claude" in model.lower():
        _validate_claude(state, model, body)
    else:
        _validate_other(body)


def _validate_other(body: Mapping[str, Any]) -> None:
    for n, k, _, b in _blocks(body):
        rc = b.get("reasoningContent") or {}
        if "redactedContent" in rc:
            raise _invalid(f"This model doesn't support the redactedContent field (messages.{n}.content.{k}). "
                           "Remove reasoningContent.redactedContent and try again.")
        if "signature" in (rc.get("reasoningText") or {}):
            raise _invalid(f"This model doesn't support the signature field (messages.{n}.content.{k}). "
                           "Remove reasoningContent.reasoningText.signature and try again.")


def _validate_claude(state: EmulatorState, model: str, body: Mapping[str, Any]) -> None:
    thinking = (body.get("additionalModelRequestFields") or {}).get("thinking")
    if (why := refusal(model, thinking.get("type") if isinstance(thinking, Mapping) else None)) is not None:
        raise _invalid(why)
    messages = body["messages"]
    drop = _drops_unbound(body.get("additionalModelRequestFields") or {})
    for n, k, role, b in _blocks(body):
        rc = b.get("reasoningContent")
        if rc is None:
            continue
        if role != "assistant":
            raise _invalid(f"{_WRAP}messages.{n}.content.{k}.type: thinking blocks are only allowed in assistant messages")
        if "redactedContent" in rc:
            if not _redacted_ok(state, model, rc["redactedContent"]):
                raise _invalid(f"{_WRAP}messages.{n}.content.{k}: Invalid `data` in `redacted_thinking` block")
            continue
        rt = rc["reasoningText"]
        if not rt.get("signature"):
            raise _invalid(f"{_WRAP}messages.{n}.content.{k}.thinking.signature: Field required")
        sig = str(rt["signature"])
        if not state.verify("bedrock", model, str(rt.get("text", "")), sig.partition(_TAG)[0]):
            raise _invalid(f"{_WRAP}messages.{n}.content.{k}: Invalid `signature` in `thinking` block")
        if checks_prefix(model) and _unbound(state, model, body, n, sig) and not drop:
            raise _invalid(f"{_WRAP}messages.{n}.content.{k}: {_BOUND}")
    if _NO_PREFILL.search(model.lower()):
        for msg in messages:
            if msg["role"] == "assistant" and all("reasoningContent" in b for b in msg["content"]):
                raise _invalid("This model does not support assistant message prefill. "
                               "The conversation must end with a user message.")
    if _thinking_on(body):
        last = max((n for n, m in enumerate(messages) if m["role"] == "assistant"), default=None)
        if last is not None:
            content = messages[last]["content"]
            first = next(iter(content[0]))
            if any("toolUse" in b for b in content) and first != "reasoningContent":
                found = _ANTHROPIC_TYPE.get(first, first)
                raise _invalid(
                    f"{_WRAP}messages.{last}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                    f"`{found}`. When `thinking` is enabled, a final `assistant` message must start with a thinking "
                    "block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you "
                    "include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. "
                    "Please consult our documentation at "
                    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking")


# ----------------------------------------------------------------------------- the model


def _conversation(body: Mapping[str, Any]) -> tuple[str, int]:
    """(last user text, tool results after it) — what the scripted model looks at."""
    user_text, results = "", 0
    for msg in body["messages"]:
        if msg["role"] != "user":
            continue
        texts = [b["text"] for b in msg["content"] if "text" in b]
        n = sum(1 for b in msg["content"] if "toolResult" in b)
        if texts and not n and "".join(texts).strip() != "(continue)":
            user_text, results = "\n".join(texts), 0
        else:
            results += n
    return user_text, results


def _tools(body: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any] | None]]:
    out = []
    for t in (body.get("toolConfig") or {}).get("tools") or []:
        spec = t.get("toolSpec") or {}
        if spec.get("name"):
            out.append((spec["name"], (spec.get("inputSchema") or {}).get("json")))
    return out


def _reasons(model: str, body: Mapping[str, Any]) -> bool:
    m = model.lower()
    if "claude" in m:
        return _thinking_on(body) or bool(_ADAPTIVE.search(m) and "thinking" not in
                                          (body.get("additionalModelRequestFields") or {}))
    if "gpt-oss" in m or "deepseek" in m or "kimi" in m:
        return True
    rc = (body.get("additionalModelRequestFields") or {}).get("reasoningConfig") or {}
    return isinstance(rc, Mapping) and rc.get("type") == "enabled"


def response_payload(state: EmulatorState, model: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """The Converse JSON answer of the scripted model (blobs as base64 text, as on the wire)."""
    user_text, results = _conversation(body)
    step = next_step(user_text=user_text, tools=_tools(body), tool_results_since_user=results, model=model)
    content: list[dict[str, Any]] = []
    if _reasons(model, body):
        rt: dict[str, Any] = {"text": step.reasoning}
        if "claude" in model.lower():
            rt["signature"] = state.mint("bedrock", model, step.reasoning)
            if PREFIX_BOUND.search(model.lower()):  # bound to what came before the answer
                rt["signature"] += _TAG + _prefix_tag(state, model, prefix_of(body, body["messages"]))
        content.append({"reasoningContent": {"reasoningText": rt}})
        if "claude" in model.lower() and "redact" in model.lower():
            seed = hashlib.sha256(step.reasoning.encode()).hexdigest()[:16]
            sig = state.mint("bedrock", model, "redacted:" + seed, prefix="Rd")
            content.append({"reasoningContent": {"redactedContent": base64.b64encode(f"{seed}|{sig}".encode()).decode()}})
    if step.kind == "tool":
        call_id = "tooluse_" + hashlib.sha256(f"{model}\0{user_text}\0{results}".encode()).hexdigest()[:20]
        content.append({"toolUse": {"toolUseId": call_id, "name": step.tool, "input": dict(step.args)}})
        stop = "tool_use"
    else:
        content.append({"text": step.answer})
        stop = "end_turn"
    inp = len(orjson.dumps(body)) // 4
    out = sum(len(orjson.dumps(b)) for b in content) // 4
    return {"output": {"message": {"role": "assistant", "content": content}}, "stopReason": stop,
            "usage": {"inputTokens": inp, "outputTokens": out, "totalTokens": inp + out},
            "metrics": {"latencyMs": 7}}


# ----------------------------------------------------------------------------- event stream


def _header(name: str, value: str) -> bytes:
    n, v = name.encode(), value.encode()
    return bytes([len(n)]) + n + b"\x07" + struct.pack(">H", len(v)) + v


def encode_frame(headers: Sequence[tuple[str, str]], payload: bytes, *, bad_crc: bool = False) -> bytes:
    """One event-stream message: prelude (total, headers len, CRC32), headers, payload, CRC32."""
    hb = b"".join(_header(k, v) for k, v in headers)
    prelude = struct.pack(">II", 12 + len(hb) + len(payload) + 4, len(hb))
    msg = prelude + struct.pack(">I", zlib.crc32(prelude) & 0xFFFFFFFF) + hb + payload
    crc = (zlib.crc32(msg) ^ (0xDEADBEEF if bad_crc else 0)) & 0xFFFFFFFF
    return msg + struct.pack(">I", crc)


def _event(kind: str, payload: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    return kind, dict(payload)


def _chunks(text: str, n: int = 3) -> list[str]:
    size = max(1, -(-len(text) // n))
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def event_frames(payload: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The ConverseStream events (type, JSON member) that stream the same answer as ``payload``."""
    events = [_event("messageStart", {"role": "assistant"})]
    for i, block in enumerate(payload["output"]["message"]["content"]):
        if "toolUse" in block:
            tu = block["toolUse"]
            events.append(_event("contentBlockStart", {"start": {"toolUse": {"toolUseId": tu["toolUseId"],
                                                                              "name": tu["name"]}},
                                                       "contentBlockIndex": i}))
            for part in _chunks(orjson.dumps(tu["input"]).decode()):
                events.append(_event("contentBlockDelta", {"delta": {"toolUse": {"input": part}}, "contentBlockIndex": i}))
        elif "text" in block:
            for part in _chunks(block["text"]):
                events.append(_event("contentBlockDelta", {"delta": {"text": part}, "contentBlockIndex": i}))
        elif "reasoningContent" in block:
            rc = block["reasoningContent"]
            if "redactedContent" in rc:
                events.append(_event("contentBlockDelta", {"delta": {"reasoningContent": {
                    "redactedContent": rc["redactedContent"]}}, "contentBlockIndex": i}))
            else:
                rt = rc["reasoningText"]
                for part in _chunks(rt["text"]):
                    events.append(_event("contentBlockDelta", {"delta": {"reasoningContent": {"text": part}},
                                                               "contentBlockIndex": i}))
                # Split in two: ConverseStream signature deltas concatenate. AWS's own agent SDK
                # appends them (strands-agents/sdk-python src/strands/event_loop/streaming.py at
                # 9b73296e); a client that assigns keeps only the last half and is refused.
                if rt.get("signature"):
                    for part in _chunks(rt["signature"], 2):
                        events.append(_event("contentBlockDelta", {"delta": {"reasoningContent": {"signature": part}},
                                                                   "contentBlockIndex": i}))
        events.append(_event("contentBlockStop", {"contentBlockIndex": i}))
    events.append(_event("messageStop", {"stopReason": payload["stopReason"]}))
    events.append(_event("metadata", {"usage": payload["usage"], "metrics": payload.get("metrics", {})}))
    return events


def _frame(kind: str, member: Mapping[str, Any], *, bad_crc: bool = False) -> bytes:
    headers = [(":event-type", kind), (":content-type", "application/json"), (":message-type", "event")]
    return encode_frame(headers, orjson.dumps(member), bad_crc=bad_crc)


def _exception_frame(kind: str, message: str) -> bytes:
    headers = [(":exception-type", kind), (":content-type", "application/json"), (":message-type", "exception")]
    return encode_frame(headers, orjson.dumps({"message": message}))


# ----------------------------------------------------------------------------- app


def _build(state: EmulatorState, name: str) -> Starlette:
    async def handle(request: Request) -> Response:
        model = unquote(request.path_params["model"])
        op = request.path_params["op"]
        if op not in ("converse", "converse-stream"):
            return AwsError(404, "UnknownOperationException", f"Unknown operation {op}").response()
        stream = op == "converse-stream"
        raw = await request.body()
        try:
            body: Any = orjson.loads(raw or b"{}")
        except orjson.JSONDecodeError:
            body = {"_raw": raw[:200].decode(errors="replace")}
        state.record(name, request, body)
        control = state.control(name)
        try:
            check_auth(request.headers)
            if not state.access.knows(name, model):  # a 400, as for a friendly name like `sonnet`
                raise AwsError(400, "ValidationException", "The provided model identifier is invalid.")
            fault = state.take_fault(name)
            if fault == "500":
                raise AwsError(500, "InternalServerException", "The server encountered an internal error "
                                                               "while processing the request.")
            if fault == "429":
                raise AwsError(429, "ThrottlingException", "Too many requests, please wait before trying again.")
            if "_raw" in body:
                raise AwsError(400, "SerializationException", "Unexpected character: request body is not JSON")
            validate(state, model, body, set(control.reject_fields))
        except AwsError as e:
            return e.response()
        payload = response_payload(state, model, body)
        if not stream:
            data = orjson.dumps(payload)
            if fault == "truncate":
                data = data[: len(data) // 2]
            return Response(data, media_type="application/json", headers={"x-amzn-RequestId": "emu-converse"})
        return StreamingResponse(_stream(payload, fault, control.delay or (0.05 if fault == "slow" else 0.0)),
                                 media_type="application/vnd.amazon.eventstream",
                                 headers={"x-amzn-RequestId": "emu-converse-stream"})

    async def _stream(payload: Mapping[str, Any], fault: str | None, delay: float) -> AsyncIterator[bytes]:
        events = event_frames(payload)
        cut = len(events) // 2
        for n, (kind, member) in enumerate(events):
            if fault == "truncate" and n == cut:
                frame = _frame(kind, member)
                yield frame[: len(frame) // 2]  # half a frame, then the connection ends
                return
            if fault == "streamerror" and n == cut:
                yield _exception_frame("modelStreamErrorException", "The model stream failed mid-response.")
                return
            yield _frame(kind, member, bad_crc=(fault == "badcrc" and n == cut))
            if delay:
                await asyncio.sleep(delay)

    return Starlette(routes=[Route("/model/{model:path}/{op:str}", handle, methods=["POST"])])


PERSONALITY = register(Personality("bedrock", _build, ""))
