"""``hermes gateway``: Hermes sessions over HTTP. Every turn reloads its session from
``state.db``, runs under a per-session lock that holds across processes, and commits step by
step, so several gateway processes can serve one store. See ``docs/gateway.md``."""

from __future__ import annotations

from ..store.views import blob_summary, session_view
from .app import GatewayOptions, GatewayState, create_app
from .locks import Busy, SessionLocks
from .server import serve

__all__ = ["Busy", "GatewayOptions", "GatewayState", "SessionLocks", "blob_summary", "create_app",
           "serve", "session_view"]
