"""The gateway's per-sample state, scoped by the calling tenant (context.scope).

ScopedResults      result cache and in-flight join: the key gets `t:<tenant>|` (the Redis key too), so a
                   tenant is never answered from another's call or cached result; functions listed in
                   `tenancy.share_across_tenants` keep the unscoped key (shared computation)
TenantFailureLog   one rate-limited failure log per tenant: one tenant's storm never silences another's
                   lines; each line names its tenant
TenantSpend        the scorer's spend meter, which also charges the calling tenant's spend (its
                   usd_per_day / usd_total quotas, `rewardfleet_tenant_spend_usd_total`)
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

from rewardfleet.services.gateway.cache.idempotency import Results
from rewardfleet.services.gateway.core.failure_log import FailureLog
from rewardfleet.services.gateway.errors import BudgetExhausted
from rewardfleet.services.gateway.schemas import ScoreRequest, ScoreResult
from rewardfleet.services.gateway.spend.meter import SpendMeter, cost_nano_usd, usd
from rewardfleet.services.gateway.tenants.context import Caller, current, scope
from rewardfleet.services.gateway.tenants.counters import Counters
from rewardfleet.services.gateway.tenants.errors import TenantQuotaExceeded
from rewardfleet.services.gateway.tenants.metrics import TenantMetrics

logger = logging.getLogger(__name__)


class ScopedResults:
    def __init__(self, inner: Results) -> None:
        self.inner = inner

    def key(self, request: ScoreRequest, fn_name: str, fn_version: str) -> Hashable | None:
        key = self.inner.key(request, fn_name, fn_version)
        namespace = scope(fn_name)
        if key is None or not namespace:
            return key
        return f"t:{namespace}|{key}" if isinstance(key, str) else ("t", namespace, key)

    async def run(
        self, key: Hashable, request: ScoreRequest, compute: Callable[[], Awaitable[ScoreResult]]
    ) -> ScoreResult:
        return await self.inner.run(key, request, compute)


class TenantFailureLog:
    """`FailureLog.sample_failed` per tenant (configured tenants, plus "" for calls without one)."""

    def __init__(self, make: Callable[[], FailureLog] = FailureLog) -> None:
        self.make = make
        self.logs: dict[str, FailureLog] = {}

    def sample_failed(self, **fields: Any) -> None:
        tenant = scope()
        log = self.logs.get(tenant)
        if log is None:
            log = self.logs[tenant] = self.make()
        if tenant:
            fields["message"] = f"[tenant {tenant}] {fields.get('message', '')}"
        log.sample_failed(**fields)


class TenantSpend:
    """Delegates to the gateway's `SpendMeter`; `charge` also counts the calling tenant's spend, and
    `admit_pool` (an external pool's call) also checks the tenant's dollar caps (`caps`)."""

    def __init__(
        self,
        meter: SpendMeter,
        counters: Counters,
        metrics: TenantMetrics,
        caps: Callable[[Caller], Awaitable[None]] | None = None,
    ) -> None:
        self.meter = meter
        self.counters = counters
        self.metrics = metrics
        self.caps = caps

    def __getattr__(self, name: str) -> Any:
        return getattr(self.meter, name)

    async def admit_pool(self, reward_fn: str, pool: str) -> None:
        await self.meter.admit_pool(reward_fn, pool)
        caller = current.get()
        if caller is None or self.caps is None:
            return
        try:
            await self.caps(caller)
        except TenantQuotaExceeded as exc:
            raise BudgetExhausted(exc.message) from None  # the forwarding route's 402

    async def charge(self, reward_fn: str, pool: str, prompt_tokens: int, completion_tokens: int) -> None:
        await self.meter.charge(reward_fn, pool, prompt_tokens, completion_tokens)
        caller = current.get()
        price = self.meter.prices.get(pool)
        if caller is None or price is None:
            return
        nano = cost_nano_usd(price, prompt_tokens, completion_tokens)
        self.metrics.spend.labels(caller.tenant).inc(usd(nano))
        try:
            await self.counters.spend_add(caller.tenant, nano)
        except Exception as exc:  # the call already ran: logged, never raised (as SpendMeter.charge)
            logger.warning("spend of tenant %s ($%.6f) not recorded: %s", caller.tenant, usd(nano), exc)
