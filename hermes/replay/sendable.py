"""Whether a signed blob or a private native record may go to a target: the one rule every
per-wire planner applies (design invariant 4 — a foreign blob is never sent)."""

from __future__ import annotations

from ..core.messages import Reasoning, RouteKey, blob_hash
from ..routing.resolve import Resolved
from .plan import DETAILS, Learned

__all__ = ["blob_allowed", "native_owned", "same_origin", "who"]


def blob_allowed(part: Reasoning, target: Resolved, learned: Learned = Learned()) -> str | None:
    """None when the part's blob may be sent to ``target``; otherwise the reason it may not."""
    if part.blob is None or part.blob_kind is None:
        return "no blob"
    route = target.route
    accepted = route.blob_kinds | ({DETAILS} if "reasoning_details" in route.carriers else set())
    if part.blob_kind not in accepted:
        return f"{route.key} does not take {part.blob_kind} blobs"
    if not same_origin(part.origin, target):
        return f"blob minted by {who(part.origin)}, not sendable to {who(target.key)}"
    if learned.suppressed and blob_hash(part.blob) in learned.suppressed:  # hash only when it can matter
        return "blob suppressed after the route rejected it"
    return None


def same_origin(origin: RouteKey, target: Resolved) -> bool:
    """Minted on the target's route and host, and by its model unless the row shares blobs
    across models (a model that takes only its own signatures never shares)."""
    if origin.provider != target.route.key or origin.host != target.host:
        return False
    shared = target.route.blob_scope == "provider" and not target.profile.own_signatures
    return shared or origin.model == target.model


def who(k: RouteKey) -> str:
    return f"{k.provider}@{k.host}/{k.model}"


def native_owned(p: Reasoning, target: Resolved, learned: Learned) -> tuple[list[str], str | None]:
    """Which fields of the part's private record go to ``target``, or why none do."""
    assert p.native is not None
    have = p.native.fields()
    n = p.native
    values = [v for v in (n.thought_signature, n.reasoning_opaque, *(s for _, s in n.tool_signatures)) if v]
    if learned.suppressed and any(blob_hash(v) in learned.suppressed for v in values):
        return [], "native record suppressed after the route rejected it"
    owned = have & target.route.native
    if not owned:
        return [], f"native record ({', '.join(sorted(have))}) is owned by {p.origin.provider}, not {target.route.key}"
    if not same_origin(p.origin, target):
        return [], f"native record minted by {who(p.origin)}, not sendable to {who(target.key)}"
    names = sorted(owned)
    if "reasoning_text" in names and "reasoning_opaque" not in names:
        names.remove("reasoning_text")  # Copilot clients send it only next to its opaque blob
    return names, None
