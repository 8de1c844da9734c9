"""Building requests with every cache: a conversation's ``Builder`` plans and renders what is new
and reuses the rest — per-message results by value (``memo``), runs kept in the store
(``kept``) — so each body is the one the pure build (``replay.plan_replay`` + the wire) sends.
"""

from __future__ import annotations

from .build import Builder

__all__ = ["Builder"]
