"""Fair queues in front of the gateway's other scarce pools.

Fair queues in front of the gateway's other scarce pools: the CPU worker pool, the code sandbox's slots and
an external pool's per-function RPM/TPM budget (function gates have theirs in fair.py's `FairGate`).

Each uses fair.py's `FairScheduler` as is, tagged with the calling tenant (context.current): a saturated
pool gives its next place to the lowest (priority rank, start tag) waiter, so a flooding tenant lengthens
only its own queue. Built only with tenants configured (runtime.py); without them nothing here exists.

- `FairWorkerPool` (sync functions): calls enter `WorkerPool` only while fewer are inside than
  `workers x CHUNKS_AHEAD x chunk`, where `chunk` is how many calls of that function fit in `AHEAD_S` of
  compute (its measured cost; 1 while unknown or with chunking off). So the pool still chunks cheap rules
  (thousands of calls inside, a few ms of work) while a slow function's calls enter two per worker: a call
  that reaches the head of the fair queue waits behind at most about `CHUNKS_AHEAD x AHEAD_S` of work per
  worker, whatever the other tenants have queued. The head of the queue waits for room; once in, it lets in
  as many of the next waiters as there is room for, in fair order, in one pass (`FairScheduler.grant`):
  they resume together in the next event-loop turn and enter the pool as a batch (its chunking sees a
  batch, not a trickle), each resumed once, as a bare call is by the pool's answer.
- `FairSlots` (the `code` and `sql` rewards' sandboxes): one scheduler per `SlotPool` with its capacity; the
  sandbox reaches it through `reward_fns.contract.slot_queue`, set per request by the tenant middleware.
- `FairBudget` (external pools): one call at a time of this replica waits at a function's RPM/TPM budget
  (the entry shape of `FairGate`); the next in fair order waits once it is through.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from rewardfleet.services.gateway.tenants.context import current
from rewardfleet.services.gateway.tenants.fair import NO_TENANT, FairScheduler
from rewardfleet.services.gateway.tenants.metrics import TenantMetrics

AHEAD_S = 0.01  # compute per chunk a call may wait behind, per place (chunking.py's budget per chunk)
CHUNKS_AHEAD = 2  # places per worker: one chunk running, one waiting (as WorkerPool holds back)
MAX_CHUNK = 256
WORKERS_LABEL = "pool:workers"  # the `reward_fn` label of these queues' wait histogram
SANDBOX_LABEL = "pool:sandbox"


@asynccontextmanager
async def fair_turn(
    scheduler: FairScheduler, metrics: TenantMetrics, last_rank: int, label: str
) -> AsyncIterator[None]:
    """Wait for the caller's turn at `scheduler` (counted in the tenant's fair metrics); the caller must
    `release()` the scheduler once its place is taken (or on any error after this block)."""
    caller = current.get()
    if caller is None:
        tenant, weight, rank = NO_TENANT, 1.0, last_rank
    else:
        tenant, weight, rank = caller.tenant, caller.config.weight, caller.rank
    started = time.perf_counter()
    queued = metrics.fair_queued.labels(tenant) if caller is not None else None
    if queued is not None:
        queued.inc()
    try:
        await scheduler.acquire(tenant, weight, rank)
    finally:
        if queued is not None:
            queued.dec()
    if caller is not None:
        metrics.fair_wait.labels(tenant, label).observe(time.perf_counter() - started)
    yield


class FairWorkerPool:
    """`WorkerPool` with a fair entry (module docstring); every other attribute is the pool's own.

    `waiting` counts calls in the fair queue not yet let in; `_held` those a grant let in that have not
    resumed yet (their places are already counted in `inside`)."""

    def __init__(self, inner: Any, metrics: TenantMetrics, last_rank: int) -> None:
        self.inner = inner
        self.metrics = metrics
        self.last_rank = last_rank
        self.entry = FairScheduler(1)
        self.entry.on_lost_grant = self._lost_grant
        self.inside = 0
        self._queued = 0  # calls in the queued path of `submit` that have not entered the pool
        self._held = 0
        self._room = asyncio.Event()
        self._series: dict[str, tuple[Any, Any]] = {}  # tenant -> its (fair_queued, fair_wait) series
        # The admission backlog counts calls waiting here as well as those waiting inside the pool.
        self._report = getattr(inner, "on_queue_depth", None)
        if self._report is not None:
            inner.on_queue_depth = self._depth

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def waiting(self) -> int:
        return self._queued - self._held

    def _depth(self, inner_depth: int) -> None:
        if self._report is not None:
            self._report(inner_depth + self.waiting)

    def limit(self, ref: Any, timeout_s: float) -> int:
        """Calls of `ref` allowed inside the pool at once (module docstring)."""
        per_call = self.inner.costs.per_call_s(ref) if self.inner.chunking else None
        chunk = 1
        if per_call is not None:
            chunk = max(1, min(MAX_CHUNK, int(min(AHEAD_S, timeout_s / 10) / max(per_call, 1e-7))))
        workers: int = max(1, self.inner.workers)
        return workers * CHUNKS_AHEAD * chunk

    async def submit(
        self, ref: Any, kwargs: dict[str, Any], timeout_s: float, tokenizer_path: str | None
    ) -> Any:
        if self.waiting == 0 and self.inside < self.limit(ref, timeout_s):
            return await self._run(ref, kwargs, timeout_s, tokenizer_path)  # room, nobody waiting: no queue
        self._queued += 1
        self._depth(self.inner.queue_depth)
        try:
            await self._turn()
            if self.entry.granted_by_grant():
                self._held -= 1  # let in by the call ahead of it: its place is counted in `inside`
                self.entry.release()
            else:
                try:
                    while self.inside >= self.limit(ref, timeout_s):
                        self._room.clear()
                        await self._room.wait()
                    self.inside += 1
                    self._let_in(self.limit(ref, timeout_s) - self.inside)
                finally:
                    self.entry.release()  # in (or gone): the next in fair order may wait for room
        finally:
            self._queued -= 1
            self._depth(self.inner.queue_depth)
        try:
            return await self.inner.submit(ref, kwargs, timeout_s, tokenizer_path)
        finally:
            self.inside -= 1
            self._room.set()

    async def _turn(self) -> None:
        """`fair_turn` for this queue, without an async generator and with the tenant's metric series kept
        (per call, both cost as much as the queue itself on a cheap rule)."""
        caller = current.get()
        if caller is None:
            await self.entry.acquire(NO_TENANT, 1.0, self.last_rank)
            return
        series = self._series.get(caller.tenant)
        if series is None:
            series = self._series[caller.tenant] = (
                self.metrics.fair_queued.labels(caller.tenant),
                self.metrics.fair_wait.labels(caller.tenant, WORKERS_LABEL),
            )
        queued, waited = series
        started = time.perf_counter()
        queued.inc()
        try:
            await self.entry.acquire(caller.tenant, caller.config.weight, caller.rank)
        finally:
            queued.dec()
        waited.observe(time.perf_counter() - started)

    def _let_in(self, room: int) -> None:
        """Let the next `room` waiters in at once, in fair order (FairScheduler.grant): their places are
        taken now and they resume together, so the pool's chunking sees a batch."""
        if room > 0 and self.waiting > 0:
            granted = self.entry.grant(min(room, self.waiting))
            self._held += granted
            self.inside += granted

    def _lost_grant(self, tenant: str) -> None:
        """A call let in by `_let_in` was cancelled before it resumed: its place is free again."""
        self._held -= 1
        self.inside -= 1
        self._room.set()

    async def _run(
        self, ref: Any, kwargs: dict[str, Any], timeout_s: float, tokenizer_path: str | None
    ) -> Any:
        self.inside += 1
        try:
            return await self.inner.submit(ref, kwargs, timeout_s, tokenizer_path)
        finally:
            self.inside -= 1
            self._room.set()


