"""The sample deadline (a timeout verdict) and a cancelled call kill everything the program started; slots
bound the sandboxes running at once and hand out distinct slot numbers."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from bench.harness.waiting import eventually_async
from rewardfleet.reward_fns import code
from rewardfleet.reward_fns._sandbox.slots import SlotPool, pool_for
from tests.code_sandbox.support import sandbox_processes

LOOP_FOREVER = "import posix\nposix.fork()\nwhile True:\n    pass"
CASES = {"inputs": ["1"], "outputs": ["1"]}


async def _until_no_sandbox_process(patience_s: float = 10.0) -> list[int]:
    with contextlib.suppress(AssertionError):
        await eventually_async(lambda: not sandbox_processes(), timeout_s=patience_s, interval_s=0.1)
    return sandbox_processes()


async def test_sample_deadline_is_a_timeout_verdict_and_kills_everything() -> None:
    # Running out of sample_timeout_s is the program's slowness: a verdict scored 0, not a sample error
    # (which would let a program that cannot solve a problem trade its 0 for no score at all).
    started = time.monotonic()
    result = await code.compute_score(
        data_source="apps",
        solution_str=LOOP_FOREVER,
        ground_truth=CASES,
        sandbox={"case_timeout_s": 60, "sample_timeout_s": 1.5, "slots": 1},
    )
    assert result == {"score": 0.0, "all_passed": False, "verdicts": ["timeout"]}
    assert time.monotonic() - started < 1.5 + 5.0
    assert await _until_no_sandbox_process() == []


async def test_a_cancelled_call_kills_its_sandbox() -> None:
    # The gateway cancels a call at its function timeout_s; the sandbox must not outlive it.
    call = code.compute_score(
        data_source="apps", solution_str=LOOP_FOREVER, ground_truth=CASES, sandbox={"case_timeout_s": 60}
    )
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(call, 1.5)
    assert await _until_no_sandbox_process() == []


async def test_slots_bound_concurrency_fifo() -> None:
    pool = SlotPool(2, first=5)
    running, peak, seen = 0, 0, []

    async def job() -> None:
        nonlocal running, peak
        async with pool.hold() as slot:
            running += 1
            peak = max(peak, running)
            seen.append(slot)
            await asyncio.sleep(0.01)  # the job's own work while it holds the slot
            running -= 1

    await asyncio.gather(*(job() for _ in range(7)))
    assert peak == 2 and set(seen) == {5, 6} and pool.busy == 0


async def test_pools_per_backend_have_distinct_slot_numbers() -> None:
    first, second = pool_for("bubblewrap", 2), pool_for("bubblewrap", 3)
    assert pool_for("bubblewrap", 2) is first
    async with first.hold() as a, first.hold() as b, second.hold() as c:
        assert len({a, b, c}) == 3
