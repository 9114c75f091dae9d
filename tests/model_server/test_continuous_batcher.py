"""Unit tests of the continuous-batching loop (`ContinuousBatcher`) around a scripted running batch: joining
between steps, the slot limit, a client leaving mid-decode, per-item refusals, a failing step, stop()."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from bench.harness.waiting import eventually_async
from rewardfleet.services.model_server.batcher import BatcherStopped, BatchStats
from rewardfleet.services.model_server.continuous import ContinuousBatcher


class ScriptedBatch:
    """Items are (name, steps): a row finishes after `steps` steps; its answer is `name` plus the step count.
    A negative `steps` is refused at admission. Records what the loop asked for, step by step."""

    def __init__(self) -> None:
        self.rows: list[list[Any]] = []  # [name, steps left, steps done]
        self.log: list[tuple[str, list[str]]] = []
        self.gate: threading.Event | None = None  # when set, every step waits for it
        self.fail_next = False

    def __len__(self) -> int:
        return len(self.rows)

    def admit(self, items: list[tuple[str, int]]) -> list[Any]:
        self.log.append(("admit", [name for name, _ in items]))
        out: list[Any] = []
        for name, steps in items:
            if steps < 0:
                out.append(ValueError(f"{name} refused"))
            else:
                row = [name, steps, 0]
                self.rows.append(row)
                out.append(row)
        return out

    def remove(self, rows: list[Any]) -> None:
        if rows:
            self.log.append(("remove", [r[0] for r in rows]))
        self.rows = [r for r in self.rows if all(r is not g for g in rows)]

    def step(self) -> list[Any]:
        if self.gate is not None:
            self.gate.wait(5)
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("the step broke")
        self.log.append(("step", [r[0] for r in self.rows]))
        for r in self.rows:
            r[1] -= 1
            r[2] += 1
        done = [r for r in self.rows if r[1] <= 0]
        self.rows = [r for r in self.rows if r[1] > 0]
        return done

    def result(self, row: list[Any]) -> str:
        return f"{row[0]}:{row[2]}"


@pytest.fixture
def executor() -> Any:
    pool = ThreadPoolExecutor(max_workers=1)
    yield pool
    pool.shutdown(wait=True)


def _batcher(executor: ThreadPoolExecutor, batch: ScriptedBatch, **kw: Any) -> ContinuousBatcher:
    return ContinuousBatcher(lambda: batch, name="generate", executor=executor, **kw)


async def test_requests_join_between_steps_and_leave_when_done(executor: ThreadPoolExecutor) -> None:
    batch, stats = ScriptedBatch(), list[BatchStats]()
    b = _batcher(executor, batch, batch_wait_timeout_s=0.0, on_batch=stats.append)
    b.start()
    try:
        batch.gate = threading.Event()
        long = b.submit(("long", 6))
        await eventually_async(lambda: b.in_flight == 1)  # decoding (its first step waits at the gate)
        short = b.submit(("short", 2))
        batch.gate.set()
        assert await short == "short:2"  # finished while `long` still runs: it did not wait for it
        assert not long.done()
        assert await long == "long:6"
    finally:
        await b.stop()
    assert ("admit", ["short"]) in batch.log
    joined_at = batch.log.index(("admit", ["short"]))
    assert batch.log[joined_at + 1] == ("step", ["long", "short"])  # both rows advance in the same step
    assert batch.log[-1] == ("step", ["long"])
    assert [s.size for s in stats][:2] == [1, 2] and all(s.forward_s >= 0 for s in stats)
    assert b.in_flight == 0 and b.queue_length == 0


async def test_slots_are_limited_and_refilled(executor: ThreadPoolExecutor) -> None:
    batch = ScriptedBatch()
    b = _batcher(executor, batch, max_batch_size=2, batch_wait_timeout_s=0.05)
    b.start()
    try:
        results = await asyncio.gather(*(b(("r" + str(i), 1 + i)) for i in range(5)))
    finally:
        await b.stop()
    assert results == [f"r{i}:{1 + i}" for i in range(5)]
    assert max(len(names) for kind, names in batch.log if kind == "step") == 2
    assert [names for kind, names in batch.log if kind == "admit"] == [["r0", "r1"], ["r2"], ["r3"], ["r4"]]


async def test_a_client_that_leaves_mid_decode_frees_its_slot(executor: ThreadPoolExecutor) -> None:
    batch = ScriptedBatch()
    b = _batcher(executor, batch, max_batch_size=1, batch_wait_timeout_s=0.0)
    b.start()
    try:
        batch.gate = threading.Event()
        gone = b.submit(("gone", 1000))
        await eventually_async(lambda: b.in_flight == 1)
        waiting = b.submit(("next", 1))
        assert b.queue_length == 1  # the only slot is taken
        gone.cancel()  # what the route does when the client disconnects
        batch.gate.set()
        assert await waiting == "next:1"
    finally:
        await b.stop()
    assert ("remove", ["gone"]) in batch.log
    assert batch.log.index(("remove", ["gone"])) < batch.log.index(("admit", ["next"]))


async def test_a_refused_item_fails_alone(executor: ThreadPoolExecutor) -> None:
    batch = ScriptedBatch()
    b = _batcher(executor, batch, batch_wait_timeout_s=0.05)
    b.start()
    try:
        ok, bad = b.submit(("ok", 2)), b.submit(("bad", -1))
        with pytest.raises(ValueError, match="bad refused"):
            await bad
        assert await ok == "ok:2"
    finally:
        await b.stop()


async def test_a_failing_step_fails_its_rows_and_the_loop_goes_on(executor: ThreadPoolExecutor) -> None:
    batch = ScriptedBatch()
    b = _batcher(executor, batch, batch_wait_timeout_s=0.0)
    b.start()
    try:
        batch.fail_next = True
        with pytest.raises(RuntimeError, match="the step broke"):
            await b(("first", 3))
        assert await b(("after", 1)) == "after:1"
    finally:
        await b.stop()


async def test_stop_fails_running_and_queued_requests(executor: ThreadPoolExecutor) -> None:
    batch = ScriptedBatch()
    b = _batcher(executor, batch, max_batch_size=1, batch_wait_timeout_s=0.0)
    b.start()
    batch.gate = threading.Event()
    running = b.submit(("running", 1000))
    await eventually_async(lambda: b.in_flight == 1)
    queued = b.submit(("queued", 1))
    stopping = asyncio.ensure_future(b.stop())
    await eventually_async(lambda: not b.running)  # stop() has cancelled the loop while the step still runs
    batch.gate.set()
    await stopping
    for f in (running, queued):
        with pytest.raises(BatcherStopped):
            await f
    with pytest.raises(BatcherStopped):
        b.submit(("late", 1))
