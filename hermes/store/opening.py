"""Opening ``state.db`` safely: create 0600, refuse newer or foreign files, then migrate.

The order matters because a refused file must stay byte-for-byte untouched:

1. create the file (mode 0600) only if it does not exist — SQLite gives its ``-wal`` and
   ``-shm`` companions the database file's permissions;
2. *read* ``_migrations`` (this is also where a non-database file fails) and refuse names this
   code does not know — before anything that writes, even ``PRAGMA journal_mode``;
3. switch to WAL and apply pending migrations, each in its own ``BEGIN IMMEDIATE``
   transaction that re-reads ``_migrations`` so two processes opening a fresh file at once
   apply every migration exactly once.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from ..core.errors import StoreError
from .migrations import MIGRATIONS

__all__ = ["explain", "open_db"]

_HINT_PERM = "check the permissions of the directory, or point HERMES_HOME at a writable one"


_MIGRATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS _migrations (
    name    TEXT PRIMARY KEY,  -- migration function name (hermes.store.migrations), never reused
    applied REAL NOT NULL      -- unix seconds when it was applied
)"""


def _create(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    except OSError as e:
        raise StoreError(f"cannot create {path}: {e.strerror or e}", hint=_HINT_PERM) from None
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        pass  # another process created it between our check and open: fine
    except OSError as e:
        raise StoreError(f"cannot create {path}: {e.strerror or e}", hint=_HINT_PERM) from None


def _applied(c: sqlite3.Connection) -> list[str]:
    """Names recorded in ``_migrations`` (empty for a fresh file); a pure read."""
    has = c.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
    ).fetchone()
    if not has:
        return []
    return [r[0] for r in c.execute("SELECT name FROM _migrations ORDER BY rowid")]


def _refuse_newer(path: Path, applied: list[str]) -> None:
    known = {m.__name__ for m in MIGRATIONS}
    unknown = [name for name in applied if name not in known]
    if unknown:
        raise StoreError(
            f"{path} was written by a newer Hermes (migration {unknown[0]}); upgrade hermes",
            hint="nothing was changed; upgrade hermes or point HERMES_HOME elsewhere",
        )


def _migrate(c: sqlite3.Connection) -> None:
    for fn in MIGRATIONS:
        c.execute("BEGIN IMMEDIATE")
        try:
            c.execute(_MIGRATIONS_TABLE)
            done = c.execute("SELECT 1 FROM _migrations WHERE name = ?", (fn.__name__,)).fetchone()
            if not done:
                fn(c)
                c.execute(
                    "INSERT INTO _migrations (name, applied) VALUES (?, ?)", (fn.__name__, time.time())
                )
            c.execute("COMMIT")
        except BaseException:
            if c.in_transaction:
                c.execute("ROLLBACK")
            raise


def _switch_to_wal(c: sqlite3.Connection, timeout_s: float) -> str:
    """``PRAGMA journal_mode = WAL``, retried: the switch needs a moment alone with the file,
    and busy_timeout does not cover it when several processes open a fresh file at once."""
    deadline = time.monotonic() + timeout_s
    delay = 0.005
    while True:
        try:
            mode = str(c.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) and "busy" not in str(e):
                raise
            mode = "locked"
        if mode.lower() == "wal" or time.monotonic() > deadline:
            return mode
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def explain(e: BaseException, path: Path) -> str:
    """SQLite's message, with the cause said plainly when the disk is full: SQLite reports a
    failed write on a full disk as "database or disk is full" or just "disk I/O error"."""
    text = str(e)
    if "disk is full" in text or "disk I/O error" in text:
        try:
            st = os.statvfs(path.parent)
            free = st.f_bavail * st.f_frsize
        except OSError:
            free = -1
        if "disk is full" in text or 0 <= free < 1 << 20:
            return f"{text}: the disk holding {path.parent} is full ({max(free, 0) // 1024} KiB free)"
    if "readonly database" in text:
        return f"{text}: {path} is on a read-only file system or not writable"
    return text


def _open_readonly(path: Path) -> sqlite3.Connection:
    """``path`` for reading only (a read-only ``HERMES_HOME``): ``mode=ro``, or ``immutable``
    when SQLite cannot even create its shared-memory file next to a WAL database."""
    from urllib.parse import quote

    last: Exception | None = None
    for flags in ("mode=ro", "immutable=1"):
        try:
            c = sqlite3.connect(f"file:{quote(str(path))}?{flags}", uri=True, isolation_level=None,
                                check_same_thread=False)
            applied = _applied(c)
        except sqlite3.Error as e:
            last = e
            continue
        _refuse_newer(path, applied)
        if len(applied) < len(MIGRATIONS):
            c.close()
            raise StoreError(f"{path} needs an upgrade, but it is read-only",
                             hint="open it once with write access to upgrade it")
        return c
    raise StoreError(f"cannot open {path} read-only: {last}", hint=_HINT_PERM)


def _writable(path: Path) -> bool:
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def open_db(path: Path, *, timeout_s: float = 10.0) -> sqlite3.Connection:
    """Open, check and migrate ``path``; every failure is a ``StoreError`` naming the path.

    A database that exists but cannot be written (read-only ``HERMES_HOME``, read-only
    mount) is opened read-only: listing and showing sessions work, writing fails with an
    error that says why."""
    if not path.exists():
        _create(path)
    elif not _writable(path):
        return _open_readonly(path)
    try:
        c = sqlite3.connect(
            str(path), timeout=timeout_s, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as e:
        raise StoreError(f"cannot open {path}: {e}", hint=_HINT_PERM) from None
    try:
        c.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
        c.execute("PRAGMA foreign_keys = ON")
        try:
            applied = _applied(c)
        except sqlite3.DatabaseError as e:
            if "not a database" in str(e) or "malformed" in str(e):
                raise StoreError(
                    f"{path} is not a Hermes state database ({e})",
                    hint="move the file aside; Hermes never overwrites it",
                ) from None
            raise
        _refuse_newer(path, applied)
        mode = _switch_to_wal(c, timeout_s)
        if str(mode).lower() != "wal":
            raise StoreError(f"cannot switch {path} to WAL mode (got {mode!r})", hint=_HINT_PERM)
        c.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: a killed process loses nothing committed
        if len(applied) < len(MIGRATIONS):
            _migrate(c)
        return c
    except StoreError:
        c.close()
        raise
    except sqlite3.Error as e:
        c.close()
        raise StoreError(f"cannot open {path}: {explain(e, path)}", hint=_HINT_PERM) from None
