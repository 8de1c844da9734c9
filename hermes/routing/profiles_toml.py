"""``[[model]]`` tables of ``routes.toml``: one user model-profile row each, checked field by field.

A user row has the same fields as a built-in ``models.ProfileRow`` and is searched before the
built-in rows, so it can add a family or override one fact of a known model. Errors say which
row and field; ``resolve.load_table`` adds the file and line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..config.tomlfile import check_bool, check_choice
from ..core.errors import ConfigError
from .models import PROFILE_FIELDS, THINKING_STYLES, TOKENS, ProfileRow

__all__ = ["profile_row_from_toml"]

_INT = {"min_budget", "max_tokens", "thinking_max_tokens", "context_window"}
_BOOL = {"can_disable", "thinks_unasked", "interleaved", "prefix_bound", "call_ids", "own_signatures"}
_CHOICES: Mapping[str, tuple[str, ...]] = {
    "thinking": THINKING_STYLES,
    "tokens": TOKENS,
    "prior_turns": ("all", "loop"),
    "display": ("", "summarized", "omitted"),
}


def profile_row_from_toml(raw: Any, *, source: str) -> ProfileRow:
    """One ``[[model]]`` table as a profile row; ``ConfigError`` names the offending field."""
    if not isinstance(raw, Mapping):
        raise ConfigError("each [[model]] must be a table")
    models = raw.get("models")
    if isinstance(models, str):
        models = [models]
    if not isinstance(models, list) or not models or not all(isinstance(m, str) and m for m in models):
        raise ConfigError("a [[model]] row needs 'models': a model-id glob or a list of them")
    name = models[0]
    unknown = set(raw) - set(PROFILE_FIELDS) - {"models"}
    if unknown:
        raise ConfigError(f"model {name!r}: unknown field(s) {sorted(unknown)}; "
                          f"known: {', '.join(('models', *PROFILE_FIELDS))}")
    values: dict[str, Any] = {"models": tuple(m.lower() for m in models), "source": source}
    for key, value in raw.items():
        if key != "models":
            values[key] = _value(name, key, value)
    return ProfileRow(**values)


def _value(name: str, key: str, value: Any) -> Any:
    where = f"model {name!r}: field {key!r}"
    if key in _INT:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"{where} must be a non-negative integer")
        return value
    if key in _BOOL:
        return check_bool(where, value)
    if key in _CHOICES:
        return check_choice(where, value, _CHOICES[key])
    if key == "budgets":
        if not isinstance(value, Mapping) or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value.values()):
            raise ConfigError(f"{where} must be a table of effort = token count")
        return dict(value)
    if key == "levels":
        if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
            raise ConfigError(f"{where} must be a table of effort = level name")
        return dict(value)
    if key == "efforts":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where} must be a list of effort names")
        return tuple(value)
    raise ConfigError(f"{where} is not supported")  # pragma: no cover - guarded by PROFILE_FIELDS
