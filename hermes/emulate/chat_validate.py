"""Request validation for the chat-completions emulator personalities. Pure functions.

``validate`` runs a personality's checks in the order a real server meets them (unknown keys,
tool-call ids, effort values, must-echo, must-echo behind a gateway, signatures) and returns
``(status, body)`` for the first violation, or ``None``. Facts come from ``chat_rules``, the
words from ``chat_errors``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

import orjson

from .chat_errors import error_body, openai_error, unknown_field_error
from .chat_rules import (
    BASE_ASSISTANT_KEYS,
    DUMMY_SIGNATURES,
    EC,
    FUNCTION_KEYS,
    OPENAI_TOP_LEVEL,
    RC,
    RD,
    RO,
    RT,
    TOOL_CALL_KEYS,
    Facts,
    R,
    get_path,
    thinking_on,
)

__all__ = ["Verdict", "Verify", "validate"]

Verdict = tuple[int, dict[str, Any]] | None
Verify = Callable[[str, str], bool]
"""(text, signature) → valid for this personality and model."""


def _unknown(facts: Facts, name: str, model: str, body: Mapping[str, Any], body_len: int,
             reject: frozenset[str]) -> Verdict:
    """Unknown or drift-rejected keys at the top level, on assistant messages and their tool calls."""
    def err(path: Sequence[str | int], key: str, value: Any, accepted: Sequence[str]) -> Verdict:
        return unknown_field_error(facts.errors, path, key, value=value, accepted=sorted(accepted),
                                   body_len=body_len, provider=name)

    top_ok = OPENAI_TOP_LEVEL | facts.top_extra
    for key in body:
        if key in reject or (facts.strict and key not in top_ok):
            return err((), key, body[key], sorted(top_ok))
    accepted = BASE_ASSISTANT_KEYS | facts.accepts
    if facts.reasoning_models:
        if any(fnmatchcase(model.lower(), g) for g in facts.reasoning_models):
            accepted = accepted | {R}
        else:
            for i, msg in enumerate(body.get("messages") or []):
                if isinstance(msg, Mapping) and msg.get("role") == "assistant" and R in msg:
                    return 400, {"error": {"message": f"messages[{i}].reasoning: reasoning is not supported with "
                                                      "this model", "type": "invalid_request_error"}}
    for i, msg in enumerate(body.get("messages") or []):
        if not isinstance(msg, Mapping) or msg.get("role") != "assistant":
            continue
        for key in msg:
            if key in reject or (facts.strict and key not in accepted):
                return err(("messages", i, "assistant"), key, msg[key], sorted(accepted))
        if not facts.strict:
            continue
        call_ok = TOOL_CALL_KEYS | ({EC} if facts.signs == "gemini" else set())
        fn_ok = FUNCTION_KEYS | ({"thought_signature"} if facts.signs == "copilot" else set())
        for j, call in enumerate(msg.get("tool_calls") or []):
            for key in call:
                if key not in call_ok:
                    return err(("messages", i, "assistant", "tool_calls", j), key, call[key], sorted(call_ok))
            for key in call.get("function") or {}:
                if key not in fn_ok:
                    return err(("messages", i, "assistant", "tool_calls", j, "function"), key,
                               call["function"][key], sorted(fn_ok))
    return None


def _wrapped(provider: str, inner: Mapping[str, Any]) -> dict[str, Any]:
    """OpenRouter's envelope around an upstream 400: the upstream body as ``metadata.raw`` text."""
    return {"error": {"code": 400, "message": "Provider returned error", "metadata": {
        "raw": orjson.dumps(inner).decode(), "provider_name": provider, "is_byok": False}}}


def _echo_upstream(facts: Facts, model: str, body: Mapping[str, Any]) -> Verdict:
    """A must-echo model behind a gateway: a tool turn without any reasoning is refused upstream."""
    m = model.lower()
    if not any(fnmatchcase(m, g) for g in facts.echo_models) or not thinking_on(body):
        return None
    for msg in body.get("messages") or []:
        if isinstance(msg, Mapping) and msg.get("role") == "assistant" and msg.get("tool_calls") \
                and not (msg.get(RC) or msg.get(R) or msg.get(RD)):
            if m.startswith("moonshotai/"):
                return 400, _wrapped("Moonshot AI", openai_error("thinking is enabled but reasoning_content is missing in "
                                                         "assistant tool call message at index "
                                                         f"{body['messages'].index(msg)}"))
            who = "Xiaomi" if m.startswith("xiaomi/") else "DeepSeek"
            inner = error_body("deepseek", "The `reasoning_content` in the thinking mode must be passed back to the API.")
            return 400, _wrapped(who, inner) if facts.errors == "openrouter" else inner
    return None


