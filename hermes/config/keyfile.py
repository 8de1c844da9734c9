"""Keys saved with ``hermes keys set``: ``$HERMES_HOME/keys.json``, one key per route, mode 0600.

Never config.toml (which refuses keys) and never state.db: the file holds only keys, so it can
be kept out of backups and shared settings. It is written whole — a new file created 0600 in
the same directory, then one rename — so a reader sees the old keys or the new ones, and no
moment exists where the file is readable by others. A file group or others can read is refused
rather than used (its keys may have leaked; the message says how to fix it).

Read once per process while one ``stat`` says the file is unchanged: the proxy looks a key up
per request.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson

from ..core.errors import ConfigError, register_secret
from .paths import user_dir

__all__ = ["keys_path", "mask", "remove_key", "save_key", "saved_keys"]

_cache: dict[Path, tuple[tuple[int, int, int], dict[str, str]]] = {}


def keys_path(*, create: bool = False) -> Path:
    return user_dir(create=create) / "keys.json"


def saved_keys() -> dict[str, str]:
    """Route key -> saved key; empty when there is no file."""
    path = keys_path()
    try:
        st = path.stat()
    except FileNotFoundError:
        return {}
    stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    cached = _cache.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"{path} can be read by other users (mode {stat.S_IMODE(st.st_mode):04o}), so its keys "
                          "are not used", hint=f"chmod 600 {path}, and consider replacing the keys in it")
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as e:
        raise ConfigError(f"{path} is not a JSON object of keys: {e.msg}",
                          hint="`hermes keys set PROVIDER` writes it; remove the file to start again") from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ConfigError(f"{path} is not a JSON object of route names and keys",
                          hint="`hermes keys set PROVIDER` writes it; remove the file to start again")
    for value in data.values():
        register_secret(value)
    _cache[path] = (stamp, data)
    return data


def save_key(route: str, key: str) -> Path:
    """Save (or replace) ``route``'s key; the other routes' keys stay."""
    keys = {**saved_keys(), route: key}
    return _write(keys)


def remove_key(route: str) -> bool:
    """Remove ``route``'s key; False when none was saved."""
    keys = dict(saved_keys())
    if keys.pop(route, None) is None:
        return False
    _write(keys)
    return True


def _write(keys: dict[str, str]) -> Path:
    path = keys_path(create=True)
    tmp = path.with_name(f".keys.json.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(orjson.dumps(keys, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _cache.pop(path, None)
    return path


def mask(key: str) -> str:
    """Enough of a key to tell two apart, never enough to use: its last 4 characters."""
    return "****" if len(key) < 12 else f"…{key[-4:]}"
