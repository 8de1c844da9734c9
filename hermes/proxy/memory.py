"""The proxy's reasoning memory: which assistant turn a client's message is, and what it thought.

A client that drops reasoning still sends back the visible parts of each assistant message,
so those identify it:

* a turn with tool calls by its calls — ids, names and arguments (arguments compared as JSON,
  so a client that re-serialises them with other spacing still matches; names and arguments
  too, because some routes' ids, such as Kimi's ``functions.name:0``, repeat across
  conversations);
* a turn without calls by its visible text (``<think>`` tags split off as the decoder does,
  outer whitespace ignored).

and both by a digest of the conversation before the turn (``prefixes``): what a turn shows
does not tell two conversations apart.

Memory is per **tenant**: a hash of the client's credentials and the route, so one client
never receives another's reasoning; a request without any credential has no tenant, so
nothing is recorded or restored for it. It is bounded per tenant by size (oldest recordings go first)
and by age (an expired recording is never restored, and is deleted by the next prune).

``ReasoningMemory`` is the narrow interface the proxy uses; ``SqliteMemory`` keeps it in
``state.db`` (table ``proxy_memory``, migration ``m002_proxy_memory``), ``PgMemory``
(``hermes.proxy.pgmemory``) in the same table of a PostgreSQL store, on that store's
connection pool. :func:`open_memory` picks the one that matches the session store, so the
proxy's memory lives wherever ``HERMES_DATABASE_URL`` / ``[store] url`` put the sessions.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable
from urllib.parse import parse_qsl

import orjson

from ..core.errors import HistoryError, StoreError
from ..core.messages import Message, Text, ToolCall, dumps, loads
from ..store.shared import Closing
from ..wire.chat_decode import split_think

if TYPE_CHECKING:
    from ..store import SessionStore

__all__ = [
    "Bounds",
    "Decoded",
    "ReasoningMemory",
    "SqliteMemory",
    "client_key",
    "credentials",
    "fitting",
    "message_key",
    "open_memory",
    "prefixes",
    "tenant_of",
    "turn_keys",
]

_DECODED = 4096
_AUTH_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "api-key")
_AUTH_PARAMS = frozenset({"key", "api_key", "api-key"})
"""Query parameters that carry a key (Google's API takes ``?key=``)."""


@dataclass(frozen=True, slots=True)
class Bounds:
    max_bytes: int = 32 << 20
    """Per tenant: recordings beyond this many bytes are evicted, oldest first."""
    max_age_s: float = 7 * 86400.0
    """A recording older than this is never restored."""


def credentials(headers: Mapping[str, str], query: str = "") -> list[tuple[str, str]]:
    """(name, value) of every credential a request carries: the headers and query parameters a
    route may take a key from (``Bearer``, ``x-api-key``, ``x-goog-api-key``, ``api-key``,
    Google's ``?key=``); a bare ``Bearer`` scheme without a key is none."""
    out: list[tuple[str, str]] = []
    for name in _AUTH_HEADERS:
        value = (headers.get(name) or "").strip()
        if value and not (name == "authorization" and value.lower() in ("bearer", "basic")):
            out.append((name, value))
    out.extend((f"?{name}", value.strip()) for name, value in parse_qsl(query)
               if name.lower() in _AUTH_PARAMS and value.strip())
    return out


def tenant_of(headers: Mapping[str, str], route: str, query: str = "") -> str | None:
    """The tenant of a request: sha256 over every credential it carries (``credentials``),
    each with its name, and the route. None when it carries none: such requests share
    nothing, so nothing is restored for them (two keyless clients would otherwise be one tenant).
    """
    found = credentials(headers, query)
    if not found:
        return None
    h = hashlib.sha256(b"hermes-proxy-tenant\0")
    for name, value in found:
        h.update(f"{name}\0{value}\0".encode("utf-8", "surrogatepass"))
    h.update(route.encode())
    return h.hexdigest()


def _args(arguments: Any) -> str:
    """Tool-call arguments as canonical JSON (sorted keys, no spaces); raw text if not JSON."""
    if not isinstance(arguments, str):
        return orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS).decode()
    try:
        return orjson.dumps(orjson.loads(arguments), option=orjson.OPT_SORT_KEYS).decode()
    except orjson.JSONDecodeError:
        return arguments.strip()


def _key(text: str, calls: Sequence[tuple[str, str, str]], prefix: str) -> str | None:
    if calls:
        basis: Any = ["calls", [list(c) for c in calls]]
    elif text.strip():
        basis = ["text", text.strip()]
    else:
        return None  # nothing visible identifies it
    if prefix:
        basis.append(prefix)
    return hashlib.sha256(orjson.dumps(basis)).hexdigest()[:40]


