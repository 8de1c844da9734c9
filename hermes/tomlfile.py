"""Reading a user's TOML file (config.toml, routes.toml) with errors that name file and line."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from .errors import ConfigError

__all__ = ["check_bool", "check_choice", "read_toml"]


def read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    """(source text, parsed data); any failure is a ``ConfigError`` starting ``PATH:LINE:``."""
    try:
        src = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}:1: cannot read: {e}") from None
    try:
        return src, tomllib.loads(src)
    except RecursionError:  # tomllib recurses per nesting level: ``a=[[[[...`` exhausts the stack
        raise ConfigError(f"{path}:1: invalid TOML: nested too deeply") from None
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise ConfigError(f"{path}:{m.group(1) if m else 1}: invalid TOML: {e}") from None


def check_bool(where: str, value: Any) -> bool:
    """``value`` if it is a TOML boolean, else a ``ConfigError`` naming ``where``."""
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false")
    return value


def check_choice(where: str, value: Any, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices``, else a ``ConfigError`` listing them."""
    if value not in choices:
        raise ConfigError(f"{where} must be one of {', '.join(choices)}, not {value!r}")
    return str(value)
