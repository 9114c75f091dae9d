"""Unit tests of the Batcher: coalescing, the wait budget, cancellation, errors, the bounded queue."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from bench.harness.waiting import eventually_async
from rewardfleet.services.model_server.batcher import Batcher, BatcherStopped, BatchStats, QueueFull


async def entered(event: threading.Event) -> None:
    """Wait (off the event loop) until the forward thread sets `event`."""
    assert await asyncio.to_thread(event.wait, 10), "the forward never started"


def recording(calls: list[list[int]], delay_s: float = 0.0):  # type: ignore[no-untyped-def]
    def forward(items: list[int]) -> list[int]:
        calls.append(list(items))
        if delay_s:
            time.sleep(delay_s)  # the forward pass's own work (the behaviour)
        return [x * 10 for x in items]

    return forward


async def test_concurrent_submits_are_coalesced_into_one_batch() -> None:
    calls: list[list[int]] = []
    stats: list[BatchStats] = []
    b: Batcher[int, int] = Batcher(
        recording(calls), max_batch_size=8, batch_wait_timeout_s=0.2, on_batch=stats.append
    )
    b.start()
    try:
        results = await asyncio.gather(*(b(i) for i in range(8)))
    finally:
        await b.stop()
    assert results == [i * 10 for i in range(8)]
    assert calls == [list(range(8))]  # one forward, full batch, order kept
    assert stats[0].size == 8 and len(stats[0].queue_wait_s) == 8


async def test_batches_never_exceed_max_batch_size() -> None:
    calls: list[list[int]] = []
    b: Batcher[int, int] = Batcher(recording(calls), max_batch_size=4, batch_wait_timeout_s=0.05)
    b.start()
    try:
        results = await asyncio.gather(*(b(i) for i in range(10)))
    finally:
        await b.stop()
    assert results == [i * 10 for i in range(10)]
    assert [len(c) for c in calls] == [4, 4, 2]


async def test_wait_timeout_is_measured_from_the_first_item() -> None:
    calls: list[list[int]] = []
    b: Batcher[int, int] = Batcher(recording(calls), max_batch_size=100, batch_wait_timeout_s=0.15)
    b.start()
    try:
        started = time.monotonic()
        first = b.submit(1)
        await asyncio.sleep(0.05)  # the gap between two arrivals (the scenario), not a wait
        second = b.submit(2)  # arrives inside the window: same batch
        # Not forever: a bounded wait on the answers, not a stopwatch on them.
        assert await asyncio.wait_for(first, 30) == 10 and await asyncio.wait_for(second, 30) == 20
        elapsed = time.monotonic() - started
        late = await b(3)  # a new batch
    finally:
        await b.stop()
    assert calls == [[1, 2], [3]]
    assert elapsed >= 0.13  # waited for the window (not full)
    assert late == 30


async def test_zero_wait_runs_what_is_queued_without_waiting() -> None:
    calls: list[list[int]] = []
    b: Batcher[int, int] = Batcher(recording(calls), max_batch_size=100, batch_wait_timeout_s=0.0)
    b.start()
    try:
        # A zero window must not mean "wait for a full batch": the lone item is answered (bounded wait).
        assert await asyncio.wait_for(b(7), 30) == 70
    finally:
        await b.stop()


async def test_cancelled_requests_are_skipped_before_the_forward() -> None:
    calls: list[list[int]] = []
    b: Batcher[int, int] = Batcher(recording(calls), max_batch_size=10, batch_wait_timeout_s=0.1)
    b.start()
    try:
        keep = b.submit(1)
        gone = b.submit(2)
        gone.cancel()  # the client went away while queued
        also = b.submit(3)
        assert await keep == 10 and await also == 30
    finally:
        await b.stop()
    assert calls == [[1, 3]]


async def test_a_batch_of_only_cancelled_requests_runs_no_forward() -> None:
    calls: list[list[int]] = []
    # No wait budget: the loop takes the cancelled item alone and is done with that batch in the same step.
    b: Batcher[int, int] = Batcher(recording(calls), max_batch_size=10, batch_wait_timeout_s=0.0)
    b.start()
    try:
        f = b.submit(1)
        f.cancel()
        await eventually_async(
            lambda: b.queue_length == 0, interval_s=0
        )  # the batching loop took it (and dropped it)
        assert await b(5) == 50
    finally:
        await b.stop()
    assert calls == [[5]]


async def test_forward_exception_reaches_every_request_of_the_batch() -> None:
    def broken(items: list[int]) -> list[int]:
        raise ValueError("model exploded")

    b: Batcher[int, int] = Batcher(broken, max_batch_size=4, batch_wait_timeout_s=0.1)
    b.start()
    try:
        results = await asyncio.gather(*(b(i) for i in range(3)), return_exceptions=True)
    finally:
        await b.stop()
    assert all(isinstance(r, ValueError) and "exploded" in str(r) for r in results)


async def test_per_item_exception_fails_only_its_request() -> None:
    def picky(items: list[int]) -> list[int | BaseException]:
        return [ValueError(f"bad {x}") if x < 0 else x for x in items]

    b: Batcher[int, int] = Batcher(picky, max_batch_size=4, batch_wait_timeout_s=0.1)
    b.start()
    try:
        results = await asyncio.gather(b(1), b(-1), b(2), return_exceptions=True)
    finally:
        await b.stop()
    assert results[0] == 1 and results[2] == 2
    assert isinstance(results[1], ValueError) and str(results[1]) == "bad -1"


async def test_wrong_result_count_is_an_error_for_the_batch() -> None:
    b: Batcher[int, int] = Batcher(lambda items: items[:-1], max_batch_size=4, batch_wait_timeout_s=0.1)
    b.start()
    try:
        results = await asyncio.gather(b(1), b(2), return_exceptions=True)
    finally:
        await b.stop()
    assert all(
        isinstance(r, RuntimeError) and "returned 1 results for a batch of 2" in str(r) for r in results
    )


async def test_full_queue_raises_queue_full() -> None:
    release, started = threading.Event(), threading.Event()

    def blocked(items: list[int]) -> list[int]:
        started.set()
        release.wait(5)
        return items

    b: Batcher[int, int] = Batcher(blocked, max_batch_size=1, batch_wait_timeout_s=0.0, max_queue=2)
    b.start()
    try:
        running = b.submit(0)
        await entered(started)  # item 0 is in the forward now; the queue is empty
        queued = [b.submit(1), b.submit(2)]
        with pytest.raises(QueueFull):
            b.submit(3)
        assert b.queue_length == 2 and b.in_flight == 1
        release.set()
        assert await running == 0 and [await f for f in queued] == [1, 2]
    finally:
        release.set()
        await b.stop()


async def test_forward_runs_off_the_event_loop() -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []
    released: list[bool] = []
    started, release = threading.Event(), threading.Event()

    def forward(items: list[int]) -> list[int]:
        seen.append(threading.get_ident())
        started.set()
        released.append(release.wait(5))  # only the event loop sets it: it must run meanwhile
        return items

    b: Batcher[int, int] = Batcher(forward, max_batch_size=1, batch_wait_timeout_s=0.0)
    b.start()
    try:
        task = asyncio.ensure_future(b(1))
        await entered(started)
        assert not task.done()
        release.set()
        assert await task == 1
    finally:
        release.set()
        await b.stop()
    assert seen and seen[0] != loop_thread
    assert released == [True], "the forward blocked the event loop"


async def test_submit_needs_a_running_batcher_and_stop_fails_queued_items() -> None:
    release, started = threading.Event(), threading.Event()

    def blocked(items: list[int]) -> list[int]:
        started.set()
        release.wait(5)
        return items

    b: Batcher[int, int] = Batcher(blocked, max_batch_size=1, batch_wait_timeout_s=0.0)
    with pytest.raises(BatcherStopped):
        b.submit(1)
    b.start()
    first = b.submit(1)
    await entered(started)  # item 1 is in the forward; item 2 stays queued
    queued = b.submit(2)
    stopping = asyncio.ensure_future(b.stop())
    await eventually_async(
        lambda: not b.running, interval_s=0
    )  # stop() has cancelled the loop while the forward still runs
    release.set()
    await stopping
    with pytest.raises(BatcherStopped):
        await queued
    with pytest.raises(BatcherStopped):
        await first


async def test_stop_during_collection_fails_the_requests_already_taken() -> None:
    calls: list[list[int]] = []
    # A long wait budget: the loop holds the first items in a partial batch, waiting for more.
    b: Batcher[int, int] = Batcher(recording(calls), max_batch_size=10, batch_wait_timeout_s=60.0)
    b.start()
    taken = [b.submit(1), b.submit(2)]
    await eventually_async(lambda: b.queue_length == 0, interval_s=0)  # the batching loop took the items
    await b.stop()
    assert all(f.done() for f in taken), "stop() left requests of the partial batch unresolved"
    for f in taken:
        with pytest.raises(BatcherStopped):
            f.result()
    assert calls == []  # stopped before the batch ran: nothing was computed


def test_invalid_configuration_is_refused() -> None:
    with pytest.raises(ValueError, match="max_batch_size"):
        Batcher(lambda x: x, max_batch_size=0)
    with pytest.raises(ValueError, match="max_queue"):
        Batcher(lambda x: x, max_queue=0)