def message_key(m: Message, prefix: str = "") -> str | None:
    """Recognition key of a decoded assistant turn (as recorded from a response) that followed
    the conversation ``prefix`` (``prefixes``)."""
    calls = [(p.id, p.name, _args(p.arguments)) for p in m.parts if isinstance(p, ToolCall)]
    text = "".join(p.text for p in m.parts if isinstance(p, Text))
    return _key(text, calls, prefix)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content
                       if isinstance(p, Mapping) and p.get("type", "text") == "text")
    return ""


def _visible(msg: Mapping[str, Any], think_tags: bool) -> tuple[str, list[tuple[str, str, str]]] | None:
    """(text, calls) a client shows of an assistant message; None when malformed."""
    text = _content_text(msg.get("content"))
    if think_tags:
        text = split_think(text)[1]
    calls: list[tuple[str, str, str]] = []
    raw = msg.get("tool_calls")
    for c in raw if isinstance(raw, list) else ():
        fn = c.get("function") if isinstance(c, dict) else None  # JSON: dicts (an ABC check costs more)
        if not isinstance(fn, dict):
            return None
        calls.append((str(c.get("id") or ""), str(fn.get("name") or ""), _args(fn.get("arguments") or "")))
    return text, calls


def client_key(msg: Mapping[str, Any], *, think_tags: bool = False, prefix: str = "") -> str | None:
    """Recognition key of an assistant message as a client sends it back after the
    conversation ``prefix``; None when it has nothing visible (or is malformed)."""
    seen = _visible(msg, think_tags)
    return None if seen is None else _key(seen[0], seen[1], prefix)


def _part(m: Any, think_tags: bool) -> tuple[Any, tuple[str, list[tuple[str, str, str]]] | None]:
    """(what of message ``m`` goes into the conversation digest, or None; its visible text
    and calls when it is an assistant message)."""
    role = m.get("role") if isinstance(m, dict) else None
    if role == "assistant":
        seen = _visible(m, think_tags)
        return ["assistant", seen], seen
    if role == "user":
        return ["user", _content_text(m.get("content"))], None
    if role in ("tool", "function"):
        return ["tool", str(m.get("tool_call_id") or m.get("name") or ""), _content_text(m.get("content"))], None
    return None, None


def _digest() -> Any:
    return hashlib.sha256(b"hermes-proxy-prefix\0")


def prefixes(msgs: Sequence[Any], *, think_tags: bool = False) -> list[str]:
    """``out[i]``: a digest of the conversation before ``msgs[i]``; ``out[-1]``: of all of them
    (what the answer to this request follows).

    Part of every recognition key, because what a turn shows does not tell conversations
    apart: Kimi numbers its tool-call ids per conversation (``functions.read_file:0``), and a
    turn without calls may say just "Done.". Only what a client resends as it was goes in —
    user text, tool results and their call ids, assistant text and calls (as ``client_key``
    reads them) — not system or developer messages, which clients rewrite between requests
    (a date, a repository map) without changing the conversation."""
    h = _digest()
    out = [h.hexdigest()[:40]]
    for m in msgs:
        part = _part(m, think_tags)[0]
        if part is not None:
            h.update(orjson.dumps(part))
        out.append(h.hexdigest()[:40])
    return out


def turn_keys(msgs: Sequence[Any], *, think_tags: bool = False) -> tuple[dict[int, str], str]:
    """(index → recognition key of each recognisable assistant message of a client's
    ``msgs``, the digest of the whole conversation: what the answer will be recorded under).
    The same keys as ``client_key`` after ``prefixes``, in one pass."""
    h = _digest()
    keys: dict[int, str] = {}
    for i, m in enumerate(msgs):
        part, seen = _part(m, think_tags)
        if part is None:
            continue
        if seen is not None and (k := _key(seen[0], seen[1], h.hexdigest()[:40])):
            keys[i] = k
        h.update(orjson.dumps(part))
    return keys, h.hexdigest()[:40]


