"""The gateway's hand-overs between its event loop and its turn threads.

``TurnThreads`` replaces ``run_in_executor``: what must hold is what a turn relies on — the
result or the exception comes back to the awaiting task (``BaseException`` too: the lease
poller's retry signal is one), a cancelled wait neither stops the call (a turn is never cut
between its store writes) nor ends before it, at most ``size`` calls run at once, and
shutdown lets queued calls finish. ``loop_sink`` carries a streamed turn's events to the loop: every event arrives, in
order, and the loop is woken once per batch rather than once per event.
"""

from __future__ import annotations

import asyncio
import threading
import time
from functools import partial
from typing import Any

import pytest

from hermes.gateway.threads import TurnThreads
from hermes.gateway.turns import loop_sink


class Signal(BaseException):
    """Not an ``Exception``: must still reach the awaiting task."""


def test_results_and_exceptions_come_back_to_the_awaiting_task() -> None:
    threads = TurnThreads(4)

    async def main() -> None:
        assert await threads.submit(lambda: threading.current_thread().name) != threading.current_thread().name
        assert await threads.submit(lambda: 41 + 1) == 42

        def fail() -> None:
            raise ValueError("from the thread")

        with pytest.raises(ValueError, match="from the thread"):
            await threads.submit(fail)

        def signal() -> None:
            raise Signal

        with pytest.raises(Signal):
            await threads.submit(signal)
        # the thread survived both: it still answers
        assert await asyncio.gather(*(threads.submit(partial(pow, i, 2)) for i in range(20))) == [
            i * i for i in range(20)]

    asyncio.run(main())
    threads.shutdown()


def test_a_task_cancelled_mid_call_ends_only_once_the_call_has_returned() -> None:
    """What ``SessionLocks.run`` relies on without a shield: the session's local lock (held by
    the awaiting task) must outlive the turn's thread, so the task's cancellation takes effect
    only after the call returned — and the task then ends cancelled, not with the result."""
    threads = TurnThreads(2)
    release = threading.Event()
    returned: list[float] = []

    def work() -> str:
        release.wait(5)
        returned.append(time.monotonic())
        return "committed"

    async def main() -> None:
        lock = asyncio.Lock()

        async def turn() -> str:
            async with lock:
                return await threads.submit(work)

        task = asyncio.create_task(turn())
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.sleep(0.1)
        assert not task.done() and lock.locked(), "the task gave up its lock while the call still ran"
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        ended = time.monotonic()
        assert returned and returned[0] <= ended and not lock.locked()

    asyncio.run(main())
    threads.shutdown()


def test_a_cancelled_wait_does_not_stop_the_call_and_at_most_size_run_at_once() -> None:
    threads = TurnThreads(2)
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
        futures = [threads.submit(partial(work, i)) for i in range(5)]
        await asyncio.sleep(0.1)
        assert running == 2  # two threads, the other three calls wait in the queue
        futures[0].cancel()  # the client went away: the call itself must still finish
        release.set()
        results = await asyncio.gather(*futures[1:])
        assert results == [1, 2, 3, 4]
        for _ in range(100):
            if 0 in finished:
                break
            await asyncio.sleep(0.01)

    asyncio.run(main())
    assert sorted(finished) == [0, 1, 2, 3, 4] and peak == 2
    assert len(threads._threads) == 2
    threads.shutdown()


def test_shutdown_lets_queued_calls_finish_then_refuses_new_ones() -> None:
    threads = TurnThreads(1)
    done: list[int] = []

    def slow(i: int) -> None:
        time.sleep(0.02)
        done.append(i)

    async def main() -> None:
        for i in range(3):
            threads.submit(partial(slow, i))
        await asyncio.sleep(0)

    asyncio.run(main())
    threads.shutdown()
    assert done == [0, 1, 2]

    async def after() -> None:
        threads.submit(lambda: None)

    with pytest.raises(RuntimeError, match="shut down"):
        asyncio.run(after())


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
                sink("text", {"i": i})

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
