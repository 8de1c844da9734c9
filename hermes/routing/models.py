"""Model profiles: what a model family needs, whichever route serves it. Pure data.

A route row (``routes``) says how a *provider* takes reasoning back; a profile row says what a
*model* is: how its thinking is asked for (a token budget, Anthropic's ``adaptive``, a named
level), the budget per effort, its output caps, its context window, which tokenizer prices its
text, whether earlier turns' thinking reaches it, and which effort values it accepts. Wires,
the token estimator and compaction read the resolved :class:`Profile` from the resolved route;
none of them looks at a model id.

Rows are matched by glob (``fnmatch``, case-insensitive) against the model *key*: the model id
lower-cased, without a provider path (``anthropic/claude-sonnet-4.5`` → ``claude-sonnet-4.5``)
and without a release suffix (``-20250514``, ``@20250929``, ``-v1:0``, ``-2024-08-06``), so one
pattern serves direct, Bedrock, Vertex and aggregator spellings of the same model. Each field
is taken from the first matching row that sets it, so a specific row names only what differs
and a family row below it fills in the rest. Users add rows in ``routes.toml`` (``[[model]]``);
theirs are searched first. Sources for every fact are in ``docs/models.md``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from fnmatch import fnmatchcase
from functools import cache, lru_cache
from typing import Any, Literal, TypeAlias

__all__ = ["PROFILES", "PROFILE_FIELDS", "THINKING_STYLES", "TOKENS", "Profile", "ProfileRow", "example_id", "matching_rows", "model_key",
           "profile_for"]

Thinking: TypeAlias = Literal["budget", "adaptive", "level", "none"]
THINKING_STYLES: tuple[str, ...] = ("budget", "adaptive", "level", "none")
TOKENS: tuple[str, ...] = ("o200k_base", "cl100k_base", "ratio:o200k", "ratio:cl100k")
"""A real OpenAI encoding (counted exactly) or a fitted text model of that vocabulary family."""


@dataclass(frozen=True, slots=True)
class Profile:
    """What one model needs; every field resolved (see :func:`profile_for`)."""

    thinking: Thinking = "none"
    """How thinking is asked for: ``budget`` (tokens), ``adaptive`` (the model decides; effort
    is a level), ``level`` (a named level) or ``none`` (no thinking control on native wires)."""
    budgets: Mapping[str, int] = field(default_factory=dict)
    """Thinking budget per effort (``default``: when no effort is given; absent: send none)."""
    levels: Mapping[str, str] = field(default_factory=dict)
    """Our effort name → the model's level name (adaptive ``output_config.effort``, Gemini
    ``thinkingLevel``, Nova ``maxReasoningEffort``)."""
    min_budget: int = 0
    can_disable: bool = True
    """False: thinking cannot be switched off; a thinking-off request asks for the least."""
    least: Mapping[str, Any] = field(default_factory=dict)
    """Anthropic wires, where ``can_disable`` is False: the request fields of the least thinking
    the model does (what ``--no-thinking`` and compaction's summary call send instead of off)."""
    thinks_unasked: bool = False
    """Anthropic wires: the model thinks when ``thinking`` is omitted, so off is said explicitly."""
    interleaved: bool = False
    """Budget-style model that takes the interleaved-thinking beta (thinking between tool calls)."""
    display: str = ""
    """Anthropic wires: the thinking ``display`` a thinking request asks for (empty: the
    model's default). Models whose default is ``omitted`` return empty thinking text."""
    prefix_bound: bool = False
    """Anthropic wires: thinking blocks are bound to the exact conversation prefix; requests
    opt into dropping a block whose prefix changed (compaction) instead of a 400."""
    max_tokens: int = 8192
    """Output cap of a request without thinking."""
    thinking_max_tokens: int = 32000
    """Output cap of an adaptive-thinking request."""
    context_window: int = 128_000
    tokens: str = ""
    """Token pricing basis (``TOKENS``); empty: the route's default."""
    prior_turns: Literal["all", "loop", ""] = ""
    """Whether earlier turns' thinking reaches the model (``all``) or only the open tool loop's
    (``loop``); empty: the route's default."""
    efforts: tuple[str, ...] | None = None
    """Effort values the model accepts (None: any); another value is not sent at all."""
    call_ids: bool = False
    """Function calls and their results carry ids (Gemini 3); else they pair by name and order."""
    own_signatures: bool = False
    """Takes back only thought signatures this same model minted (Gemma: a Gemini model's is a
    400, whatever the row's blob scope), and checks none, so a call without one gets no skip."""

    def takes_effort(self, value: str) -> bool:
        return self.efforts is None or value in self.efforts

    @property
    def keeps_thinking(self) -> bool:
        """An Anthropic-wire model that thinks even when asked not to (it has a ``least``)."""
        return not self.can_disable and bool(self.least)

    def thinking_off(self) -> dict[str, Any]:
        """Anthropic-wire fields of a request that should not think: nothing (off by omission),
        an explicit ``disabled``, or the least thinking of a model that cannot stop."""
        if self.keeps_thinking:
            return dict(self.least)
        return {"thinking": {"type": "disabled"}} if self.thinks_unasked else {}


@dataclass(frozen=True, slots=True, eq=False)
class ProfileRow:
    """One row of the profile table: the fields it sets for the models it matches (None: unset)."""

    models: tuple[str, ...]
    """Globs over :func:`model_key`."""
    thinking: Thinking | None = None
    budgets: Mapping[str, int] | None = None
    levels: Mapping[str, str] | None = None
    min_budget: int | None = None
    can_disable: bool | None = None
    least: Mapping[str, Any] | None = None
    thinks_unasked: bool | None = None
    interleaved: bool | None = None
    display: str | None = None
    prefix_bound: bool | None = None
    max_tokens: int | None = None
    thinking_max_tokens: int | None = None
    context_window: int | None = None
    tokens: str | None = None
    prior_turns: Literal["all", "loop"] | None = None
    efforts: tuple[str, ...] | None = None
    call_ids: bool | None = None
    own_signatures: bool | None = None
    source: str = "builtin"
    cite: str = ""
    """Where the row's facts come from, in a few words (the full evidence is in docs/models.md)."""

    def matches(self, key: str) -> bool:
        return any(all(run in key for run in _literals(p)) and fnmatchcase(key, p) for p in self.models)


@cache
def _literals(pattern: str) -> tuple[str, ...]:
    """The runs of plain characters in a glob, between ``*``, ``?`` and ``[...]`` sets as
    ``fnmatch`` reads them (a ``[`` without its ``]`` is plain). A key that lacks one of them
    cannot match, so :meth:`ProfileRow.matches` asks ``fnmatchcase`` — which compiles a regex
    per pattern — only about patterns that might."""
    runs: list[str] = []
    start = i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*" or c == "?":
            runs.append(pattern[start:i])
            start = i = i + 1
            continue
        if c == "[":
            j = i + 1
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j < n:  # a set: pattern[i..j]
                runs.append(pattern[start:i])
                start = i = j + 1
                continue
        i += 1
    runs.append(pattern[start:])
    return tuple(r for r in runs if r)


PROFILE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Profile))