@runtime_checkable
class ReasoningMemory(Protocol):
    """Where the proxy keeps what it saw. Every method is one unit of work."""

    def recall(self, tenant: str, keys: Sequence[str]) -> dict[str, Message]:
        """The recorded turns among ``keys`` for ``tenant`` that have not expired."""
        ...

    def remember(self, tenant: str, key: str, message: Message) -> None:
        """Record one turn (replacing an earlier one with the same key), then enforce the bounds;
        ``StoreError`` for a turn larger than the tenant's whole bound (``fitting``)."""
        ...

    def prune(self) -> int:
        """Delete expired recordings of every tenant; how many went."""
        ...

    def stats(self, tenant: str) -> tuple[int, int]:
        """(recordings, bytes) held for ``tenant``."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...


class Decoded:
    """Recently read rows, decoded: a lookup that finds a row it has decoded before skips the
    JSON work. Keyed by the stored text itself, so a replaced row is a different entry — the
    table stays the authority on what is kept, and every lookup still asks it."""

    def __init__(self, size: int = _DECODED) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._rows: OrderedDict[str, Message] = OrderedDict()

    def rows(self, found: Sequence[tuple[str, str]]) -> dict[str, Message]:
        """``(key, stored text)`` rows as key → message; a row that does not decode (written by
        something else) counts as not recorded."""
        out: dict[str, Message] = {}
        for key, data in found:
            with self._lock:
                m = self._rows.get(data)
                if m is not None:
                    self._rows.move_to_end(data)
            if m is None:
                try:
                    m = loads(data)
                except HistoryError:
                    continue
                with self._lock:
                    self._rows[data] = m
                    if len(self._rows) > self._size:
                        self._rows.popitem(last=False)
            out[key] = m
        return out


def fitting(message: Message, bounds: Bounds) -> str:
    """``message`` as stored, or ``StoreError`` when it alone is past ``bounds.max_bytes``:
    evicting down to the bound would delete it and every other recording of the tenant."""
    data = dumps(message).decode()
    if len(data) > bounds.max_bytes:
        raise StoreError(f"a turn of {len(data)} bytes is not kept: the memory holds {bounds.max_bytes} per tenant")
    return data


def open_memory(store: SessionStore, bounds: Bounds = Bounds()) -> ReasoningMemory:
    """The memory that lives where ``store`` keeps sessions: ``PgMemory`` on a PostgreSQL
    store's pool, else ``SqliteMemory`` on ``state.db``."""
    from ..store import Store
    from ..store.pg import PgStore

    if isinstance(store, PgStore):
        from .pgmemory import PgMemory

        return PgMemory(store, bounds)
    return SqliteMemory(store.path if isinstance(store, Store) else None, bounds)


class SqliteMemory(Closing):
    """``ReasoningMemory`` in ``state.db``: a read connection for the request path and a write
    connection for the recorder's worker thread, so a commit never stalls a lookup (WAL)."""

    def __init__(self, path: Path | None = None, bounds: Bounds = Bounds()) -> None:
        from ..config.paths import db_path
        from ..store.opening import open_db

        self.path = Path(path) if path is not None else db_path()
        self.bounds = bounds
        self._w = open_db(self.path)
        self._r = open_db(self.path)
        self._wlock = threading.Lock()
        self._rlock = threading.Lock()
        self._writes = 0
        self._decoded = Decoded()

    def recall(self, tenant: str, keys: Sequence[str]) -> dict[str, Message]:
        if not keys:
            return {}
        marks = ",".join("?" * len(keys))
        since = time.time() - self.bounds.max_age_s
        try:
            with self._rlock:
                rows = self._r.execute(
                    f"SELECT key, message FROM proxy_memory WHERE tenant = ? AND key IN ({marks}) AND created >= ?",
                    (tenant, *keys, since)).fetchall()
        except Exception as e:
            raise StoreError(f"cannot read the proxy memory in {self.path}: {e}") from None
        return self._decoded.rows(rows)

    def remember(self, tenant: str, key: str, message: Message) -> None:
        data = fitting(message, self.bounds)
        now = time.time()
        with self._wlock:
            c = self._w
            c.execute("BEGIN IMMEDIATE")
            try:
                c.execute("INSERT OR REPLACE INTO proxy_memory (tenant, key, message, size, created) "
                          "VALUES (?, ?, ?, ?, ?)", (tenant, key, data, len(data), now))
                (total,) = c.execute("SELECT COALESCE(SUM(size), 0) FROM proxy_memory WHERE tenant = ?",
                                     (tenant,)).fetchone()
                if total > self.bounds.max_bytes:
                    c.execute(
                        "DELETE FROM proxy_memory WHERE tenant = ?1 AND key IN (SELECT key FROM ("
                        " SELECT key, SUM(size) OVER (ORDER BY created DESC, key) AS running"
                        " FROM proxy_memory WHERE tenant = ?1) WHERE running > ?2)",
                        (tenant, self.bounds.max_bytes))
                c.execute("COMMIT")
            except BaseException:
                if c.in_transaction:
                    c.execute("ROLLBACK")
                raise
            self._writes += 1
            due = self._writes % 256 == 1
        if due:
            self.prune()

    def prune(self) -> int:
        with self._wlock:
            cur = self._w.execute("DELETE FROM proxy_memory WHERE created < ?",
                                  (time.time() - self.bounds.max_age_s,))
            return int(cur.rowcount or 0)

    def stats(self, tenant: str) -> tuple[int, int]:
        """(recordings, bytes) held for ``tenant``."""
        with self._rlock:
            n, size = self._r.execute("SELECT COUNT(*), COALESCE(SUM(size), 0) FROM proxy_memory WHERE tenant = ?",
                                      (tenant,)).fetchone()
        return int(n), int(size)

    def close(self) -> None:
        with self._wlock, self._rlock:
            self._w.close()
            self._r.close()


if TYPE_CHECKING:  # every implementation is checked against the protocol
    from .pgmemory import PgMemory

    _MEMORIES: tuple[type[ReasoningMemory], ...] = (SqliteMemory, PgMemory)
