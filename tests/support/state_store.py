"""Redis state-store backends as tests build them: one per "replica", each with its own connections."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from rewardfleet.services.gateway.metrics import GatewayMetrics
from rewardfleet.services.gateway.state_store.metrics import StateStoreMetrics
from rewardfleet.services.gateway.state_store.redis_backend import RedisBackend
from rewardfleet.services.gateway.state_store.redis_client import RedisSettings


def make_backend(url: str, prefix: str, poll_s: float = 0.5, lease_s: float = 10.0) -> RedisBackend:
    settings = RedisSettings(
        url=url, key_prefix=prefix, poll_s=poll_s, connect_timeout_s=1.0, op_timeout_s=2.0
    )
    metrics = GatewayMetrics(CollectorRegistry())
    return RedisBackend(settings, metrics, StateStoreMetrics(metrics.registry), lease_s=lease_s)
