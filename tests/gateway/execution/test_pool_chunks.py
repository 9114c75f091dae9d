"""Chunked dispatch of sync calls (services/gateway/execution/pool.py, chunking.py), on a real pebble pool.

Calls submitted together for one function share pool tasks once the function's cost is known; every call
still gets the result it gets alone, and a hung, crashing or unpicklable call fails only itself."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pebble
import pytest

from bench.harness.waiting import eventually_async
from rewardfleet.services.gateway.execution import pool as pool_module
from rewardfleet.services.gateway.execution.chunking import chunk_sizes
from rewardfleet.services.gateway.execution.loader import FunctionRef, file_module_name
from rewardfleet.services.gateway.execution.pool import WorkerPool

FAULTY = Path(__file__).resolve().parents[1] / "reliability" / "fns" / "faulty.py"


def _ref() -> FunctionRef:
    return FunctionRef(file_module_name(FAULTY), "compute_score", str(FAULTY))


def _kwargs(i: int, fault: str | None = None) -> dict[str, Any]:
    return {
        "data_source": "t",
        "solution_str": "x" * i,
        "ground_truth": "",
        "extra_info": {"fault": fault} if fault else {},
    }


@pytest.fixture
async def pool() -> AsyncIterator[WorkerPool]:
    p = WorkerPool(2, ())
    await p.warm_up()
    yield p
    p.close()


class _CountingSchedule:
    """Counts the tasks the pool schedules (wraps pebble's `schedule`)."""

    def __init__(self, pool: WorkerPool) -> None:
        self.tasks: list[int] = []
        inner = pool._pool.schedule

        def schedule(fn: Any, args: Any = (), **kw: Any) -> Any:
            self.tasks.append(len(args[1]) if fn is pool_module.run_calls else 1)
            return inner(fn, args=args, **kw)

        pool._pool.schedule = schedule  # type: ignore[method-assign]


def test_chunk_sizes_follow_cost_and_spread() -> None:
    assert chunk_sizes(5, 2, None, 10.0) == [1, 1, 1, 1, 1]  # cost unknown: one call per task
    assert chunk_sizes(1000, 4, 1e-5, 10.0) == [63] * 15 + [55]  # cheap: spread over 16 chunks
    assert chunk_sizes(10, 2, 0.05, 10.0) == [1] * 10  # a call over the chunk budget goes alone
    assert chunk_sizes(100, 1, 0.001, 0.05) == [5] * 20  # the budget shrinks with a short timeout
    assert sum(chunk_sizes(4097, 3, 1e-6, 30.0)) == 4097
    assert chunk_sizes(0, 2, 1e-6, 1.0) == []


async def test_batched_calls_share_tasks_and_match_single_calls(pool: WorkerPool) -> None:
    ref = _ref()
    alone = [await pool.submit(ref, _kwargs(i), 10.0, None) for i in range(8)]  # also teaches the cost
    counter = _CountingSchedule(pool)
    together = await asyncio.gather(*(pool.submit(ref, _kwargs(i), 10.0, None) for i in range(64)))
    assert [r[:2] for r in together[:8]] == [r[:2] for r in alone]
    assert [r[1][0] for r in together] == [float(i % 7) for i in range(64)]
    assert len(counter.tasks) < 64 and sum(counter.tasks) == 64, counter.tasks
    assert pool.in_flight == 0


async def test_calls_wait_for_a_free_worker_and_go_out_together(pool: WorkerPool) -> None:
    """Single posts arrive one call per event-loop turn. While both workers have a chunk running and one
    waiting (here: four hung calls), such calls are held, then sent in chunks when a chunk ends."""
    ref = _ref()
    for i in range(4):
        await pool.submit(ref, _kwargs(i), 10.0, None)
    hung, sent = [], _CountingSchedule(pool)
    for i in range(4):  # a turn each: four one-call chunks, the pool's limit for 2 workers
        hung.append(asyncio.ensure_future(pool.submit(ref, _kwargs(i, "hang"), 1.0, None)))
        # one event-loop turn (not a timer): the next call arrives in a turn of its own
        await asyncio.sleep(0)
    await eventually_async(lambda: sent.tasks == [1, 1, 1, 1], what="the four hung calls handed to pebble")
    counter = _CountingSchedule(pool)
    held = []
    for i in range(20):
        held.append(asyncio.ensure_future(pool.submit(ref, _kwargs(i), 10.0, None)))
        await asyncio.sleep(0)  # one loop turn per call: each arrives on its own (not a timer)
    assert counter.tasks == []  # nothing scheduled while every worker is busy
    results = await asyncio.gather(*held)
    assert [r[1][0] for r in results] == [float(i % 7) for i in range(20)]
    assert len(counter.tasks) < 20 and sum(counter.tasks) == 20, counter.tasks
    for outcome in await asyncio.gather(*hung, return_exceptions=True):
        assert isinstance(outcome, concurrent.futures.TimeoutError)
    assert pool.in_flight == 0


async def test_an_idle_pool_gets_a_call_at_once(pool: WorkerPool) -> None:
    ref = _ref()
    for i in range(4):
        await pool.submit(ref, _kwargs(i), 10.0, None)
    counter = _CountingSchedule(pool)
    call = asyncio.ensure_future(pool.submit(ref, _kwargs(3), 10.0, None))
    for _ in range(6):  # the call's task, the flush, the chunk, the call: a few turns, nothing waited for
        await asyncio.sleep(0)
    assert counter.tasks == [1]
    assert (await call)[1][0] == 3.0


async def test_hung_call_times_out_alone_and_its_neighbours_are_scored(pool: WorkerPool) -> None:
    ref = _ref()
    for i in range(4):
        await pool.submit(ref, _kwargs(i), 10.0, None)
    counter = _CountingSchedule(pool)
    kwargs = [_kwargs(i, "hang" if i == 5 else None) for i in range(12)]
    results = await asyncio.gather(*(pool.submit(ref, k, 1.0, None) for k in kwargs), return_exceptions=True)
    assert isinstance(results[5], concurrent.futures.TimeoutError)
    for i, r in enumerate(results):
        if i != 5:
            assert not isinstance(r, BaseException), (i, r)
            assert r[0] == "ok" and r[1][0] == float(i % 7)
    assert any(n > 1 for n in counter.tasks)  # the hang was inside a chunk, then re-run alone


async def test_crashing_call_fails_alone(pool: WorkerPool) -> None:
    ref = _ref()
    for i in range(4):
        await pool.submit(ref, _kwargs(i), 10.0, None)
    kwargs = [_kwargs(i, "exit" if i == 3 else None) for i in range(12)]
    results = await asyncio.gather(*(pool.submit(ref, k, 10.0, None) for k in kwargs), return_exceptions=True)
    assert isinstance(results[3], pebble.ProcessExpired)
    assert all(r[0] == "ok" for i, r in enumerate(results) if i != 3)  # type: ignore[index]


async def test_unpicklable_argument_fails_alone(pool: WorkerPool) -> None:
    ref = _ref()
    for i in range(4):
        await pool.submit(ref, _kwargs(i), 10.0, None)
    kwargs = [_kwargs(i) for i in range(12)]
    kwargs[7]["extra_info"]["lock"] = threading.Lock()
    results = await asyncio.gather(*(pool.submit(ref, k, 10.0, None) for k in kwargs), return_exceptions=True)
    assert isinstance(results[7], TypeError)
    assert all(r[0] == "ok" for i, r in enumerate(results) if i != 7)  # type: ignore[index]


async def test_cancelled_callers_do_not_disturb_the_rest(pool: WorkerPool) -> None:
    ref = _ref()
    for i in range(4):
        await pool.submit(ref, _kwargs(i), 10.0, None)
    tasks = [asyncio.ensure_future(pool.submit(ref, _kwargs(i), 10.0, None)) for i in range(16)]
    await asyncio.sleep(0)  # one loop turn: every call is queued (not a timer)
    tasks[2].cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(results[2], asyncio.CancelledError)
    assert [r[1][0] for i, r in enumerate(results) if i != 2] == [  # type: ignore[index]
        float(i % 7) for i in range(16) if i != 2
    ]
    assert pool.in_flight == 0
