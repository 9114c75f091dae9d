"""In-process state (the default backend): no shared store, each feature keeps its state in the process.

Right for one replica; with several, each keeps its own and nothing is shared (see docs/deploy.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rewardfleet.services.gateway.metrics import GatewayMetrics

if TYPE_CHECKING:
    from rewardfleet.services.gateway.state_store.redis_client import RedisStore


class MemoryBackend:
    name = "memory"

    def __init__(self, metrics: GatewayMetrics) -> None:
        self.metrics = metrics
        self.lease_s = 10.0
        self.finished_keep_s = 600.0

    @property
    def redis(self) -> RedisStore | None:
        return None

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None