class FairSlots:
    """`reward_fns.contract.SlotQueue`: a fair scheduler in front of each sandbox `SlotPool` (per pool, so per
    event loop and slot count, as the pools are)."""

    def __init__(self, metrics: TenantMetrics, last_rank: int) -> None:
        self.metrics = metrics
        self.last_rank = last_rank
        self._schedulers: weakref.WeakKeyDictionary[Any, FairScheduler] = weakref.WeakKeyDictionary()

    @asynccontextmanager
    async def hold(self, pool: Any) -> AsyncIterator[None]:
        scheduler = self._schedulers.get(pool)
        if scheduler is None:
            scheduler = self._schedulers[pool] = FairScheduler(pool.slots)
        async with fair_turn(scheduler, self.metrics, self.last_rank, SANDBOX_LABEL):
            pass
        try:
            yield
        finally:
            scheduler.release()


class FairBudget:
    """An external pool's per-function `Budget` with a fair entry: one call of this replica at a time waits
    at the budget; everything else of `Budget` is its own."""

    def __init__(self, inner: Any, metrics: TenantMetrics, last_rank: int, label: str) -> None:
        self.inner = inner
        self.metrics = metrics
        self.last_rank = last_rank
        self.label = label
        self.entry = FairScheduler(1)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def acquire(self) -> float:
        started = time.monotonic()
        async with fair_turn(self.entry, self.metrics, self.last_rank, self.label):
            try:
                await self.inner.acquire()
            finally:
                self.entry.release()
        return time.monotonic() - started


def fair_budgets(metrics: TenantMetrics, last_rank: int, pool: str) -> Callable[[Any], FairBudget]:
    """The `wrap_budget` of an external pool: each function's budget gets its own fair entry."""
    return lambda budget: FairBudget(budget, metrics, last_rank, f"pool:{pool}")
