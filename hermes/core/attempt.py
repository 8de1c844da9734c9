"""The attempt record: what one request carried back, as the wire placed it.

When a provider rejects a request, the question "did we send the field or blob it complains
about?" must be answered from what actually went out — not by re-reading a wire's JSON in the
classifier, nor by reloading history from the store. Every wire therefore reports, for the
body it rendered, an :class:`Attempt`: each replayed reasoning value (the message it rode on,
the path inside that message, and the content hash of a signed value), the request's top-level
keys, the assistant turns that carried tool calls, and whether the route must echo reasoning.
``rejections.classify`` is a pure function of the error and this record.

The record is built only when a request fails (``provider.complete``, the proxy): it is a pure
function of (plan, body), so building it later costs nothing on the happy path and gives the
same answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .messages import blob_hash

__all__ = ["Attempt", "Carried", "blocks", "build", "signed", "value_at"]


@dataclass(frozen=True, slots=True)
class Carried:
    """One reasoning value a request carried back."""

    message: int
    """Position in the request's message list as sent (``messages``, ``contents`` or ``input``)."""
    path: str
    """Where inside that message, dotted: ``reasoning_content``, ``content.0.signature``,
    ``tool_calls.1.extra_content.google.thought_signature``."""
    blob: str | None = None
    """``blob_hash`` of the signed stored value it came from; None for readable text or a
    documented placeholder."""
    kind: str = ""
    """That value's stored kind (``anthropic.signature``, ``openrouter.details``, ``native`` …)."""

    @property
    def field(self) -> str:
        """The message-level key that carried it (``reasoning_details``, ``content`` …)."""
        return self.path.split(".", 1)[0]


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one request sent that a rejection could be about."""

    wire: str
    carried: tuple[Carried, ...] = ()
    top: frozenset[str] = frozenset()
    """The request body's top-level keys (a top-level ``reasoning`` is not a message field)."""
    tool_turns: frozenset[int] = frozenset()
    """Positions of the assistant messages that carried tool calls."""
    must_echo: bool = False
    """The route must get ``reasoning_content`` back: never a field to drop there."""

    def fields(self) -> dict[int, set[str]]:
        """message position → the message-level keys that carried reasoning there."""
        out: dict[int, set[str]] = {}
        for c in self.carried:
            out.setdefault(c.message, set()).add(c.field)
        return out

    def blobs(self) -> dict[str, str]:
        """blob hash → kind for every signed stored value the request carried."""
        return {c.blob: c.kind for c in self.carried if c.blob}


def signed(value: Any, kind: str, *, skip: str = "") -> tuple[str | None, str]:
    """(hash, kind) of a signed value as it went out, or (None, "") for a placeholder ``skip``."""
    if not isinstance(value, str) or not value or value == skip:
        return None, ""
    return blob_hash(value), kind


def build(wire: str, must_echo: bool, body: Mapping[str, Any], carried: Iterable[Carried],
          tool_turns: Iterable[int]) -> Attempt:
    """The record for ``body`` (what a wire's ``attempt`` returns)."""
    return Attempt(wire, tuple(carried), frozenset(body), frozenset(tool_turns), must_echo)


def value_at(obj: Any, path: str) -> Any:
    """The value at a dotted ``path`` inside nested mappings, or None."""
    for key in path.split("."):
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def blocks(body: Mapping[str, Any], messages: str, content: str) -> Iterable[tuple[int, int, Mapping[str, Any]]]:
    """(message position, block position, block) for the content blocks of the assistant
    (``assistant`` / ``model``) messages in ``body[messages]``."""
    for i, m in enumerate(body.get(messages) or ()):
        if not isinstance(m, Mapping) or m.get("role") not in ("assistant", "model"):
            continue
        items = m.get(content)
        for k, b in enumerate(items if isinstance(items, list) else ()):
            if isinstance(b, Mapping):
                yield i, k, b
