"""What a chat-completions request carried back: the chat wire's ``attempt`` (``hermes.core.attempt``).

Read from the messages as sent, so a body changed after rendering (``hermes proxy`` patches
only the reasoning keys of the client's own messages) is recorded as it went out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.attempt import Attempt, Carried, build, signed, value_at
from ..replay import ReplayPlan

__all__ = ["attempt"]

_TEXT_KEYS = ("reasoning_content", "reasoning", "reasoning_text")
"""Assistant-message keys that carry readable reasoning on some chat route."""


def attempt(plan: ReplayPlan, body: Mapping[str, Any]) -> Attempt:
    """What ``messages`` carried back, read from the messages as sent: readable reasoning keys,
    ``reasoning_details`` (by the hashes of the stored blobs the plan merged into it — each
    assistant planned message renders as exactly one assistant message, in order, so the
    k-th assistant message is the k-th assistant entry of the plan), ``reasoning_opaque`` and
    the row's text / call signature paths (by hash; the validator skip is a placeholder)."""
    route = plan.target.route
    planned = iter([pm for pm in plan.messages if pm.role == "assistant"])
    carried: list[Carried] = []
    turns: list[int] = []
    for i, m in enumerate(body.get("messages") or ()):
        if not isinstance(m, Mapping) or m.get("role") != "assistant":
            continue
        pm = next(planned, None)
        calls = m.get("tool_calls")
        if calls:
            turns.append(i)
        carried += [Carried(i, k) for k in _TEXT_KEYS if k in m]
        if "reasoning_details" in m:
            blobs = [Carried(i, "reasoning_details", *signed(blob, kind))
                     for f, kind, blob in (pm.blobs if pm is not None else ()) if f == "reasoning_details"]
            carried += blobs or [Carried(i, "reasoning_details")]
        if "reasoning_opaque" in m:
            carried.append(Carried(i, "reasoning_opaque", *signed(m["reasoning_opaque"], "native")))
        if route.text_signature and (sig := value_at(m, route.text_signature)) is not None:
            carried.append(Carried(i, route.text_signature, *signed(sig, "native")))
        for j, call in enumerate(calls if isinstance(calls, list) else ()):
            if route.call_signature and (sig := value_at(call, route.call_signature)) is not None:
                carried.append(Carried(i, f"tool_calls.{j}.{route.call_signature}",
                                       *signed(sig, "native", skip=route.signature_pad)))
    return build("openai_chat", plan.target.route.must_echo, body, carried, turns)
