"""The fair scheduler's order: weights share a saturated pool, a flooding tenant waits behind its own calls,
priority classes go first, and a cancelled waiter never loses a slot."""

from __future__ import annotations

import asyncio

import pytest

from bench.harness.waiting import eventually_async
from rewardfleet.services.gateway.tenants.fair import FairScheduler


async def _order(scheduler: FairScheduler, arrivals: list[tuple[str, float, int]]) -> list[str]:
    """Queue `arrivals` (tenant, weight, rank) behind one busy slot, then free slots one at a time."""
    await scheduler.acquire("warm", 1.0, 0)  # holds the only slot: everything below waits
    served: list[str] = []

    async def one(tenant: str, weight: float, rank: int) -> None:
        await scheduler.acquire(tenant, weight, rank)
        served.append(tenant)

    tasks = [asyncio.create_task(one(*arrival)) for arrival in arrivals]
    await asyncio.sleep(0)  # one scheduler pass (not a timer): every arrival queued, in order
    for _ in arrivals:
        scheduler.release()
        await asyncio.sleep(0)  # one pass: the waiter granted the slot runs
    await asyncio.gather(*tasks)
    return served


async def test_weights_share_the_pool() -> None:
    arrivals = [("a", 2.0, 1)] * 20 + [("b", 1.0, 1)] * 20
    served = await _order(FairScheduler(1), arrivals)
    first = served[:15]
    assert first.count("a") == 10 and first.count("b") == 5


async def test_a_flood_does_not_delay_a_late_tenant() -> None:
    arrivals = [("a", 1.0, 1)] * 50 + [("b", 1.0, 1)] * 3
    served = await _order(FairScheduler(1), arrivals)
    assert [i for i, t in enumerate(served) if t == "b"] == [1, 3, 5]  # b alternates with a at once


async def test_priority_classes_first() -> None:
    arrivals = [("train", 10.0, 1)] * 5 + [("eval", 1.0, 0)] * 3
    served = await _order(FairScheduler(1), arrivals)
    assert served[:3] == ["eval"] * 3


async def test_a_cancelled_waiter_passes_its_slot_on() -> None:
    scheduler = FairScheduler(1)
    await scheduler.acquire("a", 1.0, 0)
    gone = asyncio.create_task(scheduler.acquire("b", 1.0, 0))
    kept = asyncio.create_task(scheduler.acquire("c", 1.0, 0))
    await asyncio.sleep(0)  # one scheduler pass (not a timer)
    gone.cancel()
    scheduler.release()
    await asyncio.wait_for(kept, 5)
    with pytest.raises(asyncio.CancelledError):
        await gone
    scheduler.release()
    assert scheduler.busy == 0 and scheduler.waiting == 0


async def test_granted_then_cancelled_releases() -> None:
    scheduler = FairScheduler(1)
    await scheduler.acquire("a", 1.0, 0)
    waiter = asyncio.create_task(scheduler.acquire("b", 1.0, 0))
    await asyncio.sleep(0)  # one scheduler pass (not a timer)
    scheduler.release()  # b is given the slot ...
    waiter.cancel()  # ... and cancelled before it ran
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert scheduler.busy == 0


async def test_entry_mode_keeps_one_waiter_at_the_inner_gate() -> None:
    """In front of a gate it does not own (a fleet-wide one), the queue lets one call at a time wait there:
    a late tenant's call is next, not behind every call of the flooding tenant."""
    from prometheus_client import CollectorRegistry

    from rewardfleet.services.gateway.config.tenants import TenantConfig
    from rewardfleet.services.gateway.limits.function_limits import FunctionGate
    from rewardfleet.services.gateway.tenants.context import Caller, current
    from rewardfleet.services.gateway.tenants.fair import FairGate
    from rewardfleet.services.gateway.tenants.metrics import TenantMetrics

    inner = FunctionGate(1, None, None)  # stands in for a gate the queue does not own
    gate = FairGate(inner, None, "judge", TenantMetrics(CollectorRegistry()), last_rank=1)
    served: list[str] = []

    async def call(tenant: str) -> None:
        current.set(Caller(tenant, TenantConfig(), 1, "default", frozenset()))
        async with gate.hold(1):
            served.append(tenant)
            await asyncio.sleep(0.01)  # the call's own work while it holds the slot (the behaviour)

    flood = [asyncio.create_task(call("a")) for _ in range(10)]
    await eventually_async(lambda: served, interval_s=0, what="the flood's first call holding the slot")
    late = [asyncio.create_task(call("b")) for _ in range(2)]
    await asyncio.gather(*flood, *late)
    assert max(i for i, t in enumerate(served) if t == "b") <= 5, served


