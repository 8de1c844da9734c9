"""The web view: sessions, their timelines, every request's reasoning decisions, a live tail.

``create_ui(store, token=...)`` is a Starlette app; the gateway mounts it at ``/ui`` and
``hermes ui`` serves it alone on loopback. See docs/ui.md.
"""

from __future__ import annotations

from .app import create_ui

__all__ = ["create_ui"]
