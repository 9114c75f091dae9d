"""Spend in dollars: judge tokens priced per pool, with optional hard caps.

Judge tokens priced per pool (`pool_prices`), counted from each answer's real `usage`, with optional hard caps
per pool and per function.

A fleet pool's tokens come from the judge's result (`extra.judge_pool`, `extra.usage`), an external pool's
from the provider's answer as the gateway forwards it, so neither is counted twice. Since a call's cost is
known only after it answers, a call is admitted only while the spend so far is below the cap (the one that
crosses it is charged in full; later ones get `BudgetExhausted`). Amounts are integer nano-dollars in the
ledger (in process, or one Redis hash with `state_url`), so totals are exact in any order. The cap rule, its
overshoot bound and which caps a call is checked against: docs/judge_monitoring.md ("Spend in dollars").
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter

from rewardfleet.services.gateway.errors import BudgetExhausted, StateStoreUnavailable
from rewardfleet.services.gateway.metrics import NAMESPACE
from rewardfleet.services.gateway.spend.config import PoolPrice

logger = logging.getLogger(__name__)

NANO_PER_USD = 1_000_000_000


def cost_nano_usd(price: PoolPrice, prompt_tokens: int, completion_tokens: int) -> int:
    """(prompt × input price + completion × output price) / 1e6 dollars, in nano-dollars (rounded)."""
    per_token = NANO_PER_USD / 1_000_000  # nano-dollars per token at $1 per million
    return round(
        prompt_tokens * price.input_usd_per_million_tokens * per_token
        + completion_tokens * price.output_usd_per_million_tokens * per_token
    )


def usd(nano: int) -> float:
    return nano / NANO_PER_USD


class SpendLedger(Protocol):
    """Totals in nano-dollars under `fn:<name>` and `pool:<name>`."""

    async def add(self, reward_fn: str, pool: str, nano_usd: int) -> None: ...

    async def read(self, fields: list[str]) -> list[int]: ...

    async def snapshot(self) -> dict[str, int]: ...


class MemorySpendLedger:
    """This process's totals (one replica; with several, use `state_url`)."""

    def __init__(self) -> None:
        self.totals: dict[str, int] = {}

    async def add(self, reward_fn: str, pool: str, nano_usd: int) -> None:
        for name in (f"fn:{reward_fn}", f"pool:{pool}"):
            self.totals[name] = self.totals.get(name, 0) + nano_usd

    async def read(self, fields: list[str]) -> list[int]:
        return [self.totals.get(name, 0) for name in fields]

    async def snapshot(self) -> dict[str, int]:
        return dict(self.totals)


class SpendMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.cost = Counter(
            "pool_cost_usd",
            "Dollars spent on judge pools (priced in pool_prices, from real usage), by function and pool; "
            "each replica counts what it charged.",
            ["reward_fn", "pool"],
            namespace=NAMESPACE,
            registry=registry,
        )
        self.refusals = Counter(
            "budget_refusals",
            "Calls refused with BudgetExhausted, by function and the cap that refused (function or pool).",
            ["reward_fn", "scope"],
            namespace=NAMESPACE,
            registry=registry,
        )
        self.record_failures = Counter(
            "spend_record_failures",
            "Charges that could not be written to the shared ledger (the state store failed); logged.",
            namespace=NAMESPACE,
            registry=registry,
        )