async def _flood(scheduler: FairScheduler, tenant: str, calls: int) -> list[asyncio.Task[str]]:
    tasks = [asyncio.create_task(scheduler.acquire(tenant, 1.0, 1)) for _ in range(calls)]
    await asyncio.sleep(0)  # one scheduler pass (not a timer): every call granted or queued
    return tasks


async def test_a_tenant_within_its_share_is_served_at_once_while_another_floods() -> None:
    scheduler = FairScheduler(16, headroom=2)
    await scheduler.acquire("b", 1.0, 1)  # b has work in the pool
    flood = await _flood(scheduler, "a", 60)
    assert scheduler.held("a") == 13  # a, over its share, stops 2 short of full: 16 - 2 - b's 1
    for _ in range(2):
        await asyncio.wait_for(scheduler.acquire("b", 1.0, 1), 1)  # the headroom: at once
    late = asyncio.create_task(scheduler.acquire("b", 1.0, 1))  # the pool is full now
    await asyncio.sleep(0)  # one scheduler pass (not a timer)
    assert not late.done()
    scheduler.release("a")
    await asyncio.wait_for(late, 1)  # a's freed slot goes to b, not to a's 47 waiting calls
    for _ in range(3):
        scheduler.release("a")
    await asyncio.sleep(0)  # one scheduler pass (not a timer)
    # a borrows again only above the headroom: 16 - 2 - b's 4
    assert (scheduler.held("a"), scheduler.held("b"), scheduler.busy) == (10, 4, 14)
    for task in flood:
        task.cancel()
    await asyncio.gather(*flood, return_exceptions=True)


async def test_a_flooding_tenant_gets_its_share_back_as_slots_free() -> None:
    scheduler = FairScheduler(16, headroom=2)
    for _ in range(10):
        await scheduler.acquire("b", 1.0, 1)  # b at its share (8) + the headroom
    flood = await _flood(scheduler, "a", 60)
    assert scheduler.held("a") == 6  # the free slots, taken while a's demand was still within its share
    for _ in range(2):
        scheduler.release("b")
    await asyncio.sleep(0)  # one scheduler pass (not a timer)
    # a (demand 66) borrows only above the headroom: share - headroom while b is within its share
    assert (scheduler.held("a"), scheduler.held("b"), scheduler.busy) == (6, 8, 14)
    scheduler.release("b")
    await asyncio.sleep(0)  # one scheduler pass (not a timer)
    assert (scheduler.held("a"), scheduler.held("b"), scheduler.busy) == (7, 7, 14)
    for _ in range(7):
        scheduler.release("b")  # b leaves: a alone takes every slot (work-conserving)
    await asyncio.sleep(0)  # one scheduler pass (not a timer)
    assert (scheduler.held("a"), scheduler.held("b"), scheduler.busy) == (16, 0, 16)
    for task in flood:
        task.cancel()
    await asyncio.gather(*flood, return_exceptions=True)
    granted = sum(1 for task in flood if not task.cancelled())
    assert granted == 16 and scheduler.waiting == 0


async def test_both_flooding_share_by_weight() -> None:
    scheduler = FairScheduler(12, headroom=2)
    heavy = [asyncio.create_task(scheduler.acquire("a", 2.0, 1)) for _ in range(40)]
    await asyncio.sleep(0)  # one scheduler pass (not a timer)
    assert scheduler.held("a") == 12  # alone: every slot
    light = [asyncio.create_task(scheduler.acquire("b", 1.0, 1)) for _ in range(40)]
    await asyncio.sleep(0)  # one scheduler pass (not a timer)
    for _ in range(30):  # slots churn: each release goes to the waiter the rule and the fair order pick
        scheduler.release(max(("a", "b"), key=scheduler.held))
        await asyncio.sleep(0)  # one scheduler pass (not a timer)
    assert (scheduler.held("a"), scheduler.held("b")) == (8, 4)  # shares 2:1, both over them
    for task in heavy + light:
        task.cancel()
    await asyncio.gather(*heavy, *light, return_exceptions=True)


async def test_release_without_a_tenant_frees_the_slot_this_task_took() -> None:
    """The older form `release()` (another wrapper's code): the slot of the tenant this task acquired."""
    scheduler = FairScheduler(2, headroom=0)

    async def call(tenant: str) -> int:
        await scheduler.acquire(tenant, 1.0, 1)
        held = scheduler.held(tenant)
        scheduler.release()
        return held

    assert await asyncio.gather(call("a"), call("b")) == [1, 1]
    assert scheduler.busy == 0 and scheduler.held("a") == scheduler.held("b") == 0
    scheduler.release()  # nothing held: a stray release frees nothing
    assert scheduler.busy == 0


def test_headroom_must_leave_a_slot_to_borrow() -> None:
    with pytest.raises(ValueError, match="headroom"):
        FairScheduler(4, headroom=4)
