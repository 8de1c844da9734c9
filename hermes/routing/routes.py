"""The route table: every provider route and how it takes reasoning back. Pure data.

Each row is a measured fact about a provider (sources in ``docs/routes.md`` and ``docs/emulators.md``):
which carrier fields its assistant messages read, whether a tool turn must echo
``reasoning_content``, which keep-thinking switches make it actually keep replayed
reasoning, which private native fields it owns, and which opaque blob kinds it accepts back.
Nothing else in Hermes knows a provider's name; adapters render what ``replay`` decides from
these rows. Users add or override rows in ``$HERMES_HOME/routes.toml`` (see ``resolve``).

Row keys are persisted (stamped on every stored reasoning part as ``origin.provider``): never
rename one; add an alias to ``providers`` instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import Any, Literal, TypeAlias

__all__ = [
    "AWS_SDK_HOST",
    "CARRIERS",
    "COPILOT_HEADERS",
    "FALLBACK_ROW",
    "GEMINI_SKIP_SIGNATURE",
    "LOCAL_ROW",
    "NATIVE_FIELDS",
    "ROUTES",
    "TOOL_ID_RULES",
    "WIRES",
    "ModelRule",
    "Route",
    "at_path",
    "deep_merge",
    "host_matches",
]

Carrier: TypeAlias = Literal["reasoning_content", "reasoning", "reasoning_details"]
CARRIERS: tuple[str, ...] = ("reasoning_content", "reasoning", "reasoning_details")
NATIVE_FIELDS: tuple[str, ...] = ("thought_signature", "tool_signatures", "reasoning_opaque", "reasoning_text")
WIRES: tuple[str, ...] = ("openai_chat", "anthropic", "bedrock", "gemini", "openai_responses")
RC, R, RD = "reasoning_content", "reasoning", "reasoning_details"
TOOL_ID_RULES: tuple[str, ...] = ("any", "anthropic", "mistral")
_AGG_ECHO = ("deepseek/*", "moonshotai/kimi*", "xiaomi/mimo*")
"""Must-echo models as aggregators name them (DeepSeek V4/R1 through OpenRouter still needs
reasoning on every tool turn: LibreChat issue 13366; Kimi and MiMo have the same rule)."""


@dataclass(frozen=True, slots=True)
class ModelRule:
    """Overrides applied to a row when the model id matches ``pattern`` (fnmatch, lower-case)."""

    pattern: str
    switches: Mapping[str, Any] = field(default_factory=dict)
    """Merged (deeply) into the request body whenever thinking is on."""
    policy: str | None = None
    """Replace the row's reasoning ``policy`` for matching models."""
    prior_turns: str | None = None
    """Replace the row's ``prior_turns`` for matching models."""
    thinking_off: Mapping[str, Any] | None = None
    """Replace the row's ``thinking_off`` for matching models (``{}``: say nothing)."""
    without: tuple[str, ...] = ()
    """Top-level switch names a matching model never gets, on or off (a model that cannot be
    switched refuses the parameter), whichever rule added them."""
    hosts: tuple[str, ...] = ()
    """When set, the rule applies only on these base-URL hosts (exact or a subdomain): a
    parameter only the provider's own API takes never goes to a relay using the same row."""
    carriers: frozenset[str] | None = None
    """Replace the row's carriers for matching models (a strict route's reasoning models)."""


