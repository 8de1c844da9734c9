"""The gateway's hand-overs between its event loop and the turns' worker threads.

A turn runs on one of anyio's threads (``locks.run_to_end``); what must hold is what a turn
relies on — the result or the exception comes back to the awaiting task (``BaseException``
too: the lease poller's retry signal is one), a cancelled wait neither stops the call (a turn
is never cut between its store writes) nor ends before it, and at most the limiter's tokens
run at once. ``loop_sink`` carries a streamed turn's events to the loop: every event arrives,
in order, and the loop is woken once per batch rather than once per event.
"""

from __future__ import annotations

import asyncio
import threading
import time
from functools import partial
from typing import Any

import anyio
import pytest

from hermes.gateway.locks import run_to_end
from hermes.gateway.turns import loop_sink


class Signal(BaseException):
    """Not an ``Exception``: must still reach the awaiting task."""


def test_results_and_exceptions_come_back_to_the_awaiting_task() -> None:
    def fail(kind: type[BaseException]) -> None:
        raise kind("from the thread")

    async def main() -> None:
        limiter = anyio.CapacityLimiter(2)
        assert await run_to_end(lambda: threading.current_thread() is not threading.main_thread(), limiter)
        with pytest.raises(ValueError, match="from the thread"):
            await run_to_end(partial(fail, ValueError), limiter)
        with pytest.raises(Signal):
            await run_to_end(partial(fail, Signal), limiter)

    asyncio.run(main())


def test_a_task_cancelled_mid_call_ends_only_once_the_call_has_returned() -> None:
    """What ``SessionLocks.run`` relies on: the session's local lock (held by the awaiting
    task) must outlive the turn's thread, so the task's cancellation takes effect only after
    the call returned — and the task then ends cancelled, not with the result. A plain
    ``anyio.to_thread.run_sync`` ends at once when its task is cancelled."""
    release = threading.Event()
    returned: list[float] = []

    def work() -> str:
        release.wait(5)
        returned.append(time.monotonic())
        return "committed"

    async def main() -> None:
        lock = asyncio.Lock()
        limiter = anyio.CapacityLimiter(2)

        async def turn() -> str:
            async with lock:
                return await run_to_end(work, limiter)

        task = asyncio.create_task(turn())
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.sleep(0.05)
        task.cancel()  # twice: a second cancellation does not cut the wait short either
        await asyncio.sleep(0.1)
        assert not task.done() and lock.locked(), "the task gave up its lock while the call still ran"
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert returned and returned[0] <= time.monotonic() and not lock.locked()

    asyncio.run(main())


def test_a_cancelled_wait_does_not_stop_the_call_and_at_most_the_limit_run_at_once() -> None:
    running = 0
    peak = 0
    finished: list[int] = []
    lock = threading.Lock()
    release = threading.Event()

    def work(i: int) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        release.wait(5)
        time.sleep(0.01)
        with lock:
            running -= 1
            finished.append(i)
        return i

    async def main() -> None:
        limiter = anyio.CapacityLimiter(2)
        tasks = [asyncio.create_task(run_to_end(partial(work, i), limiter)) for i in range(5)]
        await asyncio.sleep(0.1)
        assert running == 2  # two tokens, the other three calls wait for one
        tasks[0].cancel()  # the client went away: the call itself must still finish
        release.set()
        assert await asyncio.gather(*tasks[1:]) == [1, 2, 3, 4]
        with pytest.raises(asyncio.CancelledError):
            await tasks[0]

    asyncio.run(main())
    assert sorted(finished) == [0, 1, 2, 3, 4] and peak == 2


def test_loop_sink_delivers_every_event_in_order_waking_the_loop_once_per_batch() -> None:
    got: list[tuple[str, dict[str, Any]]] = []

    async def main() -> int:
        loop = asyncio.get_running_loop()
        wakes = 0
        post = loop.call_soon_threadsafe

        def counting(*args: Any) -> Any:
            nonlocal wakes
            wakes += 1
            return post(*args)

        loop.call_soon_threadsafe = counting  # type: ignore[method-assign,assignment]
        sink = loop_sink(loop, got.append)

        def produce(start: int, n: int) -> None:
            for i in range(start, start + n):
                sink(("text", {"i": i}))

        # the loop is blocked while the worker emits: the whole burst is one batch, one wake-up
        t = threading.Thread(target=produce, args=(0, 5000))
        t.start()
        t.join()
        await asyncio.sleep(0)
        assert wakes == 1 and len(got) == 5000
        # a worker emitting while the loop runs: far fewer wake-ups than events, nothing lost
        t = threading.Thread(target=produce, args=(5000, 20000))
        t.start()
        while t.is_alive() or len(got) < 25000:
            await asyncio.sleep(0)
        t.join()
        return wakes

    wakes = asyncio.run(main())
    assert [d["i"] for _, d in got] == list(range(25000))
    assert wakes < 25000 // 4, wakes