_SUFFIX = re.compile(r"(@[^/]*|-v\d+(:\d+)?|:\d+|-\d{8}|-\d{4}-\d{2}-\d{2}|-latest)$")


def model_key(model: str) -> str:
    """The id a profile pattern is matched against: lower case, last path segment, no release suffix."""
    key = model.strip().lower().rsplit("/", 1)[-1]
    while (stripped := _SUFFIX.sub("", key)) != key and stripped:
        key = stripped
    return key


# ----------------------------------------------------------------------------- the table

_CLAUDE_BUDGETS = {"default": 8000, "minimal": 1024, "low": 2048, "medium": 8000, "high": 16000,
                   "xhigh": 24000, "max": 32000}
_CLAUDE_LEVELS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh",
                  "max": "max"}
_GEMINI_BUDGETS = {"minimal": 512, "low": 1024, "medium": 8192, "high": 24576, "xhigh": 32768, "max": 32768}
_GEMINI_LEVELS = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high",
                  "max": "high"}
_GEMINI3_PRO_LEVELS = {"minimal": "low", "low": "low", "medium": "high", "high": "high", "xhigh": "high",
                       "max": "high"}
_GEMINI_NO_MINIMAL = {**_GEMINI_LEVELS, "minimal": "low"}
_NOVA_LEVELS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}
_OPENAI_O = ("o1*", "o3*", "o4*")

