"""One token estimator for every part of a planned request.

The preflight check (is this request over the route's context budget?) and compaction's tail
walk (how much of the history fits?) must agree to the token: if they did not, a compaction
could leave a history that the next preflight still finds too big, and compact again, forever.
So both price a history the same way — through :func:`plan_costs` — and
both price the *plan* (``plan_replay``'s output), never the stored history: a part the route
will not receive (a foreign signature, an earlier turn's thinking on a strip route, anything
before the latest checkpoint) is not in the plan, so it costs nothing automatically.

Pricing, per part:

* readable text (user/assistant text, readable reasoning, tool arguments and results,
  checkpoint summaries): the real ``bpe_openai`` encoding on OpenAI-family routes (see
  :func:`basis_for`), otherwise a small linear model calibrated against ``bpe_openai`` on
  English, code, markdown, JSON, CJK and other scripts (:data:`FAMILIES`); long base64-looking
  runs inside text are priced as blobs on that path;
* opaque blobs (signatures, redacted thinking, encrypted items, Gemini thought signatures,
  Copilot envelopes): ``ceil(len / 1.4)`` — base64 is ~0.7 tokens per character, not 0.25;
* fixed overheads per message and per part (role markers, ids, JSON framing).

The estimate learns from usage: after a request, the provider's reported prompt tokens divided
by the raw estimate of that request's plan gives a per-(provider, host, model) factor, kept in
the capability ledger as ``token_factor = {"factor": f, "basis": VERSION}``. A factor with
another basis is ignored (the pricing changed under it).

Why one module of ~450 lines: pricing, the families' calibration and the plan walk are one
fact — a token as both the preflight and compaction count it — and splitting them would let
the two callers drift apart again.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..core.messages import Compaction, Message, Reasoning, Text, ToolCall, ToolResult
from ..replay import Learned, PlannedMessage, ReplayPlan, Settings, plan_replay
from ..routing.resolve import Resolved
from ..wire import ToolSpec

if TYPE_CHECKING:
    from ..store import SessionStore

__all__ = [
    "BLOB_CHARS_PER_TOKEN",
    "FACTOR_KIND",
    "FAMILIES",
    "REQUEST_BASE",
    "VERSION",
    "Basis",
    "TextModel",
    "basis_for",
    "count_blob",
    "count_text",
    "estimate_history",
    "estimate_plan",
    "message_cost",
    "observe_usage",
    "plan_costs",
    "prompt_tokens",
    "raw_plan_tokens",
    "token_factor",
    "tools_cost",
]

VERSION = "est-2"
"""Basis version of the pricing below; change it whenever a constant changes so that learned
factors (which correct *this* pricing) are dropped."""
FACTOR_KIND = "token_factor"
BLOB_CHARS_PER_TOKEN = 1.4
"""Measured with bpe_openai on random bytes: base64 is 1.39 chars/token (cl100k), 1.47 (o200k)."""

REQUEST_BASE = 3
"""Reply priming (``<|start|>assistant<|message|>``)."""
MESSAGE_OVERHEAD = 4
"""Role and separators of one message."""
TOOL_CALL_OVERHEAD = 8
"""Call id, type, name framing."""
TOOL_RESULT_OVERHEAD = 6
REASONING_OVERHEAD = 4
COMPACTION_OVERHEAD = 8
"""The wires' "Summary of the conversation so far" prefix."""
TOOL_SPEC_OVERHEAD = 8
LEARN_WEIGHT = 0.7
"""EMA weight of the newest observation: a first observation is taken whole; after three the
factor is within a few per cent of a steady ratio."""


@dataclass(frozen=True, slots=True)
class TextModel:
    """Tokens ≈ a linear function of cheap counts, fitted (least squares) against one encoding.

    ``bench/estimate.py --calibrate`` refits these against the installed ``bpe_openai``.
    """

    name: str
    words: float
    """Per run of ASCII letters."""
    digits: float
    """Per ASCII digit."""
    punct: float
    """Per run (≤ 8) of one repeated ASCII punctuation character."""
    newlines: float
    space_runs: float
    """Per run of two or more spaces (indentation)."""
    cjk: float
    """Per Han / kana / hangul / full-width character."""
    other: float
    """Per other non-ASCII character."""
    long_word: float = 0.4
    """Per letter beyond the 15th of a letter run: BPE splits long runs (identifiers, hashes,
    ``yyyy…``) into 2-4 letter pieces, which the per-word count alone would miss."""


