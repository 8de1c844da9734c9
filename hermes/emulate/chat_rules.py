"""Facts for the chat-completions emulator personalities, and the request switches they read.

One ``Facts`` row per personality says what its assistant messages RETURN (reasoning carriers),
what assistant-message keys it ACCEPTS back, how strict it is about the rest and in which
provider's words it says so, whether tool turns must echo ``reasoning_content``, which blobs it
signs and verifies, and which request switch makes it keep prior thinking. Pure data + pure
functions; three modules share the job:

* here — the table and the switches (``thinking_on``, ``keep_on``, ``returns_for``, ...);
* ``chat_errors`` — each provider's error dialect (the texts providers really return: provider
  docs, public issues, recorded exchanges; where a provider's text is unconfirmed the OpenAI
  wording is used, noted on the row);
* ``chat_validate`` — ``validate`` returns ``(status, body)`` for the first violation, or
  ``None``. The app in ``openai_chat`` does the I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

__all__ = [
    "BASE_ASSISTANT_KEYS",
    "DUMMY_SIGNATURES",
    "FACTS",
    "OPENAI_TOP_LEVEL",
    "Facts",
    "asked",
    "details_format",
    "get_path",
    "keep_on",
    "returns_for",
    "thinking_on",
]

RC, R, RD = "reasoning_content", "reasoning", "reasoning_details"
RT, RO, EC = "reasoning_text", "reasoning_opaque", "extra_content"
THINK = "think"
CHUNKS = "chunks"
"""Mistral's Magistral: the reasoning as a ``thinking`` chunk at the head of ``content``."""
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
    reasoning_models: tuple[str, ...] = ()
    """Globs of models whose assistant messages may carry ``reasoning`` back although the
    personality is strict (Groq's reasoning models); another model gets Groq's refusal."""
    qwen_modes: bool = False
    """DashScope's Qwen3 rules: ``enable_thinking: true`` only on a streamed call; thinking-only
    models take only ``true``; instruct-only models refuse the parameter."""
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

GROQ_REASONING = ("openai/gpt-oss*", "qwen/qwen3*", "deepseek-r1*", "*deepseek-r1*")
"""Groq's reasoning models (console.groq.com/docs/reasoning)."""

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
                       ask="enable_thinking", ask_models=("qwen3-*",), qwen_modes=True,
                       notes="Qwen3 hybrid models think only with enable_thinking: true; 3.5+ by default"),
    "xai": Facts((RC,), _RCR, ("grok-3-mini", "grok-4"), replay_ignored=True, usage_excludes_reasoning=True,
                 errors="xai", efforts=(("grok-3-mini*", ("reasoning_effort",), ("low", "high")),
                                        ("grok-*", ("reasoning_effort",), ())),
                 notes="only grok-3-mini takes reasoning_effort; the refusal text is quoted in litellm PR 16265"),
    "generic": Facts((RC,), _RCR, ("default-model",), echo_models=("*deepseek*", "*mimo*"),
                     notes="a relay serving DeepSeek / MiMo passes their must-echo 400 through as it is"),
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
    "mistral": Facts((), frozenset({"prefix"}), ("mistral-medium-3.5", "magistral-medium-2509"), strict=True,
                     errors="mistral", tool_id="mistral", id_rule="mistral",
                     top_extra=frozenset({"prompt_mode", "safe_prompt", "random_seed"}),
                     model_returns=(("magistral*", (CHUNKS,)),),
                     notes="Magistral answers with a `thinking` chunk in `content` (no reasoning key)"),
    "groq": Facts((R,), frozenset(), ("qwen/qwen3-32b", "openai/gpt-oss-120b"), strict=True, errors="groq",
                  top_extra=_GROQ_TOP, reasoning_models=GROQ_REASONING,
                  notes="reasoning models take `reasoning` back (vercel/ai #8057, #7860); others refuse it"),
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
def get_path(body: Mapping[str, Any], path: Sequence[str]) -> Any:
    """The value at ``path`` in a request body, or ``None`` where any step is missing."""
    cur: Any = body
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def thinking_on(body: Mapping[str, Any]) -> bool:
    """False when the request turned thinking off by any of the usual switches."""
    off = (
        get_path(body, ("thinking", "type")) == "disabled"
        or body.get("enable_thinking") is False
        or get_path(body, ("chat_template_kwargs", "enable_thinking")) is False
        or get_path(body, ("reasoning", "enabled")) is False
        or get_path(body, ("reasoning", "exclude")) is True
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
    return facts.keep is None or get_path(body, facts.keep[0]) == facts.keep[1]


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
