"""The gateway's turn threads: a call handed to a thread, its result handed back to the loop.

``loop.run_in_executor(ThreadPoolExecutor)`` does this with two futures chained by callbacks
(a ``concurrent.futures.Future`` with its condition variable, an asyncio future, a state copy
between them) plus the executor's shutdown locks and idle-thread semaphore, all on the event
loop's side of each turn. A gateway hands over one call per turn and the event loop is the
one thread every turn passes through, so its cost per turn counts twice: in the turn's latency
and, at many sessions, in the GIL time the loop takes from the running turns. Here the loop
does one ``SimpleQueue.put`` (to the chosen thread's own inbox) and one asyncio future; the
thread answers with one ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["TurnThreads"]

T = TypeVar("T")
_STOP = object()


class Pending(asyncio.Future[T]):
    """A worker thread's answer that a cancelled wait cannot drop: ``cancel()`` refuses, so a
    task cancelled while awaiting it is cancelled only once the call has returned (asyncio
    then raises ``CancelledError`` in the task instead of handing it the result). That is
    what a turn needs — the session's local lock stays held until its lease is released —
    without an ``asyncio.shield`` around every turn, whose extra future costs the event loop
    one more pass per turn."""

    def cancel(self, msg: Any = None) -> bool:
        return False


def _settle(future: Pending[Any], result: Any, error: BaseException | None) -> None:
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class TurnThreads:
    """At most ``size`` threads, started as calls arrive and none is idle, kept for the next.

    A call goes to the thread that went idle **last** (a stack, not a shared queue). With a
    shared queue every idle thread waits on it and the one woken is the one that has waited
    longest, so calls rotate through every thread a burst ever started: after 32 concurrent
    sessions, a lone session's turns each ran on a thread idle since the burst, its stack and
    the core it last ran on gone cold — 1.5 ms more per turn than on one thread, measured
    (``bench/gateway.py``, the lock-step pairs). Calls that find every thread busy wait in a
    backlog, taken in order by whichever thread finishes first."""

    def __init__(self, size: int, *, name: str = "hermes-turn") -> None:
        self.size = size
        self.name = name
        self._idle: list[queue.SimpleQueue[Any]] = []
        """The idle threads' own inboxes, the most recently idle last."""
        self._backlog: collections.deque[Any] = collections.deque()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[[], T]) -> Pending[T]:
        """Run ``fn()`` on a thread; the returned future (of the running loop) gets its result
        or exception. It cannot be cancelled: ``fn`` runs to its end and a task awaiting it is
        cancelled once it has (``Pending``)."""
        loop = asyncio.get_running_loop()
        future: Pending[T] = Pending(loop=loop)
        call = (loop, future, fn)
        with self._lock:
            if self._closed:
                raise RuntimeError("the gateway's turn threads are shut down")
            if self._idle:
                inbox = self._idle.pop()
            elif len(self._threads) < self.size:
                t = threading.Thread(target=self._work, args=(queue.SimpleQueue(), call),
                                     name=f"{self.name}_{len(self._threads)}", daemon=True)
                self._threads.append(t)
                t.start()
                return future
            else:
                self._backlog.append(call)
                return future
        inbox.put(call)
        return future

    def spare(self) -> bool:
        """A call submitted now would start at once, and none is waiting."""
        return not self._backlog and (bool(self._idle) or len(self._threads) < self.size)

    def backlogged(self) -> bool:
        """Calls are waiting for a thread."""
        return bool(self._backlog)

    def _work(self, inbox: queue.SimpleQueue[Any], call: Any) -> None:
        while call is not _STOP:
            loop, future, fn = call
            try:
                result, error = fn(), None
            except BaseException as e:  # handed to the awaiting task, which re-raises it
                result, error = None, e
            # idle (or the backlog's next call taken) before the answer goes out: a client that
            # sends its next turn as soon as it has this one's finds this thread free, rather
            # than starting another one while this thread waits for the GIL to file itself
            with self._lock:
                call = self._backlog.popleft() if self._backlog else None
                stop = call is None and self._closed
                if call is None and not stop:
                    self._idle.append(inbox)
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for this answer
                loop.call_soon_threadsafe(_settle, future, result, error)
            del future, fn, result, error
            if stop:
                return
            if call is None:
                call = inbox.get()

    def shutdown(self) -> None:
        """Let every queued call finish, then stop the threads (waits for them)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for inbox in idle:
            inbox.put(_STOP)
        for t in self._threads:
            t.join()