FAMILIES: Mapping[str, TextModel] = {
    # Fitted on ~1,100 chunks of 3,000 chars (licences, stdlib docstrings, stdlib Python, JS,
    # markdown, JSON) plus CJK / Cyrillic / accented / emoji samples. Per-category sum error
    # vs the encoding: English -3 %, code +2 %, markdown -2..-4 %, JSON -1 %, CJK 0 %.
    "o200k": TextModel("o200k", 1.031, 0.680, 0.734, 1.182, 0.013, 0.707, 0.278),
    "cl100k": TextModel("cl100k", 1.036, 0.683, 0.709, 1.004, 0.285, 1.084, 0.526),
}
"""Other providers' tokenizers cannot be run offline: a route uses the family whose vocabulary
size is closest (Claude ≈ 65k → cl100k; Gemini, DeepSeek, Qwen, Kimi ≥ 150k → o200k). The
usage factor learns the remaining difference per model."""


@dataclass(frozen=True, slots=True)
class Basis:
    """How one route prices readable text: a real encoding, or a fitted text model."""

    encoding: str | None
    model: TextModel

    @property
    def label(self) -> str:
        return self.encoding or f"ratio:{self.model.name}"

    def __hash__(self) -> int:
        """Part of ``count_text``'s cache key, hashed on every call: one string, not the text
        model's nine floats (equal bases still hash equal)."""
        return hash(self.encoding or self.model.name)


_BASES: Mapping[str, Basis] = {
    "o200k_base": Basis("o200k_base", FAMILIES["o200k"]),
    "cl100k_base": Basis("cl100k_base", FAMILIES["cl100k"]),
    "ratio:o200k": Basis(None, FAMILIES["o200k"]),
    "ratio:cl100k": Basis(None, FAMILIES["cl100k"]),
}
"""The pricing bases a profile or route can name (``models.TOKENS``)."""


def basis_for(resolved: Resolved) -> Basis:
    """The pricing basis for a route and model: the model profile's ``tokens`` (an OpenAI model
    is priced by its real encoding on any route that serves it), else the route's default,
    else the calibrated text model of the larger vocabulary family."""
    return _BASES.get(resolved.profile.tokens or resolved.route.tokens, _BASES["ratio:o200k"])


# ----------------------------------------------------------------------------- text


_CHUNK = 40_000
"""bpe_openai refuses inputs of 1M chars or 200k tokens; 40k chars stays under both even at
four tokens per character."""


@lru_cache(maxsize=4)
def _encoding(name: str) -> Any:
    import bpe_openai

    return bpe_openai.get_encoding(name)


