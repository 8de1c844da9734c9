"""Facts and request validation for the chat-completions emulator personalities. Pure data + pure functions.

One ``Facts`` row per personality says what its assistant messages RETURN (reasoning carriers),
what assistant-message keys it ACCEPTS back, how strict it is about the rest and in which
provider's words it says so, whether tool turns must echo ``reasoning_content``, which blobs it
signs and verifies, and which request switch makes it keep prior thinking. Error texts are the
ones providers really return (provider docs, public issues, recorded exchanges); where a provider's text is unconfirmed the
OpenAI wording is used (noted on the row). ``validate`` returns ``(status, body)`` for the first
violation, or ``None``; the app in ``openai_chat`` does the I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import orjson

__all__ = [
    "BASE_ASSISTANT_KEYS",
    "DUMMY_SIGNATURES",
    "FACTS",
    "OPENAI_TOP_LEVEL",
    "Facts",
    "details_format",
    "error_body",
    "keep_on",
    "returns_for",
    "thinking_on",
    "unknown_field_error",
    "validate",
]

RC, R, RD = "reasoning_content", "reasoning", "reasoning_details"
RT, RO, EC = "reasoning_text", "reasoning_opaque", "extra_content"
THINK = "think"
"""Pseudo-carrier: reasoning goes inside ``content`` as ``<think>…</think>``."""

BASE_ASSISTANT_KEYS = frozenset({"role", "content", "tool_calls", "name", "refusal", "function_call", "audio"})
TOOL_CALL_KEYS = frozenset({"id", "type", "function", "index"})
FUNCTION_KEYS = frozenset({"name", "arguments"})
OPENAI_TOP_LEVEL = frozenset({
    "model", "messages", "tools", "tool_choice", "stream", "stream_options", "temperature", "top_p",
    "max_tokens", "max_completion_tokens", "n", "stop", "presence_penalty", "frequency_penalty",
    "logit_bias", "logprobs", "top_logprobs", "user", "seed", "response_format", "parallel_tool_calls",
    "metadata", "store", "service_tier", "reasoning_effort", "modalities", "prediction", "audio",
    "functions", "function_call", "prompt_cache_key", "safety_identifier", "verbosity",
    "web_search_options",
})
DUMMY_SIGNATURES = frozenset({"skip_thought_signature_validator", "context_engineering_is_the_way_to_go"})
_GROQ_TOP = frozenset({"reasoning_format", "include_reasoning", "reasoning_effort"})


@dataclass(frozen=True)
class Facts:
    """How one personality speaks. ``errors`` names the error dialect (see ``error_body``)."""

    returns: tuple[str, ...]
    """Reasoning carriers on returned assistant messages (RC, R, RD, RT+RO, EC, THINK)."""
    accepts: frozenset[str]
    """Assistant-message keys accepted back besides ``BASE_ASSISTANT_KEYS``."""
    models: tuple[str, ...]
    strict: bool = False
    """Unknown assistant / tool-call / top-level keys → the dialect's unknown-field error."""
    errors: str = "openai"
    top_extra: frozenset[str] = frozenset()
    """Top-level keys a strict personality accepts besides ``OPENAI_TOP_LEVEL``."""
    must_echo: str | None = None
    """``deepseek`` (DeepSeek / MiMo text) or ``kimi``: tool turns need non-empty reasoning_content."""
    signs: str | None = None
    """``details`` (reasoning_details signatures), ``copilot`` (reasoning_opaque), ``gemini``."""
    keep: tuple[tuple[str, ...], Any] | None = None
    """(body path, value) that makes the server keep earlier turns' thinking; without it those
    are cleared (not counted in ``prompt_tokens``)."""
    model_returns: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(model glob, carriers) overrides of ``returns``."""
    split_switch: str | None = None
    """Top-level flag required for split reasoning; without it reasoning goes in ``<think>`` tags."""
    replay_ignored: bool = False
    """Replayed reasoning is not read (xAI): it adds nothing to ``prompt_tokens``."""
    usage_excludes_reasoning: bool = False
    keepalive: bool = False
    tool_id: str = "call"
    """How minted tool-call ids look: ``call`` (``call_…``), ``kimi`` (``functions.NAME:N``),
    ``mistral`` (9 characters of ``[A-Za-z0-9]``)."""
    id_rule: str | None = None
    """``mistral``: tool-call ids (on assistant calls and tool results) must be 9 characters of
    ``[A-Za-z0-9]``, else the real 400 (code 3280)."""
    echo_models: tuple[str, ...] = ()
    """Model globs that must echo reasoning on tool turns behind this gateway (the upstream's
    rule, passed through as a wrapped ``metadata.raw`` 400)."""
    signature_models: str = "*"
    """Glob of models whose current-step tool calls must carry a thought signature (gemini)."""
    tool_signatures: str = ""
    """Glob of models whose tool calls get a signature (copilot: gemini models only)."""
    ask: str = ""
    """How a request asks a think-only-when-asked model to think: ``reasoning`` (OpenRouter /
    Vercel / Kilo: a ``reasoning`` object with ``enabled: true``, an ``effort`` other than
    ``none``, or ``max_tokens``) or ``enable_thinking`` (DashScope: top-level ``true``)."""
    ask_models: tuple[str, ...] = ()
    """Globs of models that think only when asked the ``ask`` way (the rest think by default)."""
    efforts: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()
    """(model glob, body path, accepted values): an effort outside them is rejected."""
    notes: str = ""


_LOCAL_KEEP: tuple[tuple[str, ...], Any] = (("chat_template_kwargs", "preserve_thinking"), True)
_RCR = frozenset({RC, R})
_OR = frozenset({RC, R, RD})
_OR_MODELS = (("openai/*", (R, RD)),)
_AGG_ECHO = ("deepseek/*", "moonshotai/kimi*", "xiaomi/mimo*")
"""Must-echo upstreams behind the OpenRouter-format gateways: DeepSeek V4/R1 through OpenRouter
still needs reasoning on every tool turn, and OpenRouter passes DeepSeek's 400 through wrapped
(LibreChat issue 13366, quoted in docs/emulators.md); Kimi and MiMo keep their rule the same way."""
_ASKED = ("anthropic/*", "openai/gpt-5*", "google/gemini-3*")
"""Behind the OpenRouter-format gateways these think only when the request asks."""

FACTS: dict[str, Facts] = {
    # --- OpenRouter-format gateways: reasoning + signed reasoning_details ------------------
    "openrouter": Facts((R, RD), _OR, ("anthropic/claude-sonnet-4.5", "openai/gpt-5.1", "deepseek/deepseek-v4"),
                        errors="openrouter", signs="details", keepalive=True, ask="reasoning", ask_models=_ASKED,
                        echo_models=_AGG_ECHO,
                        notes="ignores unknown keys; upstream errors passed through in metadata.raw"),
    "kilo": Facts((R, RD), _OR, ("anthropic/claude-sonnet-4.5", "openai/gpt-5.1"), errors="openrouter",
                  signs="details", ask="reasoning", ask_models=_ASKED, echo_models=_AGG_ECHO,
                  notes="OpenRouter-compatible; envelope and reasoning request assumed OpenRouter's"),
    "vercel": Facts((R, RD), _OR, ("anthropic/claude-sonnet-4.5", "openai/gpt-5", "google/gemini-3-pro-preview"),
                    errors="openrouter", signs="details", ask="reasoning", ask_models=_ASKED,
                    echo_models=_AGG_ECHO,
                    notes="takes reasoning_content, reasoning and reasoning_details back on assistant messages "
                          "(a user's tests through the OpenAI-compatible API, community.vercel.com/t/36443; "
                          "fantasy's recorded requests with reasoning + reasoning_details); maps `reasoning` to "
                          "DeepSeek's native field; error envelope unconfirmed: OpenRouter's used"),
    "nous": Facts((R, RD), _OR, ("Hermes-4-405B", "Hermes-4-70B", "moonshotai/kimi-k2.6"), errors="openrouter",
                  signs="details", echo_models=_AGG_ECHO, model_returns=(("hermes-4*", (THINK,)),),
                  notes="Hermes 4 models think in <think> tags inside content"),
    # --- reasoning_content + unsigned reasoning_details ---------------------------------------
    "novita": Facts((RC, RD), frozenset({RC, RD}), ("deepseek/deepseek-v3.2", "zai-org/glm-4.7")),
    "minimax": Facts((RC, RD), frozenset({RC, RD}), ("MiniMax-M2.7", "MiniMax-M3"), split_switch="reasoning_split",
                     notes="without reasoning_split the thinking is <think> inside content"),
    "tencent": Facts((RC, RD), frozenset({RC, RD}), ("hunyuan-2.0-thinking-20251109", "deepseek-v3.2")),
    # --- must-echo ---------------------------------------------------------------------------
    "deepseek": Facts((RC,), frozenset({RC}), ("deepseek-v4-pro", "deepseek-v4-flash", "deepseek-reasoner"),
                      errors="deepseek", must_echo="deepseek"),
    "kimi": Facts((RC,), frozenset({RC}), ("kimi-k2.6", "kimi-k3"), must_echo="kimi",
                  keep=(("thinking", "keep"), "all"), tool_id="kimi",
                  efforts=(("*", ("thinking", "effort"), ("low", "medium", "high")),),
                  notes="thinking.effort values from Moonshot's SDK tests; rejection text unconfirmed"),
    "mimo": Facts((RC,), frozenset({RC}), ("mimo-v2.5-pro", "mimo-v2-flash"), must_echo="deepseek"),
    # --- reasoning_content, lenient ------------------------------------------------------------
    "glm": Facts((RC,), _RCR, ("glm-5.1", "glm-4.7-flash"), keep=(("thinking", "clear_thinking"), False),
                 errors="zai", efforts=(("glm-5", ("reasoning_effort",), ()), ("glm-5.1*", ("reasoning_effort",), ())),
                 notes="reasoning_effort refused on GLM-5/5.1 with z.ai's generic 1210 (text real, trigger unconfirmed)"),
    "dashscope": Facts((RC,), _RCR, ("qwen3.7-plus", "qwen3.6-max", "qwen3-32b"), keep=(("preserve_thinking",), True),
                       ask="enable_thinking", ask_models=("qwen3-*",),
                       notes="Qwen3 hybrid models think only with enable_thinking: true; 3.5+ by default"),
    "xai": Facts((RC,), _RCR, ("grok-3-mini", "grok-4"), replay_ignored=True, usage_excludes_reasoning=True),
    "generic": Facts((RC,), _RCR, ("default-model",)),
    "llamacpp": Facts((RC,), _RCR, ("qwen3-32b-q4_k_m.gguf",), keep=_LOCAL_KEEP),
    "sglang": Facts((RC,), _RCR, ("Qwen/Qwen3-32B",), keep=_LOCAL_KEEP),
    # --- reasoning (local servers) ------------------------------------------------------------
    "vllm": Facts((R,), _RCR, ("Qwen/Qwen3-32B",), keep=_LOCAL_KEEP),
    "ollama": Facts((R,), _RCR, ("gpt-oss:20b", "deepseek-r1:8b")),
    "lmstudio": Facts((R,), _RCR, ("openai/gpt-oss-20b", "qwen/qwen3-32b")),
    "local": Facts((R,), _RCR, ("local-model",), keep=_LOCAL_KEEP),
    "ollama-cloud": Facts((R,), _RCR, ("gpt-oss:120b", "deepseek-v3.1:671b")),
    "upstage": Facts((RC,), _RCR, ("solar-pro2",), notes="reasoning field unconfirmed: reasoning_content"),
    # --- strict schemas ------------------------------------------------------------------------
    "fireworks": Facts((RC,), frozenset({RC}), ("accounts/fireworks/models/kimi-k2-thinking",), strict=True,
                       notes="strictness text unconfirmed: OpenAI wording"),
    "openai": Facts((RC,), frozenset({RC}), ("gpt-oss-120b", "gpt-5.1"), strict=True,
                    model_returns=(("gpt-5*", ()),),
                    notes="only gpt-oss returns reasoning_content (as on Azure); gpt-5 returns only a count"),
    "mistral": Facts((), frozenset({"prefix"}), ("magistral-medium-2509", "mistral-medium-3.5"), strict=True,
                     errors="mistral", tool_id="mistral", id_rule="mistral",
                     top_extra=frozenset({"prompt_mode", "safe_prompt", "random_seed"}),
                     notes="returns plain content, no reasoning key (thinking chunks not emulated)"),
    "groq": Facts((R,), frozenset(), ("qwen/qwen3-32b", "openai/gpt-oss-120b"), strict=True, errors="groq",
                  top_extra=_GROQ_TOP),
    "cerebras": Facts((R,), frozenset({R}), ("gpt-oss-120b", "zai-glm-4.7"), strict=True, errors="cerebras",
                      top_extra=_GROQ_TOP | {"disable_reasoning"},
                      notes="takes `reasoning` back on assistant messages, refuses `reasoning_content` (real body "
                            "in zerx-lab/zap#25, anomalyco/opencode#26762; QwenLM/qwen-code#11045 on every model); "
                            "a recorded gpt-oss-120b request carrying `reasoning` was accepted (pydantic-ai "
                            "test_cerebras_thinking_part_survives_multiturn)"),
    "sambanova": Facts((THINK,), frozenset(), ("DeepSeek-R1-0528", "DeepSeek-V3.1"), strict=True,
                       notes="strictness text unconfirmed: OpenAI wording"),
    "hunyuan": Facts((RC,), frozenset(), ("hunyuan-t1-latest", "hunyuan-a13b"), strict=True,
                     top_extra=frozenset({"enable_thinking", "thinking"}),
                     notes="returns reasoning_content but rejects it back; OpenAI wording"),
    # --- private native carriers ---------------------------------------------------------------
    "copilot": Facts((RT, RO), frozenset({RT, RO}), ("claude-sonnet-4.5", "gemini-3-pro-preview", "gpt-4.1"),
                     strict=True, signs="copilot", tool_signatures="gemini-*",
                     model_returns=(("gpt-4*", ()),)),
    "gemini-openai": Facts((RC, EC), frozenset({RC, EC}),
                           ("gemini-3-pro-preview", "gemini-3-flash-preview", "gemini-2.5-flash"),
                           strict=True, errors="gemini", signs="gemini", signature_models="gemini-3*",
                           top_extra=frozenset({"extra_body"})),
}


# --- switches ------------------------------------------------------------------------------
def _get(body: Mapping[str, Any], path: Sequence[str]) -> Any:
    cur: Any = body
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def thinking_on(body: Mapping[str, Any]) -> bool:
    """False when the request turned thinking off by any of the usual switches."""
    off = (
        _get(body, ("thinking", "type")) == "disabled"
        or body.get("enable_thinking") is False
        or _get(body, ("chat_template_kwargs", "enable_thinking")) is False
        or _get(body, ("reasoning", "enabled")) is False
        or _get(body, ("reasoning", "exclude")) is True
        or body.get("reasoning_effort") == "none"
        or body.get("include_reasoning") is False
        or body.get("reasoning_format") == "hidden"
    )
    return not off


def asked(facts: Facts, model: str, body: Mapping[str, Any]) -> bool:
    """False for a think-only-when-asked model whose request did not ask the documented way."""
    if not facts.ask or not any(fnmatchcase(model.lower(), g) for g in facts.ask_models):
        return True
    if facts.ask == "enable_thinking":
        return body.get("enable_thinking") is True
    r = body.get("reasoning")
    if not isinstance(r, Mapping):
        return False
    return r.get("enabled") is True or r.get("effort") not in (None, "none") or bool(r.get("max_tokens"))


def keep_on(facts: Facts, body: Mapping[str, Any]) -> bool:
    """Whether earlier turns' replayed thinking is kept (no keep switch → always kept)."""
    return facts.keep is None or _get(body, facts.keep[0]) == facts.keep[1]


