"""Rejection memory: learn from a 4xx that names a replayed field, retry once, never pay twice.

The path runs forward: the wire records what a request carried back (``hermes.attempt``),
``provider.complete`` raises a ``ProviderHTTPError`` carrying that attempt, and

* ``vocabulary`` — ``mentions``: which carrier an error body names, and how (pure);
* ``classifier`` — ``classify``, what an error teaches, a pure function of (error, attempt);
* ``ledger`` — the edge: ``learned_for`` reads lessons, ``recover`` learns and allows one
  retry, ``remember`` / ``forget`` write them.

See docs/rejections.md.
"""

from __future__ import annotations

from .classifier import Lesson, classify
from .ledger import SESSION_KEY, RetryState, forget, learned_for, recover, remember, route_id
from .vocabulary import CARRIERS, Mention, is_signature_rejection, mentions

__all__ = [
    "CARRIERS",
    "SESSION_KEY",
    "Lesson",
    "Mention",
    "RetryState",
    "classify",
    "forget",
    "is_signature_rejection",
    "learned_for",
    "mentions",
    "recover",
    "remember",
    "route_id",
]
