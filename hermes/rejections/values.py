"""Value lessons: a 4xx that names a request parameter and refuses its *value*, read into a
rule, and the rule applied to the next request body. Pure.

The vocabulary is built from real refusals (quoted in docs/rejections.md): OpenAI's
``param`` + ``unsupported_value`` / ``invalid_value`` records (``Supported values are: 'none',
'low', 'medium', and 'high'.`` when it lists them; ``Your organization must be verified to
generate reasoning summaries`` when it does not), xAI's ``does not support parameter
reasoningEffort``, Gemini's ``Thinking level MEDIUM is not supported for this model``,
Anthropic's ``"thinking.type.disabled" is not supported for this model. Use
"thinking.type.adaptive"…`` and the Qwen3 servers' ``enable_thinking`` refusals (``current
model does not support parameter `enable_thinking```, ``The value of the enable_thinking
parameter is restricted to True``). Only the thinking parameters of ``PARAMS`` are ever
learned: a value lesson never touches a replayed reasoning carrier, and the seed's field rules
stay in ``vocabulary`` (whose record walker, gateway-unwrapping included, this shares).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

from ..routing.models import Profile
from .vocabulary import expand, records

__all__ = ["PARAMS", "ValueRule", "apply_values", "refused_value", "with_lessons"]

PARAMS: Mapping[str, str] = {
    "reasoning.effort": "reasoning.effort", "reasoning_effort": "reasoning_effort",
    "reasoningeffort": "reasoning_effort", "reasoning.summary": "reasoning.summary",
    "thinkinglevel": "generationConfig.thinkingConfig.thinkingLevel",
    "thinking.type": "thinking.type", "enable_thinking": "enable_thinking",
}
"""Parameter names as errors spell them (lower case) → the body path they refuse."""
_RANK = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
_QUOTED = re.compile(r"'([^']*)'")
_SUPPORTED = re.compile(r"supported values are:?\s*(.*)", re.I)
_REFUSED = re.compile(r"unsupported value:\s*'([^']*)'", re.I)
_XAI = re.compile(r"does not support parameter (reasoningEffort)", re.I)
_GEMINI = re.compile(r"thinking level (\w+) is not supported for this model", re.I)
_CLAUDE = re.compile(r'thinking\.type\.(\w+)[\\"]* is not supported for this model\. Use [\\"]*thinking\.type\.(\w+)',
                     re.I)
_NO_SWITCH = re.compile(r"does not support parameter `?(enable_thinking)`?", re.I)
_ONLY = re.compile(r"the value of the (enable_thinking) parameter is restricted to (true|false)", re.I)
_KEEPS = {"thinking.type": ("type", "display")}
"""Where a replaced value's siblings belong to it (a thinking type's own fields): the holder
keeps only these names."""


@dataclass(frozen=True, slots=True)
class ValueRule:
    """What one (provider, host, model) takes for one body parameter."""

    path: str
    allowed: tuple[str, ...] = ()
    """The values the error listed (empty: not listed)."""
    refused: tuple[str, ...] = ()
    omit: bool = False
    """The parameter is not supported at all (or no value of it is known to pass)."""

    def merged(self, other: ValueRule) -> ValueRule:
        return ValueRule(self.path, other.allowed or self.allowed,
                         tuple(dict.fromkeys((*self.refused, *other.refused))), self.omit or other.omit)


def refused_value(status: int, body_text: str) -> ValueRule | None:
    """The rule a refusal teaches about a thinking parameter's value, or None. Pure."""
    if not 400 <= status < 500 or status in (401, 403, 408, 413, 429):
        return None
    try:
        data: Any = expand(orjson.loads(body_text))
    except orjson.JSONDecodeError:
        data = None
    for rec in records(data):
        param, code, message = rec.get("param"), rec.get("code"), rec.get("message")
        if not (isinstance(param, str) and isinstance(message, str) and param.lower() in PARAMS
                and code in ("unsupported_value", "invalid_value")):
            continue
        path = PARAMS[param.lower()]
        listed = _SUPPORTED.search(message)
        allowed = tuple(_QUOTED.findall(listed.group(1))) if listed else ()
        refused = tuple(m.group(1) for m in [_REFUSED.search(message)] if m)
        return ValueRule(path, allowed, refused, omit=not allowed and not refused)
    if m := _XAI.search(body_text):
        return ValueRule(PARAMS[m.group(1).lower()], omit=True)
    if m := _GEMINI.search(body_text):
        return ValueRule(PARAMS["thinkinglevel"], refused=(m.group(1).lower(),))
    if m := _CLAUDE.search(body_text):
        return ValueRule("thinking.type", allowed=(m.group(2).lower(),), refused=(m.group(1).lower(),))
    if m := _NO_SWITCH.search(body_text):
        return ValueRule("enable_thinking", omit=True)
    if m := _ONLY.search(body_text):
        return ValueRule("enable_thinking", allowed=(m.group(2).lower(),))
    return None


def with_lessons(profile: Profile, rules: Sequence[ValueRule]) -> Profile:
    """``profile`` as the lessons say the model is: one that refused ``thinking.type:
    disabled`` cannot stop thinking, and its least is the type the error named — so the plan
    keeps its thinking blocks instead of sending a tool loop the server thinks through bare."""
    for rule in rules:
        if rule.path == "thinking.type" and "disabled" in rule.refused and len(rule.allowed) == 1:
            return replace(profile, can_disable=False, least={"thinking": {"type": rule.allowed[0]}})
    return profile


def _nearest(value: str, rule: ValueRule) -> str | None:
    """The allowed value nearest ``value`` on the effort scale (ties: the higher); off the
    scale, the one value the error named; else None."""
    if value not in _RANK:
        return rule.allowed[0] if len(rule.allowed) == 1 else None
    pool = [v for v in (rule.allowed or _RANK) if v in _RANK and v not in rule.refused]
    if not pool:
        return None
    at = _RANK.index(value)
    return min(pool, key=lambda v: (abs(_RANK.index(v) - at), -_RANK.index(v)))


def apply_values(body: dict[str, Any], rules: Sequence[ValueRule]) -> dict[str, Any]:
    """``body`` with each learned rule applied: a refused value replaced by the nearest allowed
    one, or its parameter left out. Top-level parameters only; never message content. ``body``
    is not changed: the objects on a changed path are copies."""
    for rule in rules:
        *parents, name = rule.path.split(".")
        chain: list[dict[str, Any]] = [body]
        for p in parents:
            nxt = chain[-1].get(p)
            if not isinstance(nxt, dict):
                break
            chain.append(nxt)
        holder = chain[-1]
        if len(chain) != len(parents) + 1 or name not in holder:
            continue
        raw = holder[name]
        value = (("true" if raw else "false") if isinstance(raw, bool) else str(raw)).lower()
        if not rule.omit and (value in rule.allowed or (not rule.allowed and value not in rule.refused)):
            continue
        nearest = None if rule.omit else _nearest(value, rule)
        changed = dict(holder)
        if nearest is None:
            del changed[name]
        else:
            if rule.path in _KEEPS:
                changed = {k: v for k, v in changed.items() if k in _KEEPS[rule.path]}
            changed[name] = (nearest == "true") if isinstance(raw, bool) else nearest
        for parent, key in zip(reversed(chain[:-1]), reversed(parents), strict=True):
            changed = {**parent, key: changed}
        body = changed
    return body
