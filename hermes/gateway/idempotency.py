"""``Idempotency-Key``: a repeated request returns the first one's outcome instead of running
a second turn.

Clients retry: the official OpenAI SDKs retry timeouts and 5xx twice by default, and a user
presses "regenerate" after a dropped connection. A turn is not a read; running it again stores
the user message again and pays again. With an ``Idempotency-Key`` header the first request's
outcome (its completion, or an error raised after the turn had committed a step) is kept, and
any later request with the same key — while the first still runs, or after — gets that
outcome. A key reused with a different request body is refused (422), the same rule payment
APIs use. An attempt that failed before anything was stored is forgotten, so it can be retried.

Kept in this process's memory, bounded in entries and age: two gateway processes behind one
load balancer do not share keys (documented in docs/gateway.md).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import Any

from ..serving.http import ApiError

__all__ = ["IdempotencyCache"]


class IdempotencyCache:
    def __init__(self, *, size: int = 1000, ttl_s: float = 24 * 3600) -> None:
        self.size = size
        self.ttl_s = ttl_s
        self.entries: OrderedDict[str, tuple[str, float, asyncio.Future[Any]]] = OrderedDict()

    def begin(self, key: str, digest: str) -> tuple[asyncio.Future[Any], bool]:
        """(the future holding this key's outcome, True when this request must produce it)."""
        now = time.monotonic()
        while self.entries:
            oldest = next(iter(self.entries.values()))
            if now - oldest[1] <= self.ttl_s and len(self.entries) < self.size:
                break
            self.entries.popitem(last=False)
        held = self.entries.get(key)
        if held is not None:
            if held[0] != digest:
                raise ApiError(422, "idempotency_mismatch",
                               "this Idempotency-Key was used with a different request; use a new key",
                               {"x-should-retry": "false"})
            return held[2], False
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.entries[key] = (digest, now, future)
        return future, True

    def finish(self, key: str, outcome: Any) -> None:
        held = self.entries.get(key)
        if held is not None and not held[2].done():
            held[2].set_result(outcome)

    def forget(self, key: str, outcome: Any) -> None:
        """The attempt left nothing behind: waiters get its outcome, later requests run anew."""
        held = self.entries.pop(key, None)
        if held is not None and not held[2].done():
            held[2].set_result(outcome)
