"""Rejection memory at the edge: read what a route taught, learn from a refusal, forget.

``recover`` is the one side-effecting step of the rejection path: it classifies the error
against the attempt it carries (pure, ``classifier.classify``), keeps only what the store does not know
yet, persists it (``remember``), logs it and allows exactly one retry. Lessons live per
(provider, host, model) in the session's ``model_config`` and in the global capability
ledger; stored history is never modified. See docs/rejections.md.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.errors import ProviderHTTPError
from ..replay import Learned
from ..routing.resolve import Resolved
from .values import PARAMS, ValueRule, refused_value
from .vocabulary import CARRIERS

if TYPE_CHECKING:
    from ..store import SessionStore
    from .classifier import Lesson

__all__ = ["SESSION_KEY", "RetryState", "forget", "learned_for", "recover", "remember", "route_id", "values_for"]

SESSION_KEY = "reasoning_rejections"
KIND_DROPPED = "rejected_carriers"
KIND_SUPPRESSED = "suppressed_blobs"
KIND_ECHO = "must_echo"
KIND_VALUES = "refused_values"


@dataclass(slots=True)
class RetryState:
    """One retry per request: a second rejection of the same request is reported, not retried."""

    retried: bool = False
    notes: list[str] = field(default_factory=list)


def route_id(target: Resolved) -> str:
    """The session-config key for (provider, host, model), normalised like the ledger."""
    return f"{target.route.key.strip().lower()}|{target.host.strip().lower()}|{target.model.strip()}"


def learned_for(store: SessionStore, session_id: str | None, target: Resolved) -> Learned:
    """Session lessons plus the global ledger for (provider, host, model)."""
    dropped: set[str] = set()
    suppressed: set[str] = set()
    entry: Mapping[str, Any] = {}
    if session_id is not None:
        entry = (store.model_config(session_id).get(SESSION_KEY) or {}).get(route_id(target)) or {}
        dropped |= set(entry.get("dropped", []))
        suppressed |= set(entry.get("suppressed", []))
    caps = store.capabilities(target.route.key, target.host, target.model)
    dropped |= set(caps.get(KIND_DROPPED) or [])
    suppressed |= set(caps.get(KIND_SUPPRESSED) or [])
    dropped &= set(CARRIERS)
    echo = bool(entry.get("echo")) or bool(caps.get(KIND_ECHO))
    if target.route.must_echo or echo:
        dropped.discard("reasoning_content")
    return Learned(frozenset(dropped), frozenset(suppressed), echo)


def values_for(store: SessionStore, target: Resolved) -> tuple[ValueRule, ...]:
    """The value lessons of (provider, host, model), from the capability ledger."""
    stored = store.capabilities(target.route.key, target.host, target.model).get(KIND_VALUES) or {}
    if not isinstance(stored, Mapping):
        return ()
    return tuple(ValueRule(path, tuple(r.get("allowed") or ()), tuple(r.get("refused") or ()), bool(r.get("omit")))
                 for path, r in sorted(stored.items()) if path in PARAMS.values() and isinstance(r, Mapping))


def _learn_value(store: SessionStore, target: Resolved, err: ProviderHTTPError) -> ValueRule | None:
    """Persist what a value refusal teaches; None when it teaches nothing new."""
    rule = refused_value(err.status, err.body)
    if rule is None:
        return None
    known = {r.path: r for r in values_for(store, target)}
    merged = known[rule.path].merged(rule) if rule.path in known else rule
    if known.get(rule.path) == merged:
        return None
    table = {r.path: {"allowed": list(r.allowed), "refused": list(r.refused), "omit": r.omit}
             for r in {**known, rule.path: merged}.values()}
    store.learn(target.route.key, target.host, target.model, KIND_VALUES, table,
                {"status": err.status, "error": " ".join(err.body.split())[:300], "time": time.time()})
    return merged


def remember(store: SessionStore, session_id: str | None, target: Resolved, lesson: Lesson, status: int) -> None:
    """Persist a lesson in the session's model_config and the capability ledger."""
    evidence = {"status": status, "error": lesson.evidence, "time": time.time(), "session": session_id}
    if session_id is not None:
        cfg = store.model_config(session_id).get(SESSION_KEY) or {}
        entry = dict(cfg.get(route_id(target)) or {})
        entry["dropped"] = sorted(set(entry.get("dropped", [])) | lesson.dropped)
        entry["suppressed"] = sorted(set(entry.get("suppressed", [])) | lesson.suppressed)
        if lesson.echo:
            entry["echo"] = True
        store.patch_model_config(session_id, {SESSION_KEY: {route_id(target): entry}})
    r = target.route.key
    if lesson.dropped:
        store.learn(r, target.host, target.model, KIND_DROPPED, sorted(lesson.dropped), evidence)
    if lesson.suppressed:
        store.learn(r, target.host, target.model, KIND_SUPPRESSED, sorted(lesson.suppressed), evidence)
    if lesson.echo:
        store.learn(r, target.host, target.model, KIND_ECHO, True, evidence)