def returns_for(facts: Facts, model: str, body: Mapping[str, Any]) -> tuple[str, ...]:
    """The carriers this response uses: model rules, then request switches."""
    if not thinking_on(body) or not asked(facts, model, body):
        return ()
    out = facts.returns
    m = model.lower()
    for pattern, carriers in facts.model_returns:
        if fnmatchcase(m, pattern):
            out = carriers
            break
    if facts.split_switch and body.get(facts.split_switch) is not True:
        out = (THINK,)
    if body.get("reasoning_format") == "raw" and R in out:
        out = (THINK,)
    return out


def details_format(model: str) -> str:
    for prefix, fmt in (("anthropic/", "anthropic-claude-v1"), ("openai/", "openai-responses-v1"),
                        ("google/", "google-gemini-v1"), ("x-ai/", "xai-responses-v1")):
        if model.lower().startswith(prefix):
            return fmt
    return "unknown"


# --- error dialects ------------------------------------------------------------------------
def _oai(message: str, *, code: Any = None, param: Any = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def error_body(style: str, message: str, *, status: int = 400) -> dict[str, Any]:
    """A generic error in a dialect (used for must-echo, signatures and faults)."""
    if style == "openrouter":
        return {"error": {"code": status, "message": message, "metadata": {}}}
    if style == "gemini":
        return {"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}}
    if style == "cerebras":
        return {"message": message, "type": "invalid_request_error", "param": "", "code": ""}
    if style == "mistral":
        return {"object": "error", "message": message, "type": "invalid_request_error", "param": None, "code": None}
    if style == "zai":
        return {"error": {"code": "1210", "message": message}}
    if style == "deepseek":
        return _oai(message, code="invalid_request_error")
    return _oai(message)


def unknown_field_error(style: str, path: Sequence[str | int], key: str, *, value: Any = None,
                        accepted: Sequence[str] = (), body_len: int = 0,
                        provider: str = "") -> tuple[int, dict[str, Any]]:
    """Provider ``style``'s real unknown-field error for ``key`` under ``path`` (``()`` = top level).

    ``path`` is like ``("messages", 2, "assistant")`` or ``("messages", 2, "assistant",
    "tool_calls", 0, "function")``; the role segment is dropped where a dialect does not show it.
    """
    plain = [p for p in path if p != "assistant"]
    dotted = ".".join(str(p) for p in plain)
    if style == "mistral":
        return 422, {"object": "error", "message": {"detail": [{
            "type": "extra_forbidden", "loc": ["body", *path, key], "msg": "Extra inputs are not permitted",
            "input": value}]}, "type": "invalid_request_error", "param": None, "code": None}
    if style == "groq":
        if not path:
            return 400, {"error": {"message": f"property '{key}' is unsupported", "type": "invalid_request_error"}}
        msg_path = ".".join(str(p) for p in plain[:2])
        return 400, {"error": {"message": f"'{msg_path}' : for 'role:assistant' the following must be satisfied"
                                          f"[('{dotted}' : property '{key}' is unsupported)]",
                               "type": "invalid_request_error"}}
    if style == "cerebras":
        full = ".".join(str(p) for p in (*path, key))
        return 400, {"message": f"{full}: property '{full}' is unsupported", "type": "invalid_request_error",
                     "param": "validation_error", "code": "wrong_api_format"}
    if style == "gemini":
        where = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(plain))
        msg = f'Invalid JSON payload received. Unknown name "{key}"' + (f" at '{where}'" if where else "") + \
            ": Cannot find field."
        return 400, {"error": {"code": 400, "message": msg, "status": "INVALID_ARGUMENT", "details": [{
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            "fieldViolations": [{"field": f"{where}.{key}" if where else key, "description": msg}]}]}}
    if style == "deepseek":
        where = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(plain))
        expected = ", ".join(f"`{a}`" for a in accepted)
        return 400, _oai(f"Failed to deserialize the JSON body into the target type: {where + ': ' if where else ''}"
                         f"unknown field `{key}`, expected one of {expected} at line 1 column {body_len}",
                         code="invalid_request_error")
    if path:
        inner = _oai(f"Additional properties are not allowed ('{key}' was unexpected) - '{dotted}'")
    else:
        inner = _oai(f"Unrecognized request argument supplied: {key}")
    if style == "openrouter":
        return 400, {"error": {"code": 400, "message": "Provider returned error", "metadata": {
            "raw": orjson.dumps(inner).decode(), "provider_name": provider or "OpenAI", "is_byok": False}}}
    return 400, inner