def _tool_ids(facts: Facts, body: Mapping[str, Any]) -> Verdict:
    """Mistral's id rule, on assistant tool calls and on the tool results answering them."""
    if facts.id_rule != "mistral":
        return None
    for msg in body.get("messages") or []:
        if not isinstance(msg, Mapping):
            continue
        ids = [c.get("id") for c in msg.get("tool_calls") or [] if isinstance(c, Mapping)]
        if msg.get("role") == "tool":
            ids.append(msg.get("tool_call_id"))
        for cid in ids:
            if not (isinstance(cid, str) and len(cid) == 9 and cid.isascii() and cid.isalnum()):
                return 400, {"object": "error", "message": f"Tool call id was {cid} but must be a-z, A-Z, 0-9, "
                             "with a length of 9.", "type": "invalid_request_message_error", "param": None,
                             "code": "3280"}
    return None


def _must_echo(facts: Facts, body: Mapping[str, Any]) -> Verdict:
    if not facts.must_echo or not thinking_on(body):
        return None
    for i, msg in enumerate(body.get("messages") or []):
        if isinstance(msg, Mapping) and msg.get("role") == "assistant" and msg.get("tool_calls") \
                and not msg.get(RC):
            if facts.must_echo == "kimi":
                return 400, openai_error(f"thinking is enabled but reasoning_content is missing in assistant tool call "
                                 f"message at index {i}")
            return 400, error_body("deepseek", "The `reasoning_content` in the thinking mode must be passed back "
                                               "to the API.")
    return None


def _anthropic_raw(message: str) -> str:
    return orjson.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": message}}).decode()


def _signatures(facts: Facts, name: str, model: str, body: Mapping[str, Any], verify: Verify) -> Verdict:
    messages = list(body.get("messages") or [])
    last_user = max((i for i, m in enumerate(messages) if isinstance(m, Mapping) and m.get("role") == "user"),
                    default=-1)
    for i, msg in enumerate(messages):
        if not isinstance(msg, Mapping) or msg.get("role") != "assistant":
            continue
        if facts.signs == "details":
            details = [d for d in msg.get(RD) or [] if isinstance(d, Mapping)]
            summary = "".join(str(d.get("summary") or d.get("text") or "") for d in details
                              if d.get("type") in ("reasoning.summary", "reasoning.text"))
            for d in details:
                if d.get("type") == "reasoning.text" and d.get("signature") \
                        and not verify(str(d.get("text") or ""), str(d["signature"])):
                    return 400, {"error": {"code": 400, "message": "Provider returned error", "metadata": {
                        "raw": _anthropic_raw(f"messages.{i}.content.0: Invalid `signature` in `thinking` block"),
                        "provider_name": "Anthropic", "is_byok": False}}}
                if d.get("type") == "reasoning.encrypted" and not verify(summary, str(d.get("data") or "")):
                    # the blob is checked against the readable entry it came with: an entry merged
                    # into its neighbour, or one dropped, makes the pair fail like a foreign blob
                    if d.get("format") == "google-gemini-v1":
                        raw, who = error_body("gemini", "Corrupted thought signature."), "Google"
                    else:
                        raw = openai_error(f"The encrypted content for item {d.get('id')} could not be verified.")
                        who = "OpenAI"
                    return 400, {"error": {"code": 400, "message": "Provider returned error", "metadata": {
                        "raw": orjson.dumps(raw).decode(), "provider_name": who, "is_byok": False}}}
        elif facts.signs == "copilot":
            bad = bool(msg.get(RO)) and not verify(str(msg.get(RT) or ""), str(msg[RO]))
            for call in msg.get("tool_calls") or []:
                sig = (call.get("function") or {}).get("thought_signature")
                bad = bad or (bool(sig) and not verify(f"tool:{call.get('id')}", str(sig)))
            if bad:
                return 400, openai_error("Invalid signature in thinking block", code="invalid_request_body")
        elif facts.signs == "gemini":
            sig = get_path(msg, (EC, "google", "thought_signature"))
            corrupted = bool(sig) and sig not in DUMMY_SIGNATURES and not verify(_text(msg.get("content")), str(sig))
            calls = list(msg.get("tool_calls") or [])
            for call in calls:
                csig = get_path(call, (EC, "google", "thought_signature"))
                if csig and csig not in DUMMY_SIGNATURES and not verify(f"tool:{call.get('id')}", str(csig)):
                    corrupted = True
            if corrupted:
                return 400, error_body("gemini", "Corrupted thought signature.")
            if calls and i > last_user and fnmatchcase(model.lower(), facts.signature_models) \
                    and not get_path(calls[0], (EC, "google", "thought_signature")):
                fn = (calls[0].get("function") or {}).get("name")
                return 400, error_body("gemini", (
                    "Function call is missing a thought_signature in functionCall parts. This is required for "
                    "tools to work correctly, and missing thought_signature may lead to degraded model "
                    f"performance. Additional data, function call `default_api:{fn}` , position {i}. Please "
                    "refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."))
    return None


