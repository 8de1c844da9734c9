"""Anthropic Messages emulator rules: signatures and request validation. Pure functions.

Split from ``anthropic`` (the scripted model and the HTTP app) so each module has one job.
They validate like the real service (the Messages API reference and its observed errors), so a
client bug shows up as the error text users would see:

* unknown fields at any depth → ``<json.path>: Extra inputs are not permitted``;
* with thinking on, the assistant turn before the latest tool results must start with a
  thinking block (the real "Expected `thinking` or `redacted_thinking`" error);
* every replayed ``thinking`` signature and ``redacted_thinking`` payload is an HMAC bound to
  (model, block content): a block from another model, or changed by one byte, is refused
  with "Invalid `signature` in `thinking` block";
* thinking in a final-position assistant message while thinking is off is refused;
* tool-use ids (and ``tool_use_id``) outside ``^[a-zA-Z0-9_-]+$`` are refused with the real
  pattern error.

A violation raises :class:`Invalid` (status, error type, message); the app turns it into the
error body.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from .claude_facts import BINDING_BETA, INTERLEAVED_BETA, PREFIX_BOUND, refusal, thinks
from .core import EmulatorState

__all__ = [
    "FAMILY",
    "Invalid",
    "blocks_of",
    "check_drift",
    "check_schema",
    "check_semantics",
    "mint_redacted",
    "mint_signature",
    "prefix_of",
    "thinking_on",
    "verify_redacted",
    "verify_signature",
]

FAMILY = "anthropic"
"""Signatures are shared by the direct API, Vertex and Foundry; they are bound to the model."""

_TEXT = {"type", "text", "cache_control", "citations"}
_BLOCKS: Mapping[str, set[str]] = {
    "text": _TEXT,
    "thinking": {"type", "thinking", "signature"},
    "redacted_thinking": {"type", "data"},
    "tool_use": {"type", "id", "name", "input", "cache_control", "caller", "toolset_name"},
    "tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control", "toolset_name"},
    "image": {"type", "source", "cache_control"},
    "document": {"type", "source", "title", "context", "citations", "cache_control"},
}
_TOP = {"model", "messages", "max_tokens", "system", "tools", "tool_choice", "thinking", "stream",
        "temperature", "top_p", "top_k", "stop_sequences", "metadata", "output_config",
        "context_management", "service_tier", "container", "inference_geo"}
_TOOL = {"name", "description", "input_schema", "cache_control", "type", "defer_loading", "input_examples",
         "strict", "eager_input_streaming", "allowed_callers"}
_THINKING = {"enabled": {"type", "budget_tokens", "display"}, "adaptive": {"type", "display", "block_binding"},
             "disabled": {"type"}, "between_tools": {"type", "display"}}
_NESTED = {"output_config": {"effort", "format"}, "tool_choice": {"type", "name", "disable_parallel_tool_use"},
           "metadata": {"user_id"}}
_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
"""Tool-use ids (and the ``tool_use_id`` answering one). The real 400 text is quoted in
docs/emulators.md: ``messages.N.content.M.tool_use.id: String should match pattern
'^[a-zA-Z0-9_-]+$'`` — what Kimi's ``functions.NAME:N`` ids get on the direct API, Vertex and
Foundry (user reports in ClawRouter and forgecode issue threads; nanobot sanitises for it)."""
_ID_FIELDS: Mapping[str, tuple[str, ...]] = {"tool_use": ("id",), "tool_result": ("tool_use_id",)}


# ----------------------------------------------------------------------------- signatures


def _mac(state: EmulatorState, kind: str, model: str, nonce: bytes, content: str) -> bytes:
    minted = state.mint(kind, model, f"{nonce.hex()}\0{content}")
    return base64.b64decode(minted[2:])


def mint_signature(state: EmulatorState, model: str, thinking: str, prefix: str | None = None) -> str:
    """A thinking-block signature: standard base64 starting ``Es``, bound to model and text
    (and, for a prefix-bound model, to the digest of everything before the block)."""
    nonce = secrets.token_bytes(9)
    raw = nonce + _mac(state, FAMILY, model, nonce, thinking)
    if prefix is not None:
        raw += _mac(state, FAMILY + ".prefix", model, nonce, prefix)[:16]
    return "Es" + base64.b64encode(raw).decode()


def _raw(signature: str) -> bytes:
    try:
        return base64.b64decode(signature[2:], validate=True) if signature.startswith("Es") else b""
    except ValueError:
        return b""


def verify_signature(state: EmulatorState, model: str, thinking: str, signature: str) -> bool:
    raw = _raw(signature)
    nonce, mac = raw[:9], raw[9:57]
    return len(raw) in (57, 73) and secrets.compare_digest(mac, _mac(state, FAMILY, model, nonce, thinking))


def _prefix_holds(state: EmulatorState, model: str, signature: str, prefix: str) -> bool:
    raw = _raw(signature)
    return len(raw) == 73 and secrets.compare_digest(raw[57:], _mac(state, FAMILY + ".prefix", model, raw[:9],
                                                                     prefix)[:16])


def _plain(obj: Any) -> Any:
    """``obj`` without ``cache_control`` markers (moving a cache breakpoint changes no prefix)."""
    if isinstance(obj, Mapping):
        return {k: _plain(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


def prefix_of(body: Mapping[str, Any], messages: Sequence[Any]) -> str:
    """The digest a prefix-bound block is checked against: system, tools and the messages before it."""
    data = _plain({"system": body.get("system"), "tools": body.get("tools"), "messages": list(messages)})
    return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()


def mint_redacted(state: EmulatorState, model: str) -> str:
    """An opaque ``redacted_thinking`` payload, bound to the model."""
    nonce = secrets.token_bytes(12)
    return "Eq" + base64.b64encode(nonce + _mac(state, FAMILY + ".redacted", model, nonce, "")).decode()


def verify_redacted(state: EmulatorState, model: str, data: str) -> bool:
    try:
        raw = base64.b64decode(data[2:], validate=True) if data.startswith("Eq") else b""
    except ValueError:
        return False
    nonce, mac = raw[:12], raw[12:]
    return len(raw) == 60 and secrets.compare_digest(mac, _mac(state, FAMILY + ".redacted", model, nonce, ""))


# ----------------------------------------------------------------------------- validation


class Invalid(Exception):
    def __init__(self, message: str, status: int = 400, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


def _extra(obj: Any, allowed: set[str], path: str) -> None:
    if not isinstance(obj, Mapping):
        raise Invalid(f"{path}: Input should be a valid dictionary or object to extract fields from")
    for k in obj:
        if k not in allowed:
            raise Invalid(f"{path}.{k}: Extra inputs are not permitted" if path else f"{k}: Extra inputs are not permitted")


def _blockcheck_schema(block: Any, path: str) -> str:
    if not isinstance(block, Mapping):
        raise Invalid(f"{path}: Input should be a valid dictionary or object to extract fields from")
    kind = str(block.get("type"))
    if kind not in _BLOCKS:
        tags = ", ".join(f"'{t}'" for t in _BLOCKS)
        raise Invalid(f"{path}: Input tag '{kind}' found using 'type' does not match any of the expected tags: {tags}")
    _extra(block, _BLOCKS[kind], f"{path}.{kind}")
    for name in _ID_FIELDS.get(kind, ()):
        value = block.get(name)
        if isinstance(value, str) and not _ID.fullmatch(value):
            raise Invalid(f"{path}.{kind}.{name}: String should match pattern '{_ID.pattern}'")
    if kind == "tool_result" and isinstance(block.get("content"), list):
        for k, inner in enumerate(block["content"]):
            _blockcheck_schema(inner, f"{path}.{kind}.content.{k}")
    return kind


def check_schema(body: Mapping[str, Any], *, vertex: bool, roles: tuple[str, ...] = ("user", "assistant")) -> None:
    """The Messages schema; ``roles``: the message roles taken (a vendor's endpoint also takes
    the ``system`` messages Claude Code puts among the turns for a model it does not know)."""
    allowed = (_TOP - {"model"}) | {"anthropic_version"} if vertex else _TOP
    _extra(body, allowed, "")
    required = ("anthropic_version", "max_tokens", "messages") if vertex else ("model", "max_tokens", "messages")
    for name in required:
        if name not in body:
            raise Invalid(f"{name}: Field required")
    if vertex and not re.fullmatch(r"(vertex-)?\d{4}-\d{2}-\d{2}", str(body["anthropic_version"])):
        # the documented value is vertex-2023-10-16; the 2026 SDK sends its dated API version
        raise Invalid("anthropic_version: Input should be 'vertex-2023-10-16'")
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
        raise Invalid("max_tokens: Input should be a valid integer greater than or equal to 1")
    if not isinstance(body["messages"], list):
        raise Invalid("messages: Input should be a valid list")
    for i, m in enumerate(body["messages"]):
        _extra(m, {"role", "content"}, f"messages.{i}")
        if m.get("role") not in roles:
            raise Invalid(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        content = m.get("content")
        if isinstance(content, list):
            if not content:
                raise Invalid(f"messages.{i}: all messages must have non-empty content except for the "
                               "optional final assistant message")
            for j, block in enumerate(content):
                _blockcheck_schema(block, f"messages.{i}.content.{j}")
        elif not isinstance(content, str):
            raise Invalid(f"messages.{i}.content: Input should be a valid string or list")
    system = body.get("system")
    if isinstance(system, list):
        for j, block in enumerate(system):
            _extra(block, _TEXT, f"system.{j}")
    for j, tool in enumerate(body.get("tools") or []):
        _extra(tool, _TOOL, f"tools.{j}.custom")
    thinking = body.get("thinking")
    if thinking is not None:
        kind = thinking.get("type") if isinstance(thinking, Mapping) else None
        if kind not in _THINKING:
            raise Invalid("thinking: Input tag found using 'type' does not match any of the expected tags: "
                           "'enabled', 'disabled', 'adaptive', 'between_tools'")
        _extra(thinking, _THINKING[kind], f"thinking.{kind}")
        if "block_binding" in thinking:
            _extra(thinking["block_binding"], {"prefix_mismatch_behavior"}, f"thinking.{kind}.block_binding")
            if thinking["block_binding"].get("prefix_mismatch_behavior") not in ("error", "drop_block"):
                raise Invalid(f"thinking.{kind}.block_binding.prefix_mismatch_behavior: Input should be 'error' "
                              "or 'drop_block'")
        if kind == "enabled":
            budget = thinking.get("budget_tokens")
            if not isinstance(budget, int) or budget < 1024:
                raise Invalid("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
            if body["max_tokens"] <= budget:
                raise Invalid("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                               f"documentation at {_DOCS}#max-tokens-and-context-window-size")
    for name, keys in _NESTED.items():
        if name in body:
            _extra(body[name], keys, name)


def check_drift(obj: Any, reject: set[str], path: str = "") -> None:
    """Drift control: a field the provider stopped accepting, found at any depth."""
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            here = f"{path}.{k}" if path else str(k)
            if k in reject:
                raise Invalid(f"{here}: Extra inputs are not permitted")
            check_drift(v, reject, here)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            check_drift(v, reject, f"{path}.{i}")


def blocks_of(m: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    c = m.get("content")
    return list(c) if isinstance(c, list) else [{"type": "text", "text": c}]


_BOUND = ("Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the "
          'block, or set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".')


def interleaves(body: Mapping[str, Any], betas: frozenset[str]) -> bool:
    """Whether the model thinks between tool calls: adaptive thinking does; a manual budget
    only with the interleaved-thinking beta."""
    t = body.get("thinking")
    return not (isinstance(t, Mapping) and t.get("type") == "enabled") or INTERLEAVED_BETA in betas


def _unbound(state: EmulatorState, body: Mapping[str, Any], model: str, betas: frozenset[str]) -> list[str]:
    """Prefix checks of a prefix-bound model: the paths of blocks the request lets the API
    drop (``drop_block``); any other block whose prefix changed is the documented 400."""
    thinking = body.get("thinking")
    binding = thinking.get("block_binding") if isinstance(thinking, Mapping) else None
    if binding is not None and BINDING_BETA not in betas:
        raise Invalid(f"thinking.block_binding: setting it requires the `{BINDING_BETA}` value in the "
                      "`anthropic-beta` header.")
    if not PREFIX_BOUND.search(model.lower()):
        return []
    drop = isinstance(binding, Mapping) and binding.get("prefix_mismatch_behavior") == "drop_block"
    msgs: list[Mapping[str, Any]] = body["messages"]
    dropped: list[str] = []
    for i, m in enumerate(msgs):
        for j, b in enumerate(blocks_of(m) if m.get("role") == "assistant" else ()):
            sig = b.get("signature") if b.get("type") == "thinking" else None
            if not isinstance(sig, str) or not verify_signature(state, model, str(b.get("thinking")), sig):
                continue  # the signature check reports it
            if not _prefix_holds(state, model, sig, prefix_of(body, msgs[:i])):
                if not drop:
                    raise Invalid(f"messages.{i}.content.{j}: {_BOUND}")
                dropped.append(f"messages.{i}.content.{j}")
    return dropped


def check_semantics(state: EmulatorState, body: Mapping[str, Any], model: str,
                    betas: frozenset[str] = frozenset()) -> list[str]:
    """Raise :class:`Invalid` as the API would; the paths of blocks dropped by ``drop_block``."""
    msgs: list[Mapping[str, Any]] = body["messages"]
    kind = (body.get("thinking") or {}).get("type")
    if (why := refusal(model, kind)) is not None:
        raise Invalid(why)
    dropped = _unbound(state, body, model, betas)
    for i, m in enumerate(msgs):
        blocks = blocks_of(m)
        prev_ids = {b.get("id") for b in blocks_of(msgs[i - 1]) if b.get("type") == "tool_use"} if i else set()
        if m["role"] == "user":
            for j, b in enumerate(blocks):
                if b.get("type") == "tool_result" and b.get("tool_use_id") not in prev_ids:
                    raise Invalid(f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` "
                                   f"blocks: {b.get('tool_use_id')}. Each `tool_result` block must have a "
                                   "corresponding `tool_use` block in the previous message.")
        ids = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
        if m["role"] == "assistant" and ids:
            answered = {b.get("tool_use_id") for b in blocks_of(msgs[i + 1])} if i + 1 < len(msgs) else set()
            missing = [x for x in ids if x not in answered]
            if missing:
                raise Invalid(f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
                               f"after: {', '.join(map(str, missing))}. Each `tool_use` block must have a "
                               "corresponding `tool_result` block in the next message.")
    thinking = thinking_on(body, model)
    last = max((i for i, m in enumerate(msgs) if m["role"] == "assistant"), default=None)
    if last is not None:
        blocks = blocks_of(msgs[last])
        loop = last + 1 < len(msgs) and any(b.get("type") == "tool_result" for b in blocks_of(msgs[last + 1]))
        has_tool = any(b.get("type") == "tool_use" for b in blocks)
        # without interleaving only the turn's first assistant message thinks: it is the one checked
        opens = last if interleaves(body, betas) else _turn_start(msgs, last)
        first = blocks_of(msgs[opens])[0].get("type") if blocks_of(msgs[opens]) else None
        if dropped and any(p.startswith(f"messages.{opens}.content.0") for p in dropped):
            first = "thinking"  # the API dropped the block the rule looks for, and answers
        if thinking and loop and has_tool and first not in ("thinking", "redacted_thinking"):
            raise Invalid(
                f"messages.{opens}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. "
                "When `thinking` is enabled, a final `assistant` message must start with a thinking block "
                "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include "
                "thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please "
                f"consult our documentation at {_DOCS}")
        if not thinking and last == len(msgs) - 1:
            for j, b in enumerate(blocks):
                if b.get("type") in ("thinking", "redacted_thinking"):
                    raise Invalid(f"messages.{last}.content.{j}: When thinking is disabled, an `assistant` message "
                                   "in the final position cannot contain `thinking`. To use thinking blocks, enable "
                                   "`thinking` in your request.")
    for i, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        for j, b in enumerate(blocks_of(m)):
            if b.get("type") == "thinking":
                if not (isinstance(b.get("thinking"), str) and isinstance(b.get("signature"), str)
                        and verify_signature(state, model, b["thinking"], b["signature"])):
                    raise Invalid(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block")
            elif b.get("type") == "redacted_thinking" and not (
                    isinstance(b.get("data"), str) and verify_redacted(state, model, b["data"])):
                if i == last:
                    raise Invalid(f"messages.{i}.content.{j}: `thinking` or `redacted_thinking` blocks in the "
                                   "latest assistant message cannot be modified. These blocks must remain as "
                                   "they were in the original response.")
                raise Invalid(f"messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block")
    return dropped


def _turn_start(msgs: Sequence[Mapping[str, Any]], last: int) -> int:
    """The first assistant message after the user's latest text (the turn ``last`` belongs to)."""
    start = last
    for i in range(last, -1, -1):
        m = msgs[i]
        if m["role"] == "user" and any(b.get("type") == "text" for b in blocks_of(m)):
            break
        if m["role"] == "assistant":
            start = i
    return start


def thinking_on(body: Mapping[str, Any], model: str = "") -> bool:
    """Whether the model thinks for this request (Opus 5+ also when ``thinking`` is omitted)."""
    t = body.get("thinking")
    return thinks(model, t.get("type") if isinstance(t, Mapping) else None)
