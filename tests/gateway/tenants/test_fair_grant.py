"""`FairScheduler.grant`: several waiters let in in one pass, in the order one-at-a-time releases give them
(weights, priority classes, a late tenant), marked as granted, and a lost grant reported once."""

from __future__ import annotations

import asyncio

import pytest

from rewardfleet.services.gateway.tenants.fair import FairScheduler

ARRIVALS = (
    [("a", 2.0, 1)] * 12
    + [("b", 1.0, 1)] * 6
    + [("eval", 1.0, 0)] * 3
    + [("a", 2.0, 1)] * 5
    + [("c", 1.0, 1)] * 2
)


async def _queue(scheduler: FairScheduler) -> tuple[list[str], list[bool], list[asyncio.Task[None]]]:
    await scheduler.acquire("warm", 1.0, 0)  # holds the only slot: everything below waits
    served: list[str] = []
    granted: list[bool] = []

    async def one(tenant: str, weight: float, rank: int) -> None:
        await scheduler.acquire(tenant, weight, rank)
        served.append(tenant)
        granted.append(scheduler.granted_by_grant())

    tasks = [asyncio.create_task(one(*arrival)) for arrival in ARRIVALS]
    await asyncio.sleep(0)  # one event-loop turn (not a timer)
    return served, granted, tasks


async def test_grant_lets_in_several_in_the_order_releases_would() -> None:
    one_by_one = FairScheduler(1)
    expected, marks, tasks = await _queue(one_by_one)
    for _ in ARRIVALS:
        one_by_one.release()
        await asyncio.sleep(0)  # one event-loop turn (not a timer)
    await asyncio.gather(*tasks)
    assert not any(marks)

    batched = FairScheduler(1)
    served, marks, tasks = await _queue(batched)
    sizes = [5, 1, 9, 100]
    for size in sizes:
        got = batched.grant(size)
        assert got == min(size, len(ARRIVALS) - len(served))
        await asyncio.sleep(0)  # one event-loop turn (not a timer)
        assert len(served) == min(len(ARRIVALS), sum(sizes[: sizes.index(size) + 1]))  # together, one turn
    await asyncio.gather(*tasks)
    assert served == expected and len(served) == len(ARRIVALS)
    assert all(marks)
    assert batched.busy == 1 + len(ARRIVALS)  # each granted waiter holds a slot until it releases
    assert batched.grant(3) == 0  # nobody waits


async def test_a_granted_waiter_cancelled_before_it_resumes_is_reported_and_gives_its_slot_back() -> None:
    scheduler = FairScheduler(1)
    lost: list[str] = []
    scheduler.on_lost_grant = lost.append
    await scheduler.acquire("a", 1.0, 0)
    gone = asyncio.create_task(scheduler.acquire("b", 1.0, 0))
    kept = asyncio.create_task(scheduler.acquire("c", 1.0, 0))
    await asyncio.sleep(0)  # one event-loop turn (not a timer)
    assert scheduler.grant(1) == 1  # b, then cancelled before it runs
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert lost == ["b"] and scheduler.busy == 1
    scheduler.release("a")  # c takes a's slot by the ordinary dispatch
    assert await asyncio.wait_for(kept, 5) == "c"
    assert lost == ["b"] and scheduler.busy == 1
