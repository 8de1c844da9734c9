"""Claude model facts the Anthropic and Bedrock emulators enforce: which models cannot switch
thinking off, which take only adaptive thinking, which think when ``thinking`` is omitted.

Pure data and pure checks, read by ``anthropic_rules`` and ``bedrock`` over the model id as the
request names it (direct, Vertex and Bedrock spellings alike). Sources, in docs/emulators.md:
Anthropic's "What's new in Claude Opus 5.5 / Fable 5.1" pages (the refusal of
``thinking.type.disabled``, quoted below, and Sonnet 5.5's ``between_tools`` floor), the Opus 5
migration guide (an omitted ``thinking`` is adaptive thinking on) and the Bedrock adaptive
thinking guide (``claude-mythos-preview`` takes adaptive thinking only).
"""

from __future__ import annotations

import re

__all__ = ["ADAPTIVE_ONLY", "BINDING_BETA", "INTERLEAVED_BETA", "MANDATORY", "OMITS", "PREFIX_BOUND", "THINKS_UNASKED",
           "refusal", "thinks"]

MANDATORY = re.compile(r"claude-(opus-5-5|fable-5-1|sonnet-5-5)(?![0-9])")
"""Models whose thinking cannot be switched off."""
ADAPTIVE_ONLY = re.compile(r"claude-(opus|sonnet|haiku)-4-(7|8|9)|claude-[a-z]+-[5-9](?![0-9])|claude-mythos")
"""Models that refuse a manual ``budget_tokens`` thinking request."""
THINKS_UNASKED = re.compile(r"claude-opus-[5-9](?![0-9])")
"""Models that think adaptively when the request omits ``thinking``."""
OMITS = re.compile(r"claude-opus-4-(7|8|9)|claude-opus-[5-9](?![0-9])|claude-mythos|claude-fable")
"""Models whose thinking ``display`` defaults to ``omitted`` (empty thinking text, a valid
signature): Anthropic's "What's new in Claude Opus 4.7" (Mythos Preview and Fable likewise)."""
PREFIX_BOUND = re.compile(r"claude-(fable|mythos)-5-[1-9]|claude-(opus|sonnet|haiku)-5-5")
"""Models that bind each thinking block to the exact prefix before it (system, tools, earlier
messages): Anthropic's "Fix a thinking block bound to a different conversation" page."""
BINDING_BETA = "thinking-binding-controls-2026-08-01"
INTERLEAVED_BETA = "interleaved-thinking-2025-05-14"
_USE = 'Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.'


def refusal(model: str, kind: object) -> str | None:
    """The 400 message a request asking ``thinking.type = kind`` of ``model`` gets, or None."""
    m = model.lower()
    if kind == "disabled" and MANDATORY.search(m):
        return f'"thinking.type.disabled" is not supported for this model. {_USE}'
    if kind == "enabled" and ADAPTIVE_ONLY.search(m):
        return f'"thinking.type.enabled" is not supported for this model. {_USE}'
    if kind == "between_tools" and "sonnet-5-5" not in m:
        return f'"thinking.type.between_tools" is not supported for this model. {_USE}'
    return None


def thinks(model: str, kind: object) -> bool:
    """Whether ``model`` thinks for a request whose ``thinking.type`` is ``kind`` (None: omitted)."""
    if kind in ("enabled", "adaptive", "between_tools"):
        return True
    return kind is None and bool(THINKS_UNASKED.search(model.lower()))