@dataclass(frozen=True, slots=True)
class Route:
    """One row of the route table."""

    key: str
    """Persisted identifier; also the default ``--provider`` name."""
    wire: str
    label: str
    providers: tuple[str, ...] = ()
    """Provider names (lower-case) that select this row; ``key`` always does."""
    hosts: tuple[str, ...] = ()
    """Base-URL hosts that select this row: exact host or a subdomain of it, never a substring.
    A label ``*`` matches exactly one label (``bedrock-runtime.*.amazonaws.com``)."""
    paths: tuple[str, ...] = ()
    """When set, the base-URL path must also be one of these, a trailing ``/`` aside (same host,
    other API: ``https://api.deepseek.com/anthropic`` is the Anthropic-wire row, the bare host
    the chat one). Whole paths, never prefixes: ``/coding/v1`` is not ``/coding``."""
    carriers: frozenset[str] = frozenset()
    """Which of reasoning_content / reasoning / reasoning_details assistant messages carry."""
    must_echo: bool = False
    """Tool-call turns must carry their reasoning back: ``reasoning_content`` on the chat wire,
    a ``thinking`` block on the Anthropic wire (``" "`` when none was stored)."""
    must_echo_models: tuple[str, ...] = ()
    """Model globs (lower-case) that are must-echo on this route although the row is not: an
    aggregator serving DeepSeek / Kimi / MiMo passes their rule through (``for_model``)."""
    tool_ids: Literal["any", "anthropic", "mistral"] = "any"
    """Which tool-call ids the route accepts; stored ids that break the rule are mapped at
    render time (see ``toolids``): ``anthropic`` = ``^[a-zA-Z0-9_-]+$``, ``mistral`` = exactly
    9 characters of ``[A-Za-z0-9]``, ``any`` = sent as stored."""
    switches: Mapping[str, Any] = field(default_factory=dict)
    """Request-body fields sent whenever thinking is on (keep-thinking switches)."""
    native: frozenset[str] = frozenset()
    """Private ``hermes.native_assistant`` fields this route owns (``NATIVE_FIELDS``)."""
    blob_kinds: frozenset[str] = frozenset()
    """Opaque blob kinds this route accepts back natively (besides ``reasoning_details``)."""
    blob_scope: Literal["model", "provider"] = "model"
    """A blob goes back only to the same route+host, and also the same model when ``model``."""
    policy: Literal["signed", "strip", "unsigned", "keep", "fields"] = "fields"
    """How native-block wires replay reasoning: signed blocks, strip earlier turns, text only;
    ``keep``: every turn's reasoning, the route's own blocks byte-exact and any other as unsigned
    readable text (the vendors' Anthropic-compatible endpoints); ``fields`` for
    chat-completions routes (the carriers decide)."""
    prior_turns: Literal["all", "loop"] = "all"
    """Replay reasoning of turns before the open tool loop (``all``) or only inside it."""
    signed_loop: bool = False
    """Where the (model's) policy is ``signed``: with thinking on, every tool turn of the open
    tool loop must open with a signed thinking block, and with thinking off no thinking block
    may be sent (the Messages API's two 400s, docs/replay.md). So a loop turn without one this
    route may receive switches thinking off for the request, and thinking off drops reasoning."""
    think_tags: bool = False
    """Responses may carry reasoning as ``<think>…</think>`` inside ``content``."""
    thinking_chunks: tuple[str, ...] = ()
    """Model globs whose reasoning goes back as a ``thinking`` chunk at the head of the
    assistant message's ``content`` list — the form their answers carry it in (Mistral's
    Magistral); the row may otherwise be strict."""
    local: bool = False
    effort_field: str = "reasoning_effort"
    """Dotted path where a reasoning effort goes (Kimi: ``thinking.effort``, since Moonshot
    rejects ``thinking`` next to ``reasoning_effort``; OpenRouter: ``reasoning.effort``)."""
    effort_map: Mapping[str, str] = field(default_factory=dict)
    """Our effort name → the route's value; when set, an effort it does not list is not sent
    (the plain thinking switch goes alone). Empty: efforts pass through unchanged."""
    thinking_off: Mapping[str, Any] = field(default_factory=dict)
    """Request-body fields that switch thinking off (``--no-thinking``, compaction's summary
    call) on models that would otherwise think by default."""
    variant: Literal["", "vertex"] = ""
    """Endpoint shape on a native wire: ``vertex`` (``…/publishers/P/models/M:verb``, model
    in the URL) or the provider's own API."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra request headers every call on this route carries."""
    streams_with: Mapping[str, Any] = field(default_factory=dict)
    """Top-level body fields (and values) only a streamed request may carry: a request that
    would send one without streaming is sent as a stream instead (DashScope refuses
    ``enable_thinking: true`` on a non-streaming call)."""
    call_signature: str = ""
    """Dotted path inside a chat tool call where that call's thought signature goes."""
    text_signature: str = ""
    """Dotted path inside a chat assistant message where the turn's thought signature goes."""
    signature_pad: str = ""
    """On the chat wire: the value a tool turn's first call gets at ``call_signature`` when no
    call has a signature of its own (Gemini-compat: the documented validator skip). Empty: none."""
    models: tuple[str, ...] = ()
    """When set, a base-URL host selects this row only for model ids matching one of these globs
    (one Vertex host serves Claude and Gemini with different wires)."""
    tokens: str = ""
    """Token pricing basis for models no profile prices (``models.TOKENS``)."""
    base_url: str = ""
    key_env: tuple[str, ...] = ()
    auth: Literal["bearer", "x-api-key", "goog-api-key", "aws", "none"] = "bearer"
    model_rules: tuple[ModelRule, ...] = ()
    source: str = "builtin"
    """``builtin`` or the routes.toml path that defined/overrode the row."""

    @property
    def strict(self) -> bool:
        """A strict chat route rejects any unknown message key: it gets no reasoning key at all."""
        return self.wire == "openai_chat" and not self.carriers and not self.native

    def for_model(self, model: str, prior_turns: str = "", host: str = "") -> Route:
        """The row as it applies to ``model`` on ``host``: model rules folded in (switches
        deep-merged; a rule naming hosts only on one of them).

        ``prior_turns`` is the model profile's policy: it replaces the row's default, and a
        model rule of this row replaces both."""
        m = model.lower()
        out = self
        without: set[str] = set()
        if not self.must_echo and any(fnmatchcase(m, g) for g in self.must_echo_models):
            out = replace(out, must_echo=True)
        if prior_turns and prior_turns != self.prior_turns:
            out = replace(out, prior_turns=prior_turns)  # type: ignore[arg-type]
        for rule in self.model_rules:
            if fnmatchcase(m, rule.pattern) and (not rule.hosts or any(host_matches(host, h) for h in rule.hosts)):
                out = replace(
                    out,
                    switches=deep_merge(out.switches, rule.switches),
                    policy=rule.policy or out.policy,  # type: ignore[arg-type]
                    prior_turns=rule.prior_turns or out.prior_turns,  # type: ignore[arg-type]
                    thinking_off=out.thinking_off if rule.thinking_off is None else rule.thinking_off,
                    carriers=out.carriers if rule.carriers is None else rule.carriers,
                )
                without.update(rule.without)
        if without:
            out = replace(out, switches={k: v for k, v in out.switches.items() if k not in without},
                          thinking_off={k: v for k, v in out.thinking_off.items() if k not in without})
        return out