def forget(store: SessionStore, provider: str | None = None, host: str | None = None, model: str | None = None,
           *, sessions: int = 100_000) -> tuple[int, int]:
    """Clear ledger entries and the matching session copies (``None`` matches anything).

    Returns (ledger rows removed, session entries removed). Session copies go too, or a
    resumed session would keep not sending a field the user asked Hermes to try again.
    """
    rows = store.forget(provider, host, model)
    want = (provider.strip().lower() if provider is not None else None,
            host.strip().lower() if host is not None else None,
            model.strip() if model is not None else None)
    cleared = 0
    for info in reversed(store.list_sessions(limit=sessions)):  # oldest first: keeps their order
        cfg = store.model_config(info.id).get(SESSION_KEY) or {}
        gone = {k: None for k in cfg
                if all(w is None or w == have for w, have in zip(want, k.split("|", 2), strict=False))}
        if gone:
            store.patch_model_config(info.id, {SESSION_KEY: gone})
            cleared += len(gone)
    return rows, cleared


def recover(store: SessionStore, session_id: str | None, target: Resolved, err: ProviderHTTPError,
            retry: RetryState) -> str | None:
    """Learn from ``err`` and say so, or None when the error must be reported as it is.

    The lesson comes from ``classify`` over the error and the attempt it carries (an error
    without one — raised before a request was rendered — teaches nothing); only what the
    session and the ledger do not know yet counts."""
    if retry.retried or err.attempt is None:
        return None
    from .classifier import classify  # only a refused request needs it: every turn reads lessons

    lesson = classify(err.status, err.body, err.attempt).without(learned_for(store, session_id, target))
    if not lesson:
        rule = _learn_value(store, target, err)
        if rule is None:
            return None
        retry.retried = True
        how = "leaving it out" if rule.omit or not (rule.allowed or rule.refused) else (
            f"allowed: {', '.join(rule.allowed)}" if rule.allowed else f"not {', '.join(rule.refused)}")
        note = (f"{target.model} on {target.route.key} ({target.host}) refused a value of {rule.path} — "
                f"retrying with the nearest it takes ({how}) for this model.")
        from ..store.requestlog import log_event

        log_event("learned", session=session_id, route=target.route.key, host=target.host, model=target.model,
                  values=rule.path, status=err.status, error=" ".join(err.body.split())[:300])
        retry.notes.append(note)
        return note
    retry.retried = True
    remember(store, session_id, target, lesson, err.status)
    if lesson.echo:
        note = (f"{target.model} on {target.route.key} ({target.host}) wants reasoning_content on every tool "
                "turn — retrying with it (a placeholder where none was stored) for this model.")
    else:
        what = (f"replayed {', '.join(sorted(lesson.dropped))}" if lesson.dropped
                else f"{len(lesson.suppressed)} signed reasoning blob(s)")
        note = (f"{target.model} on {target.route.key} ({target.host}) rejected {what} — "
                "retrying without it for this model.")
    from ..store.requestlog import log_event

    log_event("learned", session=session_id, route=target.route.key, host=target.host, model=target.model,
              dropped=sorted(lesson.dropped), suppressed=len(lesson.suppressed), echo=lesson.echo,
              status=err.status, error=lesson.evidence)
    retry.notes.append(note)
    return note