def _text(content: Any) -> str:
    """Plain text of a message ``content`` (string or list of text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, Mapping))
    return ""


def validate(facts: Facts, name: str, model: str, body: Mapping[str, Any], *, body_len: int,
             reject: frozenset[str], verify: Verify) -> Verdict:
    """The first rejection this personality would give ``body``, or ``None`` to accept it."""
    if not isinstance(body.get("messages"), list) or not body.get("messages") or not model:
        return 400, error_body(facts.errors, "messages and model are required")
    return (_unknown(facts, name, model, body, body_len, reject) or _tool_ids(facts, body) or _efforts(facts, model, body)
            or (_qwen_modes(model, body) if facts.qwen_modes else None) or _must_echo(facts, body) or _echo_upstream(facts, model, body)
            or (_signatures(facts, name, model, body, verify) if facts.signs else None))


_QWEN_INSTRUCT = ("*qwen3*-instruct*", "qwen3-coder*")
_QWEN_THINKING = ("*qwen3*-thinking*",)


def _dashscope(message: str) -> Verdict:
    return 400, {"error": {"code": "invalid_parameter_error", "param": None, "message": message,
                           "type": "invalid_request_error"}}


def _qwen_modes(model: str, body: Mapping[str, Any]) -> Verdict:
    """DashScope's ``enable_thinking`` rules (the texts in docs/emulators.md)."""
    m = model.lower()
    if "enable_thinking" in body and any(fnmatchcase(m, g) for g in _QWEN_INSTRUCT):
        return _dashscope("Value error, current model does not support parameter `enable_thinking`.")
    if any(fnmatchcase(m, g) for g in _QWEN_THINKING) and body.get("enable_thinking") is not True:
        return _dashscope("<400> InternalError.Algo.InvalidParameter: The value of the enable_thinking parameter "
                          "is restricted to True.")
    if body.get("enable_thinking") is True and body.get("stream") is not True:
        return _dashscope("parameter.enable_thinking must be set to false for non-streaming calls")
    return None


def _efforts(facts: Facts, model: str, body: Mapping[str, Any]) -> Verdict:
    for glob, path, accepted in facts.efforts:
        if not fnmatchcase(model.lower(), glob):
            continue
        value = get_path(body, path)
        if value is None or value in accepted:
            return None  # the first row naming the model decides
        if facts.errors == "xai" and not accepted:
            return 400, {"code": "Client specified an invalid argument",
                         "error": f"Model {model} does not support parameter reasoningEffort."}
        if facts.errors == "zai":
            return 400, error_body("zai", "Invalid API parameter, please check the documentation.")
        listed = ", ".join(f"'{a}'" for a in accepted)
        return 400, openai_error(f"Invalid value for {'.'.join(path)}: {value!r}. Supported values are: {listed}.",
                         param=".".join(path), code="invalid_value")
    return None