def host_matches(host: str, pattern: str) -> bool:
    """Exact host or subdomain of ``pattern``; a ``*`` label matches exactly one label."""
    h = host.lower().rstrip(".").split(".")
    p = pattern.lower().split(".")
    if len(h) < len(p):
        return False
    tail = h[len(h) - len(p):]
    return all(pl == hl or ("*" in pl and fnmatchcase(hl, pl)) for pl, hl in zip(p, tail, strict=True))


def deep_merge(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """``b`` over ``a``; nested mappings merge, everything else is replaced."""
    out = dict(a)
    for k, v in b.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def at_path(path: str, value: Any) -> dict[str, Any]:
    """``{"a": {"b": value}}`` for the dotted path ``a.b``."""
    names = path.split(".")
    out: dict[str, Any] = {names[-1]: value}
    for name in reversed(names[:-1]):
        out = {name: out}
    return out


_GLM_KEEP = {"thinking": {"type": "enabled", "clear_thinking": False}}
_QWEN_TEMPLATE_KEEP = (ModelRule("*qwen3*", switches={"chat_template_kwargs": {"preserve_thinking": True}}),)
_NONE: frozenset[str] = frozenset()
_OFF = {"thinking": {"type": "disabled"}}
"""The off switch of models that think unless told not to (DeepSeek, Kimi K2.x, GLM, MiMo, TokenHub)."""
_ASK = {"reasoning": {"enabled": True}}
"""OpenRouter-format gateways: Claude, Gemini 3 and GPT-5 behind them think only when asked."""
_SIGNED = frozenset({"anthropic.signature", "anthropic.redacted"})
_VERTEX_HOSTS = ("aiplatform.googleapis.com", "*-aiplatform.googleapis.com")
_GEMINI_SIG = "extra_content.google.thought_signature"
GEMINI_SKIP_SIGNATURE = "skip_thought_signature_validator"
"""Gemini's documented stand-in for a function call's missing thought signature."""
COPILOT_HEADERS: Mapping[str, str] = {
    "copilot-integration-id": "vscode-chat",
    "editor-version": "vscode/1.104.0",
    "editor-plugin-version": "copilot-chat/0.31.0",
    "openai-intent": "conversation-panel",
}
"""Copilot refuses requests that do not name an integration and an editor."""

# Order matters only for host matching among rows: the first row whose host matches wins.
# Strict rows come first so a custom provider pointed at api.groq.com gets nothing.
ROUTES: tuple[Route, ...] = (
    # --- vendors' Anthropic-compatible endpoints: before their chat rows (a path picks them) --
    # Unsigned thinking blocks go back on every tool turn (DeepSeek's 400 "The `content[].thinking`
    # in the thinking mode must be passed back to the API": NousResearch/hermes-agent issue 22313,
    # PR 17510); Anthropic's signatures are foreign there, so Claude's thinking goes as text.
    Route("deepseek-anthropic", "anthropic", "DeepSeek (Anthropic-compatible)", hosts=("api.deepseek.com",),
          paths=("/anthropic",), policy="keep", must_echo=True, blob_kinds=_SIGNED, thinking_off=_OFF,
          tool_ids="anthropic", auth="x-api-key", base_url="https://api.deepseek.com/anthropic",
          key_env=("DEEPSEEK_API_KEY",)),
    # Moonshot's /anthropic and Kimi's coding endpoint (its chat API is /coding/v1, the kimi row);
    # kimi-k2.7-code refuses thinking off there (MoonshotAI/Kimi-K2 issue 141).
    Route("kimi-anthropic", "anthropic", "Kimi / Moonshot (Anthropic-compatible)",
          providers=("moonshot-anthropic", "kimi-coding-anthropic"),
          hosts=("api.kimi.com", "moonshot.ai", "moonshot.cn"), paths=("/anthropic", "/coding"),
          policy="keep", must_echo=True, blob_kinds=_SIGNED, thinking_off=_OFF, tool_ids="anthropic",
          model_rules=(ModelRule("*k2.7-code*", thinking_off={}),),
          base_url="https://api.moonshot.ai/anthropic", key_env=("MOONSHOT_API_KEY", "KIMI_API_KEY")),
    Route("mimo-anthropic", "anthropic", "Xiaomi MiMo (Anthropic-compatible)", providers=("xiaomi-anthropic",),
          hosts=("xiaomimimo.com",), paths=("/anthropic",), policy="keep", must_echo=True, blob_kinds=_SIGNED,
          thinking_off=_OFF, tool_ids="anthropic", base_url="https://api.xiaomimimo.com/anthropic",
          key_env=("MIMO_API_KEY", "XIAOMI_API_KEY")),
    # MiniMax signs its own thinking blocks and takes them back as they are (no 400 without them)
    Route("minimax-anthropic", "anthropic", "MiniMax (Anthropic-compatible)", providers=("minimax-cn-anthropic",),
          hosts=("minimax.io", "minimaxi.com"), paths=("/anthropic",), policy="keep", blob_kinds=_SIGNED,
          tool_ids="anthropic", base_url="https://api.minimax.io/anthropic",
          key_env=("MINIMAX_API_KEY",)),
    # --- strict schemas: 400/422 on any unknown assistant key --------------------------
    # Magistral's thinking chunks go back inside content (vercel/ai PR 17991, opencode PR 38453)
    Route("mistral", "openai_chat", "Mistral", hosts=("mistral.ai",), carriers=_NONE, tool_ids="mistral",
          thinking_chunks=("magistral*",),
          base_url="https://api.mistral.ai/v1", key_env=("MISTRAL_API_KEY",)),
    # Groq with reasoning_format "raw" returns the thinking as <think>…</think> inside content
    # (pydantic-ai's recorded test_groq_model_thinking_part): split it off like other tag routes
    # Its reasoning models take `reasoning` back (vercel/ai PR 8057: others refuse it with
    # "messages[X].reasoning: reasoning is not supported with this model"; issue 7860).
    Route("groq", "openai_chat", "Groq", hosts=("groq.com",), carriers=_NONE, think_tags=True,
          model_rules=tuple(ModelRule(p, carriers=frozenset({R})) for p in
                            ("openai/gpt-oss*", "qwen/qwen3*", "*deepseek-r1*")),
          base_url="https://api.groq.com/openai/v1", key_env=("GROQ_API_KEY",)),
    # `reasoning` back on assistant messages; `reasoning_content` is refused (docs/emulators.md)
    Route("cerebras", "openai_chat", "Cerebras", hosts=("cerebras.ai",), carriers=frozenset({R}),
          base_url="https://api.cerebras.ai/v1", key_env=("CEREBRAS_API_KEY",)),
    Route("sambanova", "openai_chat", "SambaNova", hosts=("sambanova.ai",), carriers=_NONE,
          think_tags=True, base_url="https://api.sambanova.ai/v1", key_env=("SAMBANOVA_API_KEY",)),
    Route("hunyuan", "openai_chat", "Tencent Hunyuan", hosts=("hunyuan.cloud.tencent.com",),
          carriers=_NONE, base_url="https://api.hunyuan.cloud.tencent.com/v1",
          key_env=("HUNYUAN_API_KEY",)),
    # --- must-echo: tool turns need reasoning_content back, " " when none ----------------
    Route("deepseek", "openai_chat", "DeepSeek", hosts=("api.deepseek.com",),
          carriers=frozenset({RC}), must_echo=True, switches={"thinking": {"type": "enabled"}}, thinking_off=_OFF,
          base_url="https://api.deepseek.com", key_env=("DEEPSEEK_API_KEY",)),
    Route("kimi", "openai_chat", "Kimi / Moonshot", providers=("moonshot", "kimi-coding", "kimi-coding-cn"),
          hosts=("api.kimi.com", "moonshot.ai", "moonshot.cn"), carriers=frozenset({RC}), must_echo=True,
          effort_field="thinking.effort",
          effort_map={"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"},
          model_rules=(ModelRule("*k2*", switches={"thinking": {"type": "enabled", "keep": "all"}}, thinking_off=_OFF),
                       ModelRule("*k2.7-code*", thinking_off={})),
          base_url="https://api.moonshot.ai/v1", key_env=("MOONSHOT_API_KEY", "KIMI_API_KEY")),
    Route("mimo", "openai_chat", "Xiaomi MiMo", providers=("xiaomi",),
          hosts=("xiaomimimo.com",), carriers=frozenset({RC}), must_echo=True,
          switches={"thinking": {"type": "enabled"}}, thinking_off=_OFF,
          base_url="https://api.xiaomimimo.com/v1", key_env=("MIMO_API_KEY", "XIAOMI_API_KEY")),
    # --- OpenRouter-format gateways: RC + R + RD -----------------------------------------
    Route("openrouter", "openai_chat", "OpenRouter", hosts=("openrouter.ai",),
          carriers=frozenset({RC, R, RD}), switches=_ASK, effort_field="reasoning.effort", must_echo_models=_AGG_ECHO,
          base_url="https://openrouter.ai/api/v1",
          key_env=("OPENROUTER_API_KEY",)),
    Route("kilo", "openai_chat", "Kilo Gateway", providers=("kilocode",), hosts=("kilo.ai",),
          carriers=frozenset({RC, R, RD}), switches=_ASK, effort_field="reasoning.effort", must_echo_models=_AGG_ECHO,
          base_url="https://api.kilo.ai/api/gateway",
          key_env=("KILO_API_KEY",)),
    Route("vercel", "openai_chat", "Vercel AI Gateway", providers=("ai-gateway",),
          hosts=("ai-gateway.vercel.sh",), carriers=frozenset({RC, R, RD}), switches=_ASK,
          effort_field="reasoning.effort", must_echo_models=_AGG_ECHO,
          base_url="https://ai-gateway.vercel.sh/v1", key_env=("AI_GATEWAY_API_KEY", "VERCEL_API_KEY")),
    Route("nous", "openai_chat", "Nous Portal", providers=("nous-portal",), hosts=("nousresearch.com",),
          carriers=frozenset({RC, R, RD}), think_tags=True, must_echo_models=_AGG_ECHO,
          base_url="https://inference-api.nousresearch.com/v1", key_env=("NOUS_API_KEY",)),
    # --- vendors documenting reasoning_details next to reasoning_content ----------------
    Route("novita", "openai_chat", "Novita", hosts=("novita.ai",), carriers=frozenset({RC, RD}),
          base_url="https://api.novita.ai/openai", key_env=("NOVITA_API_KEY",)),
    Route("minimax", "openai_chat", "MiniMax", providers=("minimax-cn",), hosts=("minimax.io", "minimaxi.com"),
          carriers=frozenset({RC, RD}), think_tags=True, switches={"reasoning_split": True},
          base_url="https://api.minimax.io/v1", key_env=("MINIMAX_API_KEY",)),
    Route("tencent", "openai_chat", "Tencent TokenHub", providers=("tencent-tokenhub",),
          hosts=("tokenhub.tencentmaas.com", "tokenhub-intl.tencentcloudmaas.com"),
          carriers=frozenset({RC, RD}), switches={"thinking": {"type": "enabled"}}, thinking_off=_OFF,
          base_url="https://tokenhub.tencentmaas.com/v1", key_env=("TOKENHUB_API_KEY",)),
    # --- reasoning_content with keep-thinking switches ---------------------------------
    Route("glm", "openai_chat", "Z.ai / GLM", providers=("zai", "zhipu"), hosts=("z.ai", "bigmodel.cn"),
          carriers=frozenset({RC}), switches=_GLM_KEEP, thinking_off=_OFF,
          base_url="https://api.z.ai/api/paas/v4", key_env=("ZAI_API_KEY", "GLM_API_KEY")),
    Route("dashscope", "openai_chat", "Alibaba DashScope", providers=("alibaba", "qwen"),
          hosts=("dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com"), carriers=frozenset({RC}),
          thinking_off={"enable_thinking": False},
          # Qwen3 hybrid models think only when told (3.5+ by default): without it,
          # preserve_thinking keeps nothing. Said for every Qwen3 whenever thinking is on.
          streams_with={"enable_thinking": True},
          # Instruct-only Qwen3 models take no enable_thinking at all; thinking-only ones only
          # `true` (their "off" says true too: the model thinks anyway).
          model_rules=(ModelRule("*qwen3*", switches={"enable_thinking": True}),
                       *(ModelRule(p, without=("enable_thinking",)) for p in ("*qwen3*-instruct*", "qwen3-coder*")),
                       ModelRule("*qwen3*-thinking*", thinking_off={"enable_thinking": True}),
                       *(ModelRule(p, switches={"preserve_thinking": True})
                         for p in ("qwen3.6*", "qwen3.7*", "qwen3.8*", "qwen3.9*", "kimi-k2.6*", "kimi-k2.7*")),
                       ModelRule("glm-5*", switches={"clear_thinking": False})),
          base_url="https://dashscope-intl.aliyuncs.com/compatible-mode/v1", key_env=("DASHSCOPE_API_KEY",)),
    Route("fireworks", "openai_chat", "Fireworks", hosts=("fireworks.ai",), carriers=frozenset({RC}),
          base_url="https://api.fireworks.ai/inference/v1", key_env=("FIREWORKS_API_KEY",)),
    Route("xai", "openai_chat", "xAI", hosts=("x.ai",), carriers=frozenset({RC}),
          base_url="https://api.x.ai/v1", key_env=("XAI_API_KEY",)),
    Route("openai", "openai_chat", "OpenAI Chat Completions", hosts=("api.openai.com",),
          carriers=frozenset({RC}), tokens="o200k_base", base_url="https://api.openai.com/v1", key_env=("OPENAI_API_KEY",)),
    # --- private native carriers on the chat wire --------------------------------------
    Route("copilot", "openai_chat", "GitHub Copilot", providers=("github-copilot",), hosts=("githubcopilot.com",),
          carriers=_NONE, native=frozenset({"reasoning_opaque", "reasoning_text", "tool_signatures"}),
          call_signature="function.thought_signature", headers=COPILOT_HEADERS,
          base_url="https://api.githubcopilot.com", key_env=("COPILOT_API_KEY", "GITHUB_TOKEN")),
    Route("gemini-openai", "openai_chat", "Gemini (OpenAI-compatible)", providers=("gemini-compat",),
          hosts=("generativelanguage.googleapis.com",), paths=("/v1beta/openai",),
          carriers=frozenset({RC}), native=frozenset({"thought_signature", "tool_signatures"}),
          call_signature=_GEMINI_SIG, text_signature=_GEMINI_SIG, signature_pad=GEMINI_SKIP_SIGNATURE,
          base_url="https://generativelanguage.googleapis.com/v1beta/openai", key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY")),
    # --- local servers: RC + R (llama.cpp/SGLang read RC; vLLM/Ollama read R) ------------
    Route("ollama-cloud", "openai_chat", "Ollama Cloud", hosts=("ollama.com",), carriers=frozenset({RC, R}),
          base_url="https://ollama.com/v1", key_env=("OLLAMA_API_KEY",)),
    Route("upstage", "openai_chat", "Upstage", hosts=("upstage.ai",), carriers=frozenset({RC, R}),
          base_url="https://api.upstage.ai/v1", key_env=("UPSTAGE_API_KEY",)),
    Route("ollama", "openai_chat", "Ollama (local)", carriers=frozenset({RC, R}), local=True, auth="none",
          base_url="http://127.0.0.1:11434/v1"),
    Route("vllm", "openai_chat", "vLLM (local)", carriers=frozenset({RC, R}), local=True, auth="none",
          model_rules=_QWEN_TEMPLATE_KEEP, base_url="http://127.0.0.1:8000/v1"),
    Route("llamacpp", "openai_chat", "llama.cpp server", providers=("llama.cpp", "llama-cpp"),
          carriers=frozenset({RC, R}), local=True, auth="none", model_rules=_QWEN_TEMPLATE_KEEP,
          base_url="http://127.0.0.1:8080/v1"),
    Route("lmstudio", "openai_chat", "LM Studio", carriers=frozenset({RC, R}), local=True, auth="none",
          base_url="http://127.0.0.1:1234/v1"),
    Route("sglang", "openai_chat", "SGLang", carriers=frozenset({RC, R}), local=True, auth="none",
          model_rules=_QWEN_TEMPLATE_KEEP, base_url="http://127.0.0.1:30000/v1"),
    Route("local", "openai_chat", "Local server (loopback / private network)", providers=("custom-local",),
          carriers=frozenset({RC, R}), local=True, auth="none", model_rules=_QWEN_TEMPLATE_KEEP),
    # --- native wires -------------------------------------------------------------------
    Route("anthropic", "anthropic", "Anthropic Messages", providers=("claude",), hosts=("api.anthropic.com",),
          blob_kinds=_SIGNED, policy="signed", signed_loop=True, tokens="ratio:cl100k",
          prior_turns="all", auth="x-api-key", base_url="https://api.anthropic.com", tool_ids="anthropic",
          key_env=("ANTHROPIC_API_KEY",)),
    Route("anthropic-vertex", "anthropic", "Anthropic on Vertex AI", providers=("vertex-anthropic",),
          hosts=_VERTEX_HOSTS, models=("*claude*",), variant="vertex",
          blob_kinds=_SIGNED, policy="signed", signed_loop=True, tokens="ratio:cl100k",
          key_env=("VERTEX_ACCESS_TOKEN", "GOOGLE_OAUTH_ACCESS_TOKEN"), tool_ids="anthropic",
          base_url="https://aiplatform.googleapis.com/v1/projects/-/locations/global"),
    Route("anthropic-foundry", "anthropic", "Anthropic on Azure Foundry", providers=("foundry",),
          hosts=("services.ai.azure.com",), blob_kinds=_SIGNED, tokens="ratio:cl100k",
          policy="signed", signed_loop=True, auth="x-api-key", key_env=("ANTHROPIC_FOUNDRY_API_KEY", "AZURE_API_KEY"),
          tool_ids="anthropic"),
    Route("bedrock", "bedrock", "AWS Bedrock Converse", providers=("aws-bedrock",),
          hosts=("bedrock-runtime.*.amazonaws.com", "bedrock-runtime-fips.*.amazonaws.com"), blob_kinds=_SIGNED,
          policy="unsigned", signed_loop=True, auth="aws",
          tool_ids="anthropic",  # older ToolUseBlock docs: Anthropic's pattern
          model_rules=(ModelRule("*claude*", policy="signed"),
                       ModelRule("*deepseek.r1*", policy="strip"), ModelRule("*deepseek-r1*", policy="strip"),
                       ModelRule("*kimi-k3*", policy="strip"))),
    Route("gemini", "gemini", "Google Gemini API", providers=("google", "google-ai-studio"),
          hosts=("generativelanguage.googleapis.com",), native=frozenset({"thought_signature", "tool_signatures"}),
          blob_scope="provider", auth="goog-api-key",
          base_url="https://generativelanguage.googleapis.com/v1beta", key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY")),
    Route("gemini-vertex", "gemini", "Gemini on Vertex AI", providers=("vertex",), hosts=_VERTEX_HOSTS,
          variant="vertex", native=frozenset({"thought_signature", "tool_signatures"}), blob_scope="provider",
          key_env=("VERTEX_ACCESS_TOKEN", "GOOGLE_OAUTH_ACCESS_TOKEN")),
    Route("openai-responses", "openai_responses", "OpenAI Responses", providers=("responses", "codex"),
          blob_kinds=frozenset({"openai.encrypted"}), policy="signed", base_url="https://api.openai.com/v1",
          key_env=("OPENAI_API_KEY",), tokens="o200k_base",
          # gpt-5.4+ and gpt-6 read replayed earlier-turn reasoning only when asked (5.6 does by
          # default); only OpenAI's own API takes the parameter, not relays or the Codex backend.
          model_rules=tuple(ModelRule(p, switches={"reasoning": {"context": "all_turns"}}, hosts=("api.openai.com",))
                            for p in ("gpt-5.[4-9]*", "gpt-5.[1-9][0-9]*", "gpt-[6-9]*"))),
    Route("xai-responses", "openai_responses", "xAI Responses", blob_kinds=frozenset({"openai.encrypted"}),
          policy="signed",
          base_url="https://api.x.ai/v1", key_env=("XAI_API_KEY",)),
    # --- fallback for any other host: reasoning_content only ---------------------------
    # A DeepSeek or MiMo model behind an unknown host keeps its must-echo rule (the reference
    # agent's rule: a model id containing deepseek / mimo pads every tool turn).
    Route("generic", "openai_chat", "OpenAI-compatible (unknown host)", providers=("custom", "openai-compatible"),
          carriers=frozenset({RC}), must_echo_models=("*deepseek*", "*mimo*")),
)

LOCAL_ROW = "local"
"""The row a loopback / private-network host resolves to when no row names its host."""
FALLBACK_ROW = "generic"
"""The row any other unknown host resolves to."""
AWS_SDK_HOST = "bedrock-runtime.amazonaws.com"
"""The host recorded for an ``auth = "aws"`` row without a base URL (the SDK picks the regional
endpoint); it is part of every stored origin from such a row, so it never changes."""
