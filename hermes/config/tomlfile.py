"""Reading a user's TOML file (config.toml, routes.toml) with errors that name file and line,
and keeping what was parsed from it for the rest of the process (``read_once``)."""

from __future__ import annotations

import hashlib
import re
import time
import tomllib
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

from ..core.errors import ConfigError

__all__ = ["check_bool", "check_choice", "read_once", "read_toml"]

T = TypeVar("T")

_RACY_NS = 2_000_000_000
"""A file written this soon before it was read may change again without its stamps changing
(timestamps move in ticks: a jiffy on Linux, 2 s on FAT): its content is checked instead."""
_MEMO: dict[tuple[str, Hashable], tuple[tuple[int, int, int, int], bytes | None, Any]] = {}


def read_once(path: Path, parse: Callable[[], T], *, key: Hashable = None) -> T:
    """``parse()``'s result for ``path``, parsed once per process while the file stays the same.

    One ``stat`` per call decides: same inode, size, mtime and ctime → the kept result. A result
    read within ``_RACY_NS`` of the file's mtime is confirmed by content hash instead (git's
    racy-clean rule), so an edit in the same timestamp tick is still seen. A parse that fails is
    not kept (the error is raised again next time); a file that cannot be stat'ed is parsed.
    """
    try:
        st = path.stat()
    except OSError:
        return parse()
    stamp = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    slot = (str(path), key)
    hit = _MEMO.get(slot)
    if hit is not None and hit[0] == stamp:
        if hit[1] is None:
            return hit[2]  # type: ignore[no-any-return]
        if _digest(path) == hit[1]:
            if time.time_ns() - st.st_mtime_ns >= _RACY_NS:  # settled: the stamps suffice from now on
                _MEMO[slot] = (stamp, None, hit[2])
            return hit[2]  # type: ignore[no-any-return]
    racy = time.time_ns() - st.st_mtime_ns < _RACY_NS
    digest = _digest(path) if racy else None  # before parsing: a change in between parses again
    value = parse()
    if len(_MEMO) >= 32:
        _MEMO.clear()
    _MEMO[slot] = (stamp, digest, value)
    return value


def _digest(path: Path) -> bytes | None:
    try:
        return hashlib.sha256(path.read_bytes()).digest()
    except OSError:
        return None


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