# --- validation ------------------------------------------------------------------------------
Verdict = tuple[int, dict[str, Any]] | None
Verify = Callable[[str, str], bool]
"""(text, signature) → valid for this personality and model."""


def _unknown(facts: Facts, name: str, body: Mapping[str, Any], body_len: int,
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
                return 400, _wrapped("Moonshot AI", _oai("thinking is enabled but reasoning_content is missing in "
                                                         "assistant tool call message at index "
                                                         f"{body['messages'].index(msg)}"))
            who = "Xiaomi" if m.startswith("xiaomi/") else "DeepSeek"
            return 400, _wrapped(who, error_body("deepseek", "The `reasoning_content` in the thinking mode must be "
                                                             "passed back to the API."))
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
                return 400, _oai(f"thinking is enabled but reasoning_content is missing in assistant tool call "
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
                        raw = _oai(f"The encrypted content for item {d.get('id')} could not be verified.")
                        who = "OpenAI"
                    return 400, {"error": {"code": 400, "message": "Provider returned error", "metadata": {
                        "raw": orjson.dumps(raw).decode(), "provider_name": who, "is_byok": False}}}
        elif facts.signs == "copilot":
            bad = bool(msg.get(RO)) and not verify(str(msg.get(RT) or ""), str(msg[RO]))
            for call in msg.get("tool_calls") or []:
                sig = (call.get("function") or {}).get("thought_signature")
                bad = bad or (bool(sig) and not verify(f"tool:{call.get('id')}", str(sig)))
            if bad:
                return 400, _oai("Invalid signature in thinking block", code="invalid_request_body")
        elif facts.signs == "gemini":
            sig = _get(msg, (EC, "google", "thought_signature"))
            corrupted = bool(sig) and sig not in DUMMY_SIGNATURES and not verify(_text(msg.get("content")), str(sig))
            calls = list(msg.get("tool_calls") or [])
            for call in calls:
                csig = _get(call, (EC, "google", "thought_signature"))
                if csig and csig not in DUMMY_SIGNATURES and not verify(f"tool:{call.get('id')}", str(csig)):
                    corrupted = True
            if corrupted:
                return 400, error_body("gemini", "Corrupted thought signature.")
            if calls and i > last_user and fnmatchcase(model.lower(), facts.signature_models) \
                    and not _get(calls[0], (EC, "google", "thought_signature")):
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
    return (_unknown(facts, name, body, body_len, reject) or _tool_ids(facts, body) or _efforts(facts, model, body)
            or _must_echo(facts, body) or _echo_upstream(facts, model, body)
            or (_signatures(facts, name, model, body, verify) if facts.signs else None))


def _efforts(facts: Facts, model: str, body: Mapping[str, Any]) -> Verdict:
    for glob, path, accepted in facts.efforts:
        value = _get(body, path)
        if value is None or value in accepted or not fnmatchcase(model.lower(), glob):
            continue
        if facts.errors == "zai":
            return 400, error_body("zai", "Invalid API parameter, please check the documentation.")
        listed = ", ".join(f"'{a}'" for a in accepted)
        return 400, _oai(f"Invalid value for {'.'.join(path)}: {value!r}. Supported values are: {listed}.",
                         param=".".join(path), code="invalid_value")
    return None
