"""Fair sharing of a saturated pool's calls across tenants.

Fair sharing of a saturated pool's calls across tenants: assured shares and headroom, priority classes
first, weighted fair order.

Who may take a free slot is shares.py's rule: each tenant with work is assured its weighted share, and a
tenant over its share borrows only while `headroom` slots stay free for tenants within theirs. Among the
waiters the rule admits, the order is start-time fair queuing (Goyal, Vin and Cheng, 1996), the virtual-time
scheme Kubernetes' API Priority and Fairness also builds on: a call of tenant t gets the start tag
max(v, F_t) and tenant t's finish tag becomes start + 1/weight_t; `v` is the start tag of the call last given
a slot. An idle tenant banks no credit. Each call costs 1 (a slot).

`FairGate` puts one in front of each function gate (limits/function_limits.py in-process: the scheduler
holds the slots; limits/redis_gate.py fleet-wide: the same rule runs in Redis, each replica's calls of one
tenant ask in FIFO order). docs/tenants.md has the bound across replicas and the measurements.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from contextvars import ContextVar
from typing import Any

from rewardfleet.services.gateway.limits.slot_claim import SlotClaim
from rewardfleet.services.gateway.tenants.context import current
from rewardfleet.services.gateway.tenants.metrics import TenantMetrics
from rewardfleet.services.gateway.tenants.shares import Party, may_take

NO_TENANT = ""


class FairScheduler:
    """`capacity` slots shared by tenants: who may take a slot is shares.py's rule (assured shares, `headroom`
    free slots kept for tenants within their share); among those who may, the lowest (priority rank, start
    tag) goes first. Each tenant's calls wait in its own FIFO. With `headroom` 0 (the default) every waiter
    may take a free slot: plain work-conserving start-time fair queuing, as before.

    `acquire` answers the tenant it charged; `release(tenant)` gives that tenant's slot back. `release()`
    without a tenant (the older form) frees the slot this task took last, else one of the tenant holding
    the most."""

    def __init__(self, capacity: int, headroom: int = 0) -> None:
        if capacity < 1:
            raise ValueError("FairScheduler needs capacity >= 1")
        if headroom < 0 or (headroom and headroom >= capacity):
            raise ValueError(f"FairScheduler headroom must be 0..{capacity - 1}, not {headroom}")
        self.capacity = capacity
        self.headroom = headroom
        self.vtime = 0.0
        self._finish: dict[str, float] = {}  # tenant -> finish tag of its last call
        self._held: dict[str, int] = {}
        self._busy = 0  # sum of _held
        self._parties: dict[str, tuple[float, int]] = {}  # tenant -> (weight, rank) as it last asked
        self._queues: dict[str, deque[tuple[float, asyncio.Future[bool]]]] = {}
        self._waiting: dict[str, int] = {}  # tenant -> its calls waiting (not cancelled)
        self._mine: ContextVar[tuple[str, ...]] = ContextVar(f"fair_held_{id(self)}", default=())
        self._batched: ContextVar[bool] = ContextVar(f"fair_batched_{id(self)}", default=False)
        # Called (with the tenant) when a waiter `grant` let in is cancelled before it resumed (its slot is
        # given back here; the granter's own bookkeeping is the hook's).
        self.on_lost_grant: Callable[[str], None] | None = None

    @property
    def busy(self) -> int:
        return self._busy

    @property
    def waiting(self) -> int:
        return sum(self._waiting.values())

    def held(self, tenant: str) -> int:
        return self._held.get(tenant, 0)

    def _tag(self, tenant: str, weight: float) -> float:
        start = max(self.vtime, self._finish.get(tenant, 0.0))
        self._finish[tenant] = start + 1.0 / weight
        return start

    async def acquire(self, tenant: str, weight: float, rank: int) -> str:
        self._parties[tenant] = (weight, rank)
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._queues.setdefault(tenant, deque()).append((self._tag(tenant, weight), fut))
        self._waiting[tenant] = self._waiting.get(tenant, 0) + 1
        self._dispatch()
        try:
            batched = await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                if fut.result() and self.on_lost_grant is not None:
                    self.on_lost_grant(tenant)
                self._give_back(tenant)  # given the slot as it was cancelled: pass it on
            else:
                fut.cancel()  # left in its queue, skipped by the dispatch
                self._not_waiting(tenant)
                self._dispatch()  # its demand no longer holds the headroom back
            raise
        self._mine.set((*self._mine.get(), tenant))
        self._batched.set(batched)
        return tenant

    def granted_by_grant(self) -> bool:
        """Whether this task's last `acquire` was answered by a `grant` (else by a free slot)."""
        return self._batched.get()

    def release(self, tenant: str | None = None) -> None:
        """A slot of `tenant` is free: the next waiter the rule admits takes it (see the class docstring)."""
        mine = self._mine.get()
        if tenant is None:
            if mine:
                tenant = mine[-1]
            elif self._held:
                tenant = max(self._held, key=lambda t: self._held[t])
            else:
                return
        if tenant in mine:
            last = len(mine) - 1 - mine[::-1].index(tenant)
            self._mine.set(mine[:last] + mine[last + 1 :])
        self._give_back(tenant)

    def grant(self, k: int) -> int:
        """Give up to `k` more waiters a slot now, beyond `capacity`, in the fair order `acquire` uses, in one
        pass (their tasks resume together, in that order); answers how many. For a holder that knows there
        is room for more than the scheduler's own slots (FairWorkerPool: the pool has room for k more calls).
        Each waiter granted holds a slot and releases it as after `acquire`."""
        before = self.busy
        if k > 0:
            self._dispatch(before + k)
        return self.busy - before

    def _give_back(self, tenant: str) -> None:
        left = self._held.get(tenant, 0) - 1
        if left > 0:
            self._held[tenant] = left
        else:
            self._held.pop(tenant, None)
        if left >= 0:
            self._busy -= 1
        self._dispatch()

    def _not_waiting(self, tenant: str) -> None:
        left = self._waiting.get(tenant, 0) - 1
        if left > 0:
            self._waiting[tenant] = left
        else:
            self._waiting.pop(tenant, None)

    def _party(self, tenant: str) -> Party:
        weight, rank = self._parties[tenant]
        return Party(self._held.get(tenant, 0), self._waiting.get(tenant, 0), weight, rank)

    def _dispatch(self, limit: int | None = None) -> None:
        """Give free slots (up to `limit` held, else `capacity`) to waiters: the lowest (rank, start tag)
        among the tenants the rule admits."""
        capacity = self.capacity if limit is None else limit
        if self.headroom == 0 and len(self._queues) == 1:
            self._dispatch_one_tenant(capacity, limit is not None)
            return
        while self._busy < capacity:
            heads: list[tuple[int, float, str]] = []
            for tenant, queue in list(self._queues.items()):
                while queue and queue[0][1].done():
                    queue.popleft()  # cancelled while waiting
                if not queue:
                    del self._queues[tenant]
                    continue
                heads.append((self._parties[tenant][1], queue[0][0], tenant))
            if not heads:
                return
            parties = {t: self._party(t) for t in {*self._held, *self._queues}}
            for _, start, tenant in sorted(heads):
                if may_take(tenant, parties, capacity, self.headroom):
                    _, fut = self._queues[tenant].popleft()
                    self._not_waiting(tenant)
                    self._held[tenant] = self._held.get(tenant, 0) + 1
                    self._busy += 1
                    self.vtime = max(self.vtime, start)
                    fut.set_result(limit is not None)
                    break
            else:
                return

    def _dispatch_one_tenant(self, capacity: int, batched: bool) -> None:
        """`_dispatch` when one tenant waits and there is no headroom: the rule admits it to every free
        slot (nobody else waits, so no class is ahead of it) and its own calls go in FIFO order."""
        ((tenant, queue),) = self._queues.items()
        granted, last_start = 0, self.vtime
        while self._busy + granted < capacity and queue:
            start, fut = queue.popleft()
            if fut.done():
                continue  # cancelled while waiting
            fut.set_result(batched)
            granted += 1
            last_start = start
        if not queue:
            del self._queues[tenant]
        if granted:
            self._held[tenant] = self._held.get(tenant, 0) + granted
            self._busy += granted
            left = self._waiting.get(tenant, 0) - granted
            if left > 0:
                self._waiting[tenant] = left
            else:
                self._waiting.pop(tenant, None)
            self.vtime = max(self.vtime, last_start)


