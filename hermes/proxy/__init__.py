"""``hermes proxy``: correct reasoning replay for any OpenAI-compatible client, unchanged.

A client points its base URL at ``http://127.0.0.1:8787/<route>`` and keeps its own key. The
proxy forwards everything it sends, except that each assistant message gets back the
reasoning its response carried, in the form the route takes (``rewrite``), and responses
come back unchanged while the turn they carried is recorded on the side (``recorder``) in a
per-tenant memory kept in the session store (``memory``; ``pgmemory`` on PostgreSQL).
``app`` is the ASGI app, ``server`` runs it. See docs/proxy.md.
"""

from __future__ import annotations

from .app import ProxyOptions, create_app
from .memory import (
    Bounds,
    ReasoningMemory,
    SqliteMemory,
    client_key,
    message_key,
    open_memory,
    tenant_of,
)
from .rewrite import Rewrite, rewrite

__all__ = ["Bounds", "ProxyOptions", "ReasoningMemory", "Rewrite", "SqliteMemory", "client_key", "create_app",
           "message_key", "open_memory", "rewrite", "tenant_of"]
