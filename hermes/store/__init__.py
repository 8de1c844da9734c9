"""The session store: sessions, their histories, learned capabilities, session locks.

``Store`` is the SQLite implementation (``$HERMES_HOME/state.db``, WAL, 0600), the default;
``PgStore`` (``hermes.store.pg``) keeps the same guarantees on PostgreSQL for many workers on
many hosts. :func:`open_store` picks one: ``HERMES_DATABASE_URL``, else ``[store] url`` in
config.toml, else ``state.db``. Code that only needs *a* store types against
:class:`SessionStore`: plain values in and out, no cursors, no SQL, one method per unit of
work (a step is one call, one transaction).

Layout: ``migrations`` / ``pg_schema`` (the schemas, as named functions), ``opening`` (create /
refuse / migrate a file), ``codec`` (part <-> row), ``ledger`` (capability facts), ``lease``
(fencing tokens), ``db`` (``Store``), ``pg`` (``PgStore``), ``copy`` (``hermes store migrate``).
Documented in ``docs/store.md`` and ``docs/scale.md``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

from ..core.messages import Message, RouteKey
from .codec import blob_hash
from .db import Store, merge_patch
from .lease import Lease
from .records import Capability, NewSession, SessionInfo
from .runs import RunRow

if TYPE_CHECKING:
    from ..config.settings import Config

__all__ = [
    "Capability",
    "Lease",
    "NewSession",
    "RunRow",
    "SessionInfo",
    "SessionStore",
    "Store",
    "blob_hash",
    "merge_patch",
    "open_store",
    "store_url",
]


@runtime_checkable
class SessionStore(Protocol):
    """What the rest of Hermes may ask of a store. Every method is one unit of work."""

    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None, /) -> None: ...

    # sessions
    def create_session(
        self,
        *,
        provider: str,
        model: str,
        base_url: str = "",
        title: str = "",
        model_config: Mapping[str, Any] | None = None,
    ) -> str: ...
    def get_session(self, ref: str) -> SessionInfo: ...
    def list_sessions(self, limit: int = 20, *, include_empty: bool = True) -> list[SessionInfo]: ...
    def latest_session(self) -> SessionInfo | None: ...
    def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        provider: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
    ) -> None: ...
    def delete_session(self, session_id: str) -> None: ...

    # history
    def load(self, session_id: str) -> list[Message]: ...
    def load_tail(self, session_id: str, start: int) -> list[Message]: ...
    def append_turn(
        self,
        session_id: str,
        messages: Sequence[Message],
        *,
        route_key: RouteKey | None = None,
        usage: Mapping[str, Any] | None = None,
        fence: Lease | None = None,
        create: NewSession | None = None,
    ) -> int: ...
    def branch(self, session_id: str, *, upto_seq: int | None = None, title: str = "") -> str: ...
    def export_jsonl(self, session_id: str) -> Iterator[bytes]: ...

    # kept runs of built messages (hermes.store.runs, hermes.builder.kept): a cache
    def load_runs(self, session_id: str, context: bytes) -> list[RunRow]: ...
    def save_run(self, session_id: str, context: bytes, row: RunRow) -> bool: ...

    # per-session learned config
    def model_config(self, session_id: str) -> dict[str, Any]: ...
    def patch_model_config(self, session_id: str, patch: Mapping[str, Any]) -> dict[str, Any]: ...

    # global capability ledger
    def learn(
        self, provider: str, host: str, model: str, kind: str, value: Any, evidence: Mapping[str, Any]
    ) -> bool: ...
    def capabilities(self, provider: str, host: str, model: str) -> dict[str, Any]: ...
    def list_capabilities(self) -> list[Capability]: ...
    def forget(
        self, provider: str | None = None, host: str | None = None, model: str | None = None
    ) -> int: ...

    # session leases (hermes.store.lease)
    def acquire_lock(self, session_id: str, owner: str, ttl_s: float) -> bool: ...
    def acquire_lease(self, session_id: str, owner: str, ttl_s: float) -> int | None: ...
    def lease_session(self, session_id: str, owner: str, ttl_s: float) -> tuple[int, SessionInfo] | None: ...
    def lease_holder(self, session_id: str) -> str | None: ...
    def release_lock(self, session_id: str, owner: str) -> bool: ...


if TYPE_CHECKING:  # every implementation and view is checked against the protocol
    from .draft import Drafting
    from .lease import Fenced
    from .pg import PgStore

    _STORES: tuple[type[SessionStore], ...] = (Store, PgStore, Drafting, Fenced)


def store_url(config: Config | None = None) -> str:
    """``HERMES_DATABASE_URL``, else config.toml's ``[store] url``; ``""`` means ``state.db``."""
    url = os.environ.get("HERMES_DATABASE_URL", "").strip()
    if url:
        from ..core.errors import register_secret
        from .url import check_store_url, url_passwords

        for password in url_passwords(url):
            register_secret(password)
        check_store_url(url, "HERMES_DATABASE_URL")
        return url
    if config is None:
        from ..config.settings import load_config

        config = load_config()
    return config.store_url or ""


def open_store(config: Config | None = None) -> SessionStore:
    """The configured store: ``PgStore`` for a ``postgresql://`` URL, else ``Store()``."""
    url = store_url(config)
    if not url:
        return Store()
    from .pg import PgStore
    from .url import check_store_url

    check_store_url(url, "the store URL")  # HERMES_DATABASE_URL and [store] url were checked already

    return PgStore(url)
