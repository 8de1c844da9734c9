"""Reading a user's TOML file (config.toml, routes.toml) with errors that name file and line."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from .errors import ConfigError

__all__ = ["read_toml"]


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