class FairGate:
    """A function's gate with a fair queue in front (see the module docstring).

    Three shapes, by what the inner gate is:
    - `slots` (an in-process gate with `max_concurrency`): the scheduler holds the function's slots itself
      (shares.py's rule, `headroom`), so the inner semaphore never makes anyone wait;
    - fleet slots (a Redis gate with `max_concurrency`, it has `hold_for`): each tenant's calls wait in their
      own FIFO lane and the lane's head asks Redis, whose script applies the same rule fleet-wide; a tenant's
      calls never queue behind another's on this replica;
    - entry (a gate of RPM/TPM only): the queue lets one call at a time wait at the inner gate, and the next
      go once that one is in, so a call the fair queue lets through is never behind this replica's flood."""

    def __init__(
        self,
        inner: Any,
        slots: int | None,
        fn_name: str,
        metrics: TenantMetrics,
        last_rank: int,
        headroom: int = 0,
    ) -> None:
        self.inner = inner
        self.fleet = (
            slots is None and bool(getattr(inner, "max_concurrency", None)) and hasattr(inner, "hold_for")
        )
        self.entry_only = slots is None and not self.fleet
        self.headroom = headroom
        self.scheduler = FairScheduler(1 if slots is None else slots, 0 if slots is None else headroom)
        self.fn_name = fn_name
        self.metrics = metrics
        self.last_rank = last_rank
        self._lanes: dict[str, asyncio.Lock] = {}  # fleet: tenant -> its calls' turn to ask Redis
        self._lane_waiting: dict[str, int] = {}  # fleet: tenant -> its calls waiting for a slot here

    def set_headroom(self, headroom: int) -> None:
        """A reloaded `tenancy:` (validated against the pool's capacity): applies to the next decision."""
        self.headroom = headroom
        if not self.entry_only and not self.fleet:
            self.scheduler.headroom = headroom

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
        async with AsyncExitStack() as stack:
            try:
                if self.fleet:
                    charge = await self._fleet_slot(stack, tokens, tenant, weight, rank)
                else:
                    charge = await self._local_slot(stack, tokens, tenant, weight, rank)
            finally:
                if queued is not None:
                    queued.dec()
            if caller is not None:
                self.metrics.fair_wait.labels(tenant, self.fn_name).observe(time.perf_counter() - started)
            yield charge

    async def _local_slot(
        self, stack: AsyncExitStack, tokens: int, tenant: str, weight: float, rank: int
    ) -> Any:
        await self.scheduler.acquire(tenant, weight, rank)
        try:
            charge = await stack.enter_async_context(self.inner.hold(tokens))
        except BaseException:
            self.scheduler.release(tenant)
            raise
        if self.entry_only:
            self.scheduler.release(tenant)  # in: the next may wait at the inner gate
        else:
            stack.callback(self.scheduler.release, tenant)  # the slot is held until the call ends
        return charge

    async def _fleet_slot(
        self, stack: AsyncExitStack, tokens: int, tenant: str, weight: float, rank: int
    ) -> Any:
        lane = self._lanes.setdefault(tenant, asyncio.Lock())
        self._lane_waiting[tenant] = self._lane_waiting.get(tenant, 0) + 1
        try:
            async with lane:
                claim = SlotClaim(tenant, weight, rank, self.headroom, lambda: self._lane_waiting[tenant])
                return await stack.enter_async_context(self.inner.hold_for(tokens, claim))
        finally:
            self._lane_waiting[tenant] -= 1