def _bpe_count(text: str, name: str) -> int:
    enc = _encoding(name)
    if len(text) <= _CHUNK:
        return len(enc.encode_ordinary(text))
    total, i = 0, 0
    while i < len(text):
        end = min(i + _CHUNK, len(text))
        if end < len(text):  # cut at whitespace so no word is split across chunks
            cut = max(text.rfind(" ", i + _CHUNK // 2, end), text.rfind("\n", i + _CHUNK // 2, end))
            end = cut + 1 if cut > i else end
        total += len(enc.encode_ordinary(text[i:end]))
        i = end
    return total


_B64_RUN = re.compile(r"[A-Za-z0-9+/_-]{64,}={0,2}")
_WORD = re.compile(r"[A-Za-z]+")
_LONG_WORD = re.compile(r"[A-Za-z]{16,}")
_DIGIT = re.compile(r"[0-9]")
_PUNCT_RUN = re.compile(r"([!-/:-@\[-`{-~])\1{0,7}")
_SPACE_RUN = re.compile(r" {2,}")
_CJK = re.compile(r"[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


_LETTERS = bytes(range(65, 91)) + bytes(range(97, 123))
_PUNCT = bytes(c for c in range(33, 127) if not chr(c).isalnum())
_NOT_PUNCT = bytes(c for c in range(256) if c not in _PUNCT)
_PUNCT_ONE = bytes(1 if c in _PUNCT else 0 for c in range(256))
_ZERO_ONE = bytes([1] + [0] * 255)
_AS_WORDS = bytes(97 if c in _LETTERS else 32 for c in range(256))
"""Letters → ``a``, everything else → space: runs of ``a`` are the ``_WORD`` matches."""
_AS_B64 = bytes(97 if c in _LETTERS or chr(c) in "0123456789+/_-" else 32 for c in range(256))
_DIGITS = b"0123456789"


def _ascii_count(text: str, m: TextModel) -> int | None:
    """``_model_count`` of an ASCII text without building a match list per regex: the same
    counts from C byte operations (``translate`` / ``count`` / ``in``). None where a rarer
    pattern is present (a 64-char base64 run, a 16-letter word, repeated punctuation, double
    spaces): the regex path then counts exactly those."""
    b = text.encode("ascii")
    words = b.translate(_AS_WORDS)
    if (len(b) >= 64 and b"a" * 64 in b.translate(_AS_B64)) or b"a" * 16 in words:
        return None
    if b"  " in b:
        return None
    marks = b.translate(None, _NOT_PUNCT)  # the punctuation characters, in order
    punct = len(marks)
    if punct > 1 and b"\x00" in (int.from_bytes(marks[:-1], "big") ^ int.from_bytes(marks[1:], "big")).to_bytes(
            punct - 1, "big"):
        # A run of one punctuation mark counts once per 8: subtract repeats. A repeat in the
        # text is two equal neighbours among its marks too, so prose whose marks never repeat
        # skips the search through the whole text.
        head = b[:-1]
        same = (int.from_bytes(head, "big") ^ int.from_bytes(b[1:], "big")).to_bytes(len(head), "big")
        repeat = (int.from_bytes(head.translate(_PUNCT_ONE), "big")
                  & int.from_bytes(same.translate(_ZERO_ONE), "big")).to_bytes(len(head), "big")
        if b"\x01" * 8 in repeat:
            return None  # a run longer than 8: the regex splits it
        punct -= repeat.count(1)
    n_words = words.count(b" a") + (words[:1] == b"a")
    digits = len(b) - len(b.translate(None, _DIGITS))
    est = m.words * n_words + m.digits * digits + m.punct * punct + m.newlines * b.count(b"\n")
    return math.ceil(est)


def _model_count(text: str, m: TextModel) -> int:
    if text.isascii():
        fast = _ascii_count(text, m)
        if fast is not None:
            return fast
    return _regex_count(text, m)


def _regex_count(text: str, m: TextModel) -> int:
    """The text model's definition: one regex per feature (``_ascii_count`` must agree)."""
    blob_tokens = 0
    if len(text) >= 64 and _B64_RUN.search(text):
        def _blob(match: re.Match[str]) -> str:
            nonlocal blob_tokens
            s = match.group()
            if not (any(c.isdigit() for c in s) and any(c.isupper() for c in s) and any(c.islower() for c in s)):
                return s  # a long identifier or a rule line, not a blob
            blob_tokens += count_blob(s)
            return " "
        text = _B64_RUN.sub(_blob, text)
    non_ascii = len(_NON_ASCII.findall(text)) if not text.isascii() else 0
    cjk = len(_CJK.findall(text)) if non_ascii else 0
    est = (m.words * len(_WORD.findall(text)) + m.digits * len(_DIGIT.findall(text))
           + m.punct * len(_PUNCT_RUN.findall(text)) + m.newlines * text.count("\n")
           + m.space_runs * len(_SPACE_RUN.findall(text)) + m.cjk * cjk + m.other * (non_ascii - cjk))
    if len(text) >= 16:
        est += m.long_word * sum(len(w) - 15 for w in _LONG_WORD.findall(text))
    return blob_tokens + math.ceil(est)


@lru_cache(maxsize=65_536)
def count_text(text: str, basis: Basis) -> int:
    """Tokens of readable text on ``basis`` (cached: a history is priced many times)."""
    if not text:
        return 0
    if basis.encoding is not None:
        return _bpe_count(text, basis.encoding)
    return _model_count(text, basis.model)


def count_blob(blob: str) -> int:
    """Tokens of an opaque base64-ish blob: ``ceil(len / 1.4)``."""
    return math.ceil(len(blob) / BLOB_CHARS_PER_TOKEN)


# ----------------------------------------------------------------------------- plan


def _value_cost(value: Any, basis: Basis, key: str = "") -> int:
    """A JSON value sent as a carrier field: readable strings as text, opaque ones as blobs."""
    if isinstance(value, str):
        opaque = key in ("signature", "data", "encrypted_content", "thought_signature", "reasoning_opaque") or (
            len(value) >= 64 and " " not in value)
        return count_blob(value) if opaque else count_text(value, basis)
    if isinstance(value, Mapping):
        return sum(1 + _value_cost(v, basis, str(k)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(1 + _value_cost(v, basis, key) for v in value)
    return 1


def _part_cost(p: Any, basis: Basis) -> int:
    match p:
        case Text():
            return count_text(p.text, basis)
        case ToolCall():
            return TOOL_CALL_OVERHEAD + count_text(p.name, basis) + count_text(p.arguments, basis)
        case ToolResult():
            return TOOL_RESULT_OVERHEAD + count_text(p.content, basis)
        case Compaction():
            return COMPACTION_OVERHEAD + count_text(p.summary, basis)
        case Reasoning():
            # The planner keeps a Reasoning part only where it goes as a native block; a blob
            # it may not send has already been stripped (``blob=None``).
            cost = REASONING_OVERHEAD + count_text(p.text, basis)
            if p.blob is not None:
                cost += count_blob(p.blob)
            return cost
    return 0


def message_cost(pm: PlannedMessage, basis: Basis) -> int:
    """Raw tokens of one planned message: the unit both preflight and tail walk add up."""
    cost = MESSAGE_OVERHEAD
    for p in pm.parts:
        cost += _part_cost(p, basis)
    for k, v in pm.fields.items():  # as ``_value_cost`` prices a mapping, without copying it
        cost += 1 + _value_cost(v, basis, str(k))
    for sig in pm.tool_signatures.values():
        cost += count_blob(sig)
    if pm.thought_signature:
        cost += count_blob(pm.thought_signature)
    return cost


def plan_costs(plan: ReplayPlan) -> list[int]:
    """Raw cost of each planned message, in plan order (``plan.messages[i].index`` says which
    stored message it is; the plan's kept runs carry their own, summed)."""
    basis = basis_for(plan.target)
    return [message_cost(pm, basis) for pm in plan.messages]


def tools_cost(tools: Sequence[ToolSpec], basis: Basis) -> int:
    import orjson

    return sum(TOOL_SPEC_OVERHEAD + count_text(t.name, basis) + count_text(t.description, basis)
               + count_text(orjson.dumps(dict(t.parameters)).decode(), basis) for t in tools)


def raw_plan_tokens(plan: ReplayPlan, *, tools: Sequence[ToolSpec] = (), costs: Sequence[int] | None = None) -> int:
    """The uncorrected estimate of a plan: what the usage factor is learned against (``costs``:
    ``plan_costs(plan)`` when the caller already has them)."""
    return (REQUEST_BASE + tools_cost(tools, basis_for(plan.target)) + sum(r.cost for r in plan.kept)
            + sum(plan_costs(plan) if costs is None else costs))


def estimate_plan(plan: ReplayPlan, *, tools: Sequence[ToolSpec] = (), factor: float = 1.0) -> int:
    """Prompt tokens of the request ``plan`` renders, corrected by the learned ``factor``."""
    return math.ceil(raw_plan_tokens(plan, tools=tools) * factor)


def estimate_history(
    history: Sequence[Message],
    resolved: Resolved,
    *,
    learned: Learned = Learned(),
    settings: Settings = Settings(),
    tools: Sequence[ToolSpec] = (),
    factor: float = 1.0,
) -> int:
    """Plan ``history`` for ``resolved`` (exactly as the request will be), then price the plan."""
    return estimate_plan(plan_replay(history, resolved, learned, settings), tools=tools, factor=factor)


# ----------------------------------------------------------------------------- usage feedback


def prompt_tokens(usage: Mapping[str, Any]) -> int | None:
    """Input tokens a provider reported, whatever its spelling; cache reads and writes that a
    provider reports *beside* input tokens (Anthropic, Bedrock) are added back."""
    for key in ("input_tokens", "prompt_tokens", "inputTokens", "promptTokenCount"):
        v = usage.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            extra = 0
            for side in ("cache_read_input_tokens", "cache_creation_input_tokens",
                         "cacheReadInputTokens", "cacheWriteInputTokens"):
                x = usage.get(side)
                if isinstance(x, int) and not isinstance(x, bool):
                    extra += x
            return v + extra
    return None


def token_factor(store: SessionStore, resolved: Resolved) -> float:
    """The learned factor for this (provider, host, model), 1.0 if none or of another basis."""
    if store is None:
        return 1.0
    k = resolved.key
    value = store.capabilities(k.provider, k.host, k.model).get(FACTOR_KIND)
    if isinstance(value, Mapping) and value.get("basis") == VERSION:
        f = value.get("factor")
        if isinstance(f, int | float) and 0.05 <= f <= 20:
            return float(f)
    return 1.0


def observe_usage(store: SessionStore, resolved: Resolved, raw: int, usage: Mapping[str, Any]) -> float | None:
    """Correct the factor with one request's reported prompt tokens; returns the new factor.

    The first observation (or the first under a new basis) is taken whole; later ones move
    the factor ``LEARN_WEIGHT`` of the way, so one odd request cannot swing it far.
    """
    reported = prompt_tokens(usage)
    if store is None or reported is None or reported <= 0 or raw <= 0:
        return None
    k = resolved.key
    old = store.capabilities(k.provider, k.host, k.model).get(FACTOR_KIND)
    ratio = reported / raw
    if isinstance(old, Mapping) and old.get("basis") == VERSION and isinstance(old.get("factor"), int | float):
        n = int(old.get("n", 1)) if isinstance(old.get("n"), int) else 1
        factor = (1 - LEARN_WEIGHT) * float(old["factor"]) + LEARN_WEIGHT * ratio
    else:
        n, factor = 0, ratio
    factor = round(min(20.0, max(0.05, factor)), 4)
    store.learn(k.provider, k.host, k.model, FACTOR_KIND,
                {"factor": factor, "basis": VERSION, "n": n + 1},
                {"reported": reported, "estimated": raw})
    return factor
