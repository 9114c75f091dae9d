"""`Tenancy`: the tenants' parts of one gateway replica, and how they are wired in (app.py calls the three
`wire_*`/`start` methods; with no tenant configured none of this is built)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from rewardfleet.services.gateway.config import GatewayConfig
from rewardfleet.services.gateway.config.tenants import OTHER_RUN, TenancyConfig, check_headroom
from rewardfleet.services.gateway.limits.function_limits import FunctionGate
from rewardfleet.services.gateway.schemas import ScoreRequest
from rewardfleet.services.gateway.spend.meter import NANO_PER_USD
from rewardfleet.services.gateway.tenants.context import Caller, current, scope
from rewardfleet.services.gateway.tenants.counters import Counters, MemoryCounters, RedisCounters
from rewardfleet.services.gateway.tenants.directory import TenantDirectory
from rewardfleet.services.gateway.tenants.fair import FairGate
from rewardfleet.services.gateway.tenants.fair_pools import FairSlots, FairWorkerPool, fair_budgets
from rewardfleet.services.gateway.tenants.metrics import TenantMetrics
from rewardfleet.services.gateway.tenants.pool_tokens import TenantInjectables, TenantPoolTokens
from rewardfleet.services.gateway.tenants.quotas import MINUTE_S, Quotas
from rewardfleet.services.gateway.tenants.scoped import ScopedResults, TenantFailureLog, TenantSpend
from rewardfleet.services.gateway.tenants.shares import headroom_slots


class Tenancy:
    def __init__(self, config: GatewayConfig, registry: CollectorRegistry) -> None:
        config_file: Path | None = getattr(config, "config_file", None)
        self.directory = TenantDirectory(config.tenants, config.tenancy, config_file)
        self.metrics = TenantMetrics(registry)
        self.counters: Counters = MemoryCounters()
        self._gated: set[str] = set()
        self.quotas = Quotas(self.counters, self.metrics, self._is_judge)
        self._runs: dict[str, dict[str, None]] = {}  # tenant -> its first max_run_labels run labels
        self._fair: dict[str, FairGate] = {}  # function -> its fair gate
        self._pools: dict[str, int | None] = {}  # function -> max_concurrency (gated functions)
        self.fair_slots = FairSlots(self.metrics, self._last_rank())
        self.pool_tokens: TenantPoolTokens | None = None  # set by wire_scorer when there are external pools

    def _last_rank(self) -> int:
        return len(self.directory.table.tenancy.priority_classes) - 1

    @property
    def run_header(self) -> bytes:
        return self.directory.table.tenancy.run_header.encode()

    def _is_judge(self, fn: Any) -> bool:
        return fn.name in self._gated or fn.config.reward_kwargs.get("pool") is not None

    def caller(self, tenant: str, run: str) -> Caller:
        table = self.directory.table
        config = table.tenants[tenant]
        runs = self._runs.setdefault(tenant, {})
        if run not in runs:
            if len(runs) < table.tenancy.max_run_labels:
                runs[run] = None
            else:
                run = OTHER_RUN
        return Caller(tenant, config, table.rank(config), run, frozenset(table.tenancy.share_across_tenants))

    async def start(self, backend: Any, lease_s: float) -> None:
        """Counters on the backend's Redis when it has one (`state_url`), else in this process."""
        store = backend.redis
        if store is not None:
            self.counters = RedisCounters(store, lease_s)
            self.quotas.counters = self.counters
        await self.counters.start()

    async def close(self) -> None:
        await self.counters.close()

    def wire_scorer(self, scorer: Any, functions: Mapping[str, Any]) -> None:
        """Scope the scorer's cache, failure log and spend by tenant; a fair queue in front of every function
        gate (max_concurrency, RPM, TPM; in-process or fleet-wide) and of the worker pool; external pools'
        addresses name the calling tenant (pool_tokens.py)."""
        if scorer.cache is not None:
            scorer.cache = ScopedResults(scorer.cache)
        scorer.failures = TenantFailureLog()
        if scorer.spend is not None:
            scorer.spend = TenantSpend(scorer.spend, self.counters, self.metrics)
        self._gated = set(scorer.gates)
        tenancy = self.directory.table.tenancy
        last_rank = self._last_rank()
        if scorer.pool is not None:
            scorer.pool = FairWorkerPool(scorer.pool, self.metrics, last_rank)
        secret = scorer.injectables.pool_token
        if secret is not None:
            self.pool_tokens = TenantPoolTokens(secret, lambda: self.directory.table.tenants)
            scorer.injectables = TenantInjectables(scorer.injectables, self.pool_tokens)
        for name in scorer.gates:
            fn = functions.get(name)
            self._pools[name] = fn.config.max_concurrency if fn is not None else None
        check_headroom(tenancy, self._pools)
        self.directory.check = lambda new: check_headroom(new, self._pools)
        for name, gate in list(scorer.gates.items()):
            slots = self._pools[name]
            # The queue holds an in-process gate's slots itself; a fleet-wide gate applies the rule in Redis.
            own_slots = slots if isinstance(gate, FunctionGate) else None
            fair = FairGate(gate, own_slots, name, self.metrics, last_rank, self._headroom(name, tenancy))
            scorer.gates[name] = self._fair[name] = fair

    def _headroom(self, name: str, tenancy: TenancyConfig) -> int:
        capacity = self._pools.get(name)
        if not capacity:
            return 0
        return headroom_slots(capacity, tenancy.headroom_fraction, tenancy.headroom_slots.get(name))

    def reload(self) -> dict[str, Any]:
        """`POST /admin/reload`: the directory re-reads keys and tenants; a new headroom applies at once."""
        answer = self.directory.reload()
        for name, fair in self._fair.items():
            fair.set_headroom(self._headroom(name, self.directory.table.tenancy))
        return answer

    def wire_gateway(self, gateway: Any) -> None:
        """Groups per tenant, quotas held while samples are scored, keys re-read on `POST /admin/reload`."""
        if hasattr(gateway.groups, "namespace"):
            gateway.groups.namespace = scope
        gateway.admit = self.admitted
        sessions = getattr(gateway, "sessions", None)
        if sessions is not None:  # environments/: sessions belong to the calling tenant, within sessions_open
            sessions.current_tenant = scope
            sessions.quota = self._sessions_open
            sessions.on_refused = lambda tenant: self.metrics.refusals.labels(tenant, "sessions_open").inc()
        gateway.reloader.hooks["tenants"] = self.reload
        external = getattr(gateway, "external_pools", None)
        for name, pool in (external.pools if external is not None else {}).items():
            # Charged to the calling tenant (its caps checked before each call), queued fairly at the budget.
            pool.wrap_budget = fair_budgets(self.metrics, self._last_rank(), name)
            if pool.spend is not None:
                pool.spend = TenantSpend(pool.spend, self.counters, self.metrics, self.quotas.check_spend)

    def _sessions_open(self, tenant: str) -> int | None:
        config = self.directory.table.tenants.get(tenant)
        return None if config is None else config.quotas.sessions_open

    def admitted(self, samples: Sequence[tuple[ScoreRequest, Any]]) -> AbstractAsyncContextManager[None]:
        return self.quotas.admitted(current.get(), samples)

    async def usage(self, caller: Caller) -> dict[str, Any]:
        """The caller's own usage and quotas (GET /tenants/self): nothing of another tenant."""
        return {**await self._usage(caller.tenant, caller.config, caller.rank), "run": caller.run}

    async def summary(self) -> dict[str, Any]:
        """Every tenant's usage and quotas, for operators (GET /admin/tenants, `rewardfleet status`)."""
        table = self.directory.table
        return {
            "tenants": {
                name: await self._usage(name, cfg, table.rank(cfg))
                for name, cfg in sorted(table.tenants.items())
            }
        }

    async def _usage(self, tenant: str, cfg: Any, rank: int) -> dict[str, Any]:
        day, total = await self.counters.spend(tenant)
        return {
            "tenant": tenant,
            "priority": cfg.priority or self.directory.table.tenancy.priority_classes[rank],
            "weight": cfg.weight,
            "quotas": cfg.quotas.model_dump(),
            "usage": {
                "samples_in_flight": await self.counters.inflight(tenant),
                "requests_this_minute": await self.counters.window_used(
                    tenant, "requests_per_minute", MINUTE_S
                ),
                "judge_tokens_this_minute": await self.counters.window_used(
                    tenant, "judge_tokens_per_minute", MINUTE_S
                ),
                "usd_today": day / NANO_PER_USD,
                "usd_total": total / NANO_PER_USD,
            },
            "runs": sorted(self._runs.get(tenant, {})),  # this replica's
            "fair_queues": self.metrics.fair_queues(tenant),  # this replica's
        }
