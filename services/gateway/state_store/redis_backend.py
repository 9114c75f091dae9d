"""The Redis state backend: the one `RedisStore` a replica's features share.

One `RedisStore` (connection, metrics, notifier) that the features' Redis stores (the results cache, the
function gates, the spend ledger, the group store) of one gateway replica share."""

from __future__ import annotations

from rewardfleet.services.gateway.metrics import GatewayMetrics
from rewardfleet.services.gateway.state_store.metrics import StateStoreMetrics
from rewardfleet.services.gateway.state_store.redis_client import RedisSettings, RedisStore


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

    @property
    def redis(self) -> RedisStore | None:
        return self.store

    async def start(self) -> None:
        await self.store.start()

    async def close(self) -> None:
        await self.store.close()
