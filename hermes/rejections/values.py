"""Value lessons: a 4xx that names a request parameter and refuses its *value*, read into a
rule, and the rule applied to the next request body. Pure.

The vocabulary is built from real refusals (quoted in docs/rejections.md): OpenAI's
``param`` + ``unsupported_value`` / ``invalid_value`` records (``Supported values are: 'none',
'low', 'medium', and 'high'.`` when it lists them; ``Your organization must be verified to
generate reasoning summaries`` when it does not), xAI's ``does not support parameter
reasoningEffort`` and Gemini's ``Thinking level MEDIUM is not supported for this model``. Only
the thinking parameters of ``PARAMS`` are ever learned: a value lesson never touches a
replayed reasoning carrier, and the seed's field rules stay in ``vocabulary``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["PARAMS", "ValueRule", "apply_values", "refused_value"]

PARAMS: Mapping[str, str] = {
    "reasoning.effort": "reasoning.effort", "reasoning_effort": "reasoning_effort",
    "reasoningeffort": "reasoning_effort", "reasoning.summary": "reasoning.summary",
    "thinkinglevel": "generationConfig.thinkingConfig.thinkingLevel",
}
"""Parameter names as errors spell them (lower case) → the body path they refuse."""
_RANK = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
_QUOTED = re.compile(r"'([^']*)'")
_SUPPORTED = re.compile(r"supported values are:?\s*(.*)", re.I)
_REFUSED = re.compile(r"unsupported value:\s*'([^']*)'", re.I)
_XAI = re.compile(r"does not support parameter (reasoningEffort)", re.I)
_GEMINI = re.compile(r"thinking level (\w+) is not supported for this model", re.I)


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


def _records(data: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(data, Mapping):
        yield data
        for v in data.values():
            yield from _records(v)
    elif isinstance(data, list):
        for v in data:
            yield from _records(v)


def refused_value(status: int, body_text: str) -> ValueRule | None:
    """The rule a refusal teaches about a thinking parameter's value, or None. Pure."""
    if not 400 <= status < 500 or status in (401, 403, 408, 413, 429):
        return None
    try:
        data: Any = orjson.loads(body_text)
    except orjson.JSONDecodeError:
        data = None
    for rec in _records(data):
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
    return None


def _nearest(value: str, rule: ValueRule) -> str | None:
    """The allowed value nearest ``value`` on the effort scale (ties: the higher), or None."""
    if value not in _RANK:
        return None
    pool = [v for v in (rule.allowed or _RANK) if v in _RANK and v not in rule.refused]
    if not pool:
        return None
    at = _RANK.index(value)
    return min(pool, key=lambda v: (abs(_RANK.index(v) - at), -_RANK.index(v)))


def apply_values(body: dict[str, Any], rules: Sequence[ValueRule]) -> dict[str, Any]:
    """``body`` with each learned rule applied: a refused value replaced by the nearest allowed
    one, or its parameter left out. Top-level parameters only; never message content."""
    for rule in rules:
        *parents, name = rule.path.split(".")
        holder: Any = body
        for p in parents:
            holder = holder.get(p) if isinstance(holder, dict) else None
        if not isinstance(holder, dict) or name not in holder:
            continue
        value = str(holder[name]).lower()
        if not rule.omit and (value in rule.allowed or (not rule.allowed and value not in rule.refused)):
            continue
        nearest = None if rule.omit else _nearest(value, rule)
        if nearest is None:
            del holder[name]
        else:
            holder[name] = nearest
    return body
