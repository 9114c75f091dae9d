"""An external pool's per-function budget with a fair entry (tenants/fair_pools.py `FairBudget`): while the
budget makes calls wait (a minute's RPM spent), one call of this replica waits at it and the next in fair
order is behind that one, so a late tenant is not behind another's flood; priority classes first.

A real `Budget`'s wait is a minute of wall clock, so the inner budget here is a turnstile the test turns one
call at a time: what is tested is the order `FairBudget` lets calls reach it in."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry

from rewardfleet.services.gateway.config.tenants import TenantConfig
from rewardfleet.services.gateway.limits.rate_limits import Budget
from rewardfleet.services.gateway.tenants.context import Caller, current
from rewardfleet.services.gateway.tenants.fair_pools import FairBudget, fair_budgets
from rewardfleet.services.gateway.tenants.metrics import TenantMetrics


class Turnstile:
    """`Budget.acquire`'s shape: waits until the test lets one call through."""

    def __init__(self) -> None:
        self.turns = asyncio.Semaphore(0)
        self.waiting = 0
        self.arrived = asyncio.Event()

    async def acquire(self) -> float:
        self.waiting += 1
        self.arrived.set()
        await self.turns.acquire()
        self.waiting -= 1
        return 0.0


async def _served(arrivals: list[tuple[str, int]]) -> list[str]:
    inner = Turnstile()
    budget = FairBudget(inner, TenantMetrics(CollectorRegistry()), last_rank=1, label="pool:hosted")
    served: list[str] = []

    async def call(tenant: str, rank: int) -> None:
        current.set(Caller(tenant, TenantConfig(), rank, "default", frozenset()))
        await budget.acquire()
        served.append(tenant)

    tasks = [asyncio.create_task(call("a", 1)) for _ in range(10)]
    await asyncio.sleep(0)  # one scheduler pass (not a timer): a's calls queue first
    tasks += [asyncio.create_task(call(t, r)) for t, r in arrivals]
    await asyncio.sleep(0)  # ... and the later arrivals behind them
    for _ in tasks:
        while inner.waiting == 0:  # the next call in fair order has reached the budget
            inner.arrived.clear()
            await inner.arrived.wait()
        inner.turns.release()
    await asyncio.gather(*tasks)
    return served


async def test_a_late_tenant_is_not_behind_a_flood() -> None:
    served = await _served([("b", 1)] * 3)
    late = [i for i, t in enumerate(served) if t == "b"]
    assert late == [1, 3, 5], served  # the first a is already at the budget; then b alternates with a


async def test_priority_class_first() -> None:
    served = await _served([("e", 0)] * 3)
    assert [i for i, t in enumerate(served) if t == "e"] == [1, 2, 3], served


async def test_wraps_a_real_budget() -> None:
    """What the external pool gets: `Budget` behind a fair entry, its token accounting untouched."""
    wrapped = fair_budgets(TenantMetrics(CollectorRegistry()), 1, "hosted")(Budget(rpm=5, tpm=None))
    current.set(Caller("a", TenantConfig(), 1, "default", frozenset()))
    assert await wrapped.acquire() >= 0.0
    wrapped.spend_tokens(7)
    assert wrapped.inner.wait_s() == 0.0 and wrapped.rpm == 5
