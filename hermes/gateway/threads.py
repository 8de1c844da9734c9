"""The gateway's turn threads: a call handed to a thread, its result handed back to the loop.

``loop.run_in_executor(ThreadPoolExecutor)`` does this with two futures chained by callbacks
(a ``concurrent.futures.Future`` with its condition variable, an asyncio future, a state copy
between them) plus the executor's shutdown locks and idle-thread semaphore, all on the event
loop's side of each turn. A gateway hands over one call per turn and the event loop is the
one thread every turn passes through, so its cost per turn counts twice: in the turn's latency
and, at many sessions, in the GIL time the loop takes from the running turns. Here the loop
does one ``SimpleQueue.put`` and one asyncio future; the thread answers with one
``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["TurnThreads"]

T = TypeVar("T")
_STOP = object()


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class TurnThreads:
    """At most ``size`` threads, started as calls arrive and none is idle, kept for the next."""

    def __init__(self, size: int, *, name: str = "hermes-turn") -> None:
        self.size = size
        self.name = name
        self._calls: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        """Run ``fn()`` on a thread; the returned future (of the running loop) gets its result
        or exception. Cancelling the future does not stop ``fn``: it runs to its end."""
        if self._closed:
            raise RuntimeError("the gateway's turn threads are shut down")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            if self._idle:
                self._idle -= 1
            elif len(self._threads) < self.size:
                t = threading.Thread(target=self._work, name=f"{self.name}_{len(self._threads)}", daemon=True)
                self._threads.append(t)
                t.start()
        self._calls.put((loop, future, fn))
        return future

    def _work(self) -> None:
        while True:
            item = self._calls.get()
            if item is _STOP:
                return
            loop, future, fn = item
            try:
                result, error = fn(), None
            except BaseException as e:  # handed to the awaiting task, which re-raises it
                result, error = None, e
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for this answer
                loop.call_soon_threadsafe(_settle, future, result, error)
            del item, future, fn, result, error
            with self._lock:
                self._idle += 1

    def shutdown(self) -> None:
        """Let every queued call finish, then stop the threads (waits for them)."""
        self._closed = True
        for _ in self._threads:
            self._calls.put(_STOP)
        for t in self._threads:
            t.join()
