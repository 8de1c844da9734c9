"""Where Hermes keeps its files: everything derives from ``user_dir()``.

``$HERMES_HOME`` wins; otherwise ``~/.hermes``. Directories are created on demand with
mode 0700 because state.db and logs hold conversation content.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["config_path", "db_path", "logs_dir", "routes_path", "user_dir"]


def user_dir(*, create: bool = True) -> Path:
    raw = os.environ.get("HERMES_HOME") or str(Path.home() / ".hermes")
    path = Path(raw).expanduser()
    if create and not path.exists():
        path.mkdir(parents=True, mode=0o700, exist_ok=True)
    return path


def db_path() -> Path:
    return user_dir() / "state.db"


def config_path() -> Path:
    return user_dir(create=False) / "config.toml"


def routes_path() -> Path:
    return user_dir(create=False) / "routes.toml"


def logs_dir(*, create: bool = True) -> Path:
    path = user_dir(create=create) / "logs"
    if create:
        path.mkdir(mode=0o700, exist_ok=True)
    return path