# First row that sets a field wins: specific rows first, family rows after them.
PROFILES: tuple[ProfileRow, ...] = (
    # --- Claude ---------------------------------------------------------------------------------
    # 3.x and 4.0-4.5 take a manual budget and see only the open tool loop's thinking, except
    # Opus 4.5, which keeps earlier turns'. From 4.6, and in every family from 5, thinking is
    # adaptive. (A glob's ``*`` spans ``-``, so the older rows come first and win.)
    # Opus 5.5, Fable 5.1 and Sonnet 5.5 cannot stop thinking (Sonnet 5.5's least is
    # ``between_tools``); from Opus 5 an omitted ``thinking`` is adaptive thinking on.
    ProfileRow(("*claude-sonnet-5[-.]5*",), can_disable=False, least={"thinking": {"type": "between_tools"}},
               cite='Anthropic, "What\'s new in Claude Opus 5.5": Sonnet 5.5 refuses disabled, between_tools is its least'),
    ProfileRow(("*claude-opus-5[-.]5*", "*claude-fable-5[-.]1*"), can_disable=False,
               least={"thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}},
               cite='Anthropic, "What\'s new in Claude Opus 5.5 / Fable 5.1": thinking.type.disabled refused'),
    ProfileRow(("*claude-opus-[5-9]*", "*claude-opus-[1-9][0-9]*"), thinks_unasked=True,
               cite='Anthropic Opus 5 migration guide: an omitted thinking is adaptive thinking on'),
    # Fable 5.1+, Mythos 5.1+, Opus / Sonnet / Haiku 5.5 check each replayed block's prefix.
    ProfileRow(("*claude-fable-5[-.][1-9]*", "*claude-mythos-5[-.][1-9]*", "*claude-opus-5[-.]5*",
                "*claude-sonnet-5[-.]5*", "*claude-haiku-5[-.]5*"), prefix_bound=True,
               cite='Anthropic, "Fix a thinking block bound to a different conversation"; AWS Bedrock "Preserved thinking"'),
    # Opus 4.7+, Mythos and Fable return empty thinking text unless asked to summarise it.
    ProfileRow(("*claude-opus-4[-.][7-9]*", "*claude-opus-[5-9]*", "*claude-opus-[1-9][0-9]*", "*claude-mythos*",
                "*claude-fable*"), display="summarized",
               cite='Anthropic, "What\'s new in Claude Opus 4.7"; anthropics/claude-code#49268, #49708; docker/docker-agent#3415'),
    ProfileRow(("*claude-opus-4[-.]5",), prior_turns="all"),
    # Haiku keeps earlier turns' thinking only from 5.5 (the first Haiku after 4.5).
    ProfileRow(("*claude-haiku-5", "*claude-haiku-5[-.][0-4]*"), prior_turns="loop",
               cite='hermes-agent anthropic_thinking_policy: Haiku keeps prior thinking from 5.5'),
    ProfileRow(("*claude-*-4", "*claude-*-4[-.][0-5]", "*claude-3*"), thinking="budget", prior_turns="loop"),
    ProfileRow(("*claude-*-4[-.][6-9]*", "*claude-*-4[-.][1-9][0-9]*", "*claude-[a-z]*-[5-9]*",
                "*claude-[a-z]*-[1-9][0-9]*", "*claude-mythos*"), thinking="adaptive", prior_turns="all"),
    ProfileRow(("*claude-3-opus*", "*claude-3-sonnet*", "*claude-3-haiku*"), max_tokens=4096),
    ProfileRow(("*claude-3*",), interleaved=False),
    ProfileRow(("*claude*",), thinking="budget", budgets=_CLAUDE_BUDGETS, levels=_CLAUDE_LEVELS,
               interleaved=True, max_tokens=8192, thinking_max_tokens=32000, context_window=200_000,
               tokens="ratio:cl100k"),
    # --- Gemini --------------------------------------------------------------------------------
    # Gemini 3 Pro takes only low | high; 3.1 Pro and 3.7 Flash refuse minimal.
    ProfileRow(("gemini-3-pro*",), levels=_GEMINI3_PRO_LEVELS,
               cite='chatwise#1206: "Thinking level MEDIUM is not supported for this model"'),
    ProfileRow(("gemini-3.1-pro*", "gemini-3.7-flash*"), levels=_GEMINI_NO_MINIMAL,
               cite='docs/models.md, "Gemini 3 thinking levels per model": minimal refused'),
    ProfileRow(("gemini-3*",), thinking="level", levels=_GEMINI_LEVELS, can_disable=False, call_ids=True),
    ProfileRow(("gemini-2.5-pro*",), min_budget=128, can_disable=False),
    ProfileRow(("gemini-2.5*",), thinking="budget", budgets=_GEMINI_BUDGETS),
    ProfileRow(("gemini-*",), context_window=1_048_576, tokens="ratio:o200k"),
    # Gemma, wherever Google serves it, reads no Gemini signature and validates none of its own.
    ProfileRow(("gemma-*",), own_signatures=True,
               cite="hermes-agent#36907: a gemini-3-flash signature replayed to gemma-4-31b-it is a 400"),
    # --- OpenAI --------------------------------------------------------------------------------
    ProfileRow(_OPENAI_O, context_window=200_000, prior_turns="loop", efforts=("low", "medium", "high"),
               cite='pydantic-ai cassette test_openrouter_thinking_false_on_always_on_route: o3 takes low|medium|high'),
    ProfileRow(("gpt-4.1*",), context_window=1_047_576),
    # gpt-5 / 5-mini / 5-nano take minimal..high; from 5.1 `none` replaces `minimal`; xhigh
    # from 5.2 (and on gpt-5.1-codex-max).
    ProfileRow(("gpt-5.1-codex-max*", "gpt-5.[2-9]*", "gpt-6*"), efforts=("none", "low", "medium", "high", "xhigh"),
               cite='OpenAI reasoning guide: xhigh from gpt-5.2 and gpt-5.1-codex-max'),
    ProfileRow(("gpt-5.[1-9]*",), efforts=("none", "low", "medium", "high"),
               cite="openai-agents-python#2089: 'minimal' is not supported with the 'gpt-5.1' model"),
    ProfileRow(("gpt-5", "gpt-5-*"), efforts=("minimal", "low", "medium", "high")),
    ProfileRow(("gpt-5*",), context_window=400_000),
    ProfileRow(("gpt-4o*",), context_window=128_000),
    ProfileRow(("gpt-oss*", "*.gpt-oss*"), context_window=131_072),
    ProfileRow(("gpt-4o*", "gpt-4.1*", "gpt-4.5*", "gpt-5*", *_OPENAI_O, "gpt-oss*", "chatgpt-*", "codex*",
                "computer-use*"), tokens="o200k_base"),
    ProfileRow(("gpt-4*", "gpt-3.5*", "text-embedding-3*"), tokens="cl100k_base"),
    # --- open-weight families ------------------------------------------------------------------
    # xAI: only grok-3-mini takes reasoning_effort (low | high); the others refuse the parameter.
    ProfileRow(("grok-3-mini*",), efforts=("low", "high"),
               cite='xAI: grok-3-mini takes reasoning_effort low|high'),
    ProfileRow(("grok-*",), efforts=(),
               cite='litellm PR 16265: Model grok-4-latest does not support parameter reasoningEffort'),
    ProfileRow(("grok-4*",), context_window=256_000),
    ProfileRow(("grok-3*",), context_window=131_072),
    ProfileRow(("deepseek*", "*deepseek-r1*", "*deepseek.r1*"), context_window=128_000),
    ProfileRow(("kimi-k2*",), context_window=256_000),
    ProfileRow(("qwen3*",), context_window=262_144),
    # GLM-5 / 5.1 take no reasoning_effort; 5.2 only high|max; 5.3 low..max.
    ProfileRow(("glm-5", "glm-5-*", "glm-5.1*"), efforts=()),
    ProfileRow(("glm-5.2*",), efforts=("high", "max")),
    ProfileRow(("glm-5.3*",), efforts=("low", "medium", "high", "max")),
    ProfileRow(("glm-4.5*",), context_window=128_000),
    ProfileRow(("glm-4.6*", "glm-5*"), context_window=200_000),
    ProfileRow(("minimax-m*",), context_window=1_000_000),
    ProfileRow(("*nova-2*",), thinking="level", levels=_NOVA_LEVELS),
    ProfileRow(("*mistral*", "*llama-2*", "*llama2*", "*llama-3*", "*llama3*"),
               tokens="ratio:cl100k"),
)


@lru_cache(maxsize=512)
def _resolve(key: str, rows: tuple[ProfileRow, ...]) -> Profile:
    values: dict[str, Any] = {}
    for row in rows:
        if not row.matches(key):
            continue
        for name in PROFILE_FIELDS:
            if name not in values and (v := getattr(row, name)) is not None:
                values[name] = v
        if len(values) == len(PROFILE_FIELDS):
            break
    return Profile(**values)


def profile_for(model: str, rows: Sequence[ProfileRow] = PROFILES) -> Profile:
    """The profile of ``model``: each field from the first row in ``rows`` that matches and sets it."""
    return _resolve(model_key(model), tuple(rows))


def matching_rows(model: str, rows: Sequence[ProfileRow] = PROFILES) -> list[ProfileRow]:
    """Every row that applies to ``model``, in order (for ``hermes routes --explain``-style output)."""
    key = model_key(model)
    return [r for r in rows if r.matches(key)]


def example_id(glob: str) -> str:
    """An id a glob matches, for showing its family: ``[5-9]`` → ``5``, ``*`` dropped (``x`` at the end)."""
    out = re.sub(r"\[!?([^\]])[^\]]*\]", r"\1", glob).replace("?", "x")
    return out.replace("*", "") or "x"