class SpendMeter:
    def __init__(
        self,
        prices: Mapping[str, PoolPrice],
        ledger: SpendLedger,
        registry: CollectorRegistry,
        known_pools: set[str],
        function_caps: Mapping[str, float] | None = None,
    ) -> None:
        unknown = sorted(set(prices) - known_pools)
        if unknown:
            raise ValueError(
                f"pool_prices: {unknown} name no pool (routers and external_pools: {sorted(known_pools)})"
            )
        self.prices = dict(prices)
        self.has_pool_caps = any(price.max_spend_usd is not None for price in prices.values())
        self.ledger = ledger
        self.metrics = SpendMetrics(registry)
        self._pools_of: dict[str, set[str]] = {}  # function -> priced pools it has been charged for
        # function -> its cap, from the config and as last seen by `admit` (a reload may change it)
        self._function_caps: dict[str, float] = dict(function_caps or {})

    def _capped_pools(self, reward_fn: str, named_pool: Any) -> list[str]:
        pools = set(self._pools_of.get(reward_fn, ()))
        if isinstance(named_pool, str):
            pools.add(named_pool)
        return sorted(p for p in pools if p in self.prices and self.prices[p].max_spend_usd is not None)

    async def admit(self, reward_fn: str, max_spend_usd: float | None, named_pool: Any = None) -> None:
        """Raise `BudgetExhausted` if the function's spend, or a capped pool's it uses, has reached its cap.
        No cap concerned: no ledger read."""
        if max_spend_usd is None and not self.has_pool_caps:
            return  # the common case, on every sample: nothing to check
        if max_spend_usd is not None:
            self._function_caps[reward_fn] = max_spend_usd
        pools = self._capped_pools(reward_fn, named_pool)
        if max_spend_usd is None and not pools:
            return
        fields = [f"fn:{reward_fn}", *(f"pool:{p}" for p in pools)]
        spent = await self.ledger.read(fields)
        if max_spend_usd is not None and usd(spent[0]) >= max_spend_usd:
            self.metrics.refusals.labels(reward_fn, "function").inc()
            raise BudgetExhausted(
                f"{reward_fn} has spent ${usd(spent[0]):.6f} of its max_spend_usd ${max_spend_usd:g}"
            )
        for pool, nano in zip(pools, spent[1:], strict=True):
            cap = self.prices[pool].max_spend_usd
            if cap is not None and usd(nano) >= cap:
                self.metrics.refusals.labels(reward_fn, "pool").inc()
                raise BudgetExhausted(f"pool {pool} has spent ${usd(nano):.6f} of its max_spend_usd ${cap:g}")

    async def admit_pool(self, reward_fn: str, pool: str) -> None:
        """The check an external pool makes before forwarding (its cap only)."""
        price = self.prices.get(pool)
        if price is None or price.max_spend_usd is None:
            return
        (nano,) = await self.ledger.read([f"pool:{pool}"])
        if usd(nano) >= price.max_spend_usd:
            self._pools_of.setdefault(reward_fn, set()).add(pool)  # its next calls are refused before running
            self.metrics.refusals.labels(reward_fn, "pool").inc()
            raise BudgetExhausted(
                f"pool {pool} has spent ${usd(nano):.6f} of its max_spend_usd ${price.max_spend_usd:g}"
            )

    async def charge(self, reward_fn: str, pool: str, prompt_tokens: int, completion_tokens: int) -> None:
        """Count one answer's real usage on a priced pool. The call already ran, so a ledger failure is
        logged and counted, never raised (the next admission check then fails on the store itself)."""
        price = self.prices.get(pool)
        if price is None:
            return
        self._pools_of.setdefault(reward_fn, set()).add(pool)
        nano = cost_nano_usd(price, prompt_tokens, completion_tokens)
        self.metrics.cost.labels(reward_fn, pool).inc(usd(nano))
        try:
            await self.ledger.add(reward_fn, pool, nano)
        except StateStoreUnavailable as exc:
            self.metrics.record_failures.inc()
            logger.warning("spend of %s on pool %s ($%.6f) not recorded: %s", reward_fn, pool, usd(nano), exc)

    async def summary(self) -> dict[str, Any]:
        """Fleet-wide spend (from the ledger) with prices and caps, for GET /monitors."""
        totals = await self.ledger.snapshot()
        pools = {
            name: {
                "spent_usd": usd(totals.get(f"pool:{name}", 0)),
                "max_spend_usd": price.max_spend_usd,
                "input_usd_per_million_tokens": price.input_usd_per_million_tokens,
                "output_usd_per_million_tokens": price.output_usd_per_million_tokens,
            }
            for name, price in sorted(self.prices.items())
        }
        names = {k.removeprefix("fn:") for k in totals if k.startswith("fn:")} | set(self._function_caps)
        functions = {
            name: {
                "spent_usd": usd(totals.get(f"fn:{name}", 0)),
                "max_spend_usd": self._function_caps.get(name),
            }
            for name in sorted(names)
        }
        return {"pools": pools, "functions": functions}
