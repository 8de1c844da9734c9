"""Rejection memory: learn from a 4xx that names a replayed field, retry once, never pay twice.

The path runs forward: the wire records what a request carried back (``hermes.core.attempt``),
``provider.complete`` raises a ``ProviderHTTPError`` carrying that attempt, and

* ``vocabulary`` — ``mentions``: which carrier an error body names, and how (pure);
* ``classifier`` — ``classify``, what an error teaches, a pure function of (error, attempt);
* ``ledger`` — the edge: ``learned_for`` reads lessons, ``recover`` learns and allows one
  retry, ``remember`` / ``forget`` write them.

See docs/rejections.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .ledger import (
    SESSION_KEY,
    RetryState,
    forget,
    learned_for,
    recover,
    remember,
    route_id,
    values_for,
)
from .values import ValueRule, apply_values
from .vocabulary import CARRIERS, Mention, is_signature_rejection, mentions

if TYPE_CHECKING:
    from .classifier import Lesson, classify

__all__ = [
    "CARRIERS",
    "SESSION_KEY",
    "Lesson",
    "Mention",
    "RetryState",
    "ValueRule",
    "apply_values",
    "classify",
    "forget",
    "is_signature_rejection",
    "learned_for",
    "mentions",
    "recover",
    "remember",
    "route_id",
    "values_for",
]


def __getattr__(name: str) -> Any:
    """``Lesson`` and ``classify`` load with the classifier (and ``hermes.core.attempt``) on first
    use: every turn reads lessons through the ledger, only a refused request classifies."""
    if name in ("Lesson", "classify"):
        from . import classifier

        return getattr(classifier, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
