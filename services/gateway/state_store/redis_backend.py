"""The Redis state backend: one `RedisStore` (connection, metrics, notifier) shared by the results cache,
the function gates and the group scorer of one gateway replica."""

from __future__ import annotations

from typing import Any

from rewardfleet.services.gateway.features.groups import GroupScorer
from rewardfleet.services.gateway.metrics import GatewayMetrics
from rewardfleet.services.gateway.reliability.function_limits import Gate
from rewardfleet.services.gateway.reliability.idempotency import Results
from rewardfleet.services.gateway.reliability.spend import SpendLedger
from rewardfleet.services.gateway.state_store.base import Groups
from rewardfleet.services.gateway.state_store.metrics import StateStoreMetrics
from rewardfleet.services.gateway.state_store.redis_budget import RedisGate
from rewardfleet.services.gateway.state_store.redis_cache import RedisResults
from rewardfleet.services.gateway.state_store.redis_client import RedisSettings, RedisStore
from rewardfleet.services.gateway.state_store.redis_groups import RedisGroupStore
from rewardfleet.services.gateway.state_store.redis_jobs import RedisJobBoard
from rewardfleet.services.gateway.state_store.redis_spend import RedisSpendLedger


class RedisBackend:
    name = "redis"

    def __init__(
        self,
        settings: RedisSettings,
        metrics: GatewayMetrics,
        store_metrics: StateStoreMetrics,
        lease_s: float = 10.0,
    ) -> None:
        self.metrics = metrics
        self.store = RedisStore(settings, store_metrics)
        self.lease_s = lease_s
        self.finished_keep_s = 600.0

    async def start(self) -> None:
        await self.store.start()

    async def close(self) -> None:
        await self.store.close()

    def results(self, mode: str, max_entries: int, ttl_s: float) -> Results:
        self.finished_keep_s = max(self.finished_keep_s, ttl_s)
        return RedisResults(self.store, mode, max_entries, ttl_s, self.lease_s, self.metrics)

    def gate(
        self,
        fn_name: str,
        max_concurrency: int | None,
        requests_per_minute: float | None,
        tokens_per_minute: float | None,
        lease_s: float,
    ) -> Gate:
        return RedisGate(
            self.store, fn_name, max_concurrency, requests_per_minute, tokens_per_minute, lease_s
        )

    def groups(self, config: Any, scorer: Any) -> Groups:
        return GroupScorer(config, scorer, RedisGroupStore(self.store, config, self.finished_keep_s))

    def spend_ledger(self) -> SpendLedger:
        return RedisSpendLedger(self.store)

    def job_board(self, name: str) -> RedisJobBoard:
        return RedisJobBoard(self.store, name, self.lease_s)
