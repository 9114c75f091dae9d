"""Weighted fair queuing of a saturated pool's calls across tenants, priority classes first.

`FairScheduler` is start-time fair queuing (Goyal, Vin and Cheng, 1996), the virtual-time scheme Kubernetes'
API Priority and Fairness also builds on: a call of tenant t gets the start tag max(v, F_t) and tenant t's
finish tag becomes start + 1/weight_t; `v` (virtual time) is the start tag of the call last given a slot.
When a slot frees, the waiter with the lowest (priority rank, start tag) gets it. A tenant posting ten times
its share only lengthens its own queue: its tags run ahead of virtual time, and another tenant's call, tagged
at `v`, is next. An idle tenant banks no credit (its next tag starts at `v`). Each call costs 1 (a slot).

`FairGate` puts one scheduler in front of each function gate (reliability/function_limits.py in-process,
state_store/redis_budget.py fleet-wide): the fair queue decides the order, the inner gate still enforces
max_concurrency, RPM and TPM. Each replica orders its own waiters; see docs/tenants.md for the bound across
replicas.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from rewardfleet.services.gateway.tenants.context import current
from rewardfleet.services.gateway.tenants.metrics import TenantMetrics

NO_TENANT = ""


class FairScheduler:
    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("FairScheduler needs capacity >= 1")
        self.capacity = capacity
        self.busy = 0
        self.vtime = 0.0
        self._finish: dict[str, float] = {}  # tenant -> finish tag of its last call (configured tenants only)
        self._heap: list[tuple[int, float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    @property
    def waiting(self) -> int:
        return sum(1 for *_, fut in self._heap if not fut.cancelled())

    def _tag(self, tenant: str, weight: float) -> float:
        start = max(self.vtime, self._finish.get(tenant, 0.0))
        self._finish[tenant] = start + 1.0 / weight
        return start

    async def acquire(self, tenant: str, weight: float, rank: int) -> None:
        start = self._tag(tenant, weight)
        if self.busy < self.capacity and not self._heap:
            self.busy += 1
            self.vtime = max(self.vtime, start)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, (rank, start, next(self._seq), fut))
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release()  # given the slot as it was cancelled: pass it on
            else:
                fut.cancel()  # left in the heap, skipped by release
            raise

    def release(self) -> None:
        """A slot is free: the next waiter (lowest rank, then start tag) takes it, else it is idle."""
        while self._heap:
            _, start, _, fut = heapq.heappop(self._heap)
            if fut.cancelled():
                continue
            self.vtime = max(self.vtime, start)
            fut.set_result(None)  # the slot passes straight on: `busy` is unchanged
            return
        self.busy -= 1


class FairGate:
    """A function's gate with a fair queue in front (see the module docstring).

    Two shapes, by what the inner gate is:
    - `slots` (an in-process gate with `max_concurrency`): the queue holds the function's slots itself, so the
      inner semaphore never makes anyone wait; the fairest order, one call per freed slot;
    - entry (a fleet-wide gate on Redis, or a gate of RPM/TPM only): the queue lets one call at a time wait
      at the inner gate, and lets the next go once that one is in. Whatever the inner gate waits for (a
      fleet-wide slot, FIFO across replicas, or a token bucket), at most one of this replica's calls is
      waiting there, so a call let through by the fair queue is never behind this replica's flood."""

    def __init__(
        self,
        inner: Any,
        slots: int | None,
        fn_name: str,
        metrics: TenantMetrics,
        last_rank: int,
    ) -> None:
        self.inner = inner
        self.entry_only = slots is None
        self.scheduler = FairScheduler(1 if slots is None else slots)
        self.fn_name = fn_name
        self.metrics = metrics
        self.last_rank = last_rank

    @asynccontextmanager
    async def hold(self, tokens: int) -> AsyncIterator[Any]:
        caller = current.get()
        if caller is None:
            tenant, weight, rank = NO_TENANT, 1.0, self.last_rank
        else:
            tenant, weight, rank = caller.tenant, caller.config.weight, caller.rank
        started = time.perf_counter()
        queued = self.metrics.fair_queued.labels(tenant) if caller is not None else None
        if queued is not None:
            queued.inc()
        try:
            await self.scheduler.acquire(tenant, weight, rank)
        finally:
            if queued is not None:
                queued.dec()
        async with AsyncExitStack() as stack:
            try:
                charge = await stack.enter_async_context(self.inner.hold(tokens))
            except BaseException:
                self.scheduler.release()
                raise
            if self.entry_only:
                self.scheduler.release()  # in: the next may wait at the inner gate
            else:
                stack.callback(self.scheduler.release)  # the slot is held until the call ends
            if caller is not None:
                self.metrics.fair_wait.labels(tenant, self.fn_name).observe(time.perf_counter() - started)
            yield charge
