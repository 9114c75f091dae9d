"""Choosing the state backend from the configuration.

Choosing the backend from the configuration: no `state_url` → in-process; `redis://` / `rediss://` /
`unix://` → Redis."""

from __future__ import annotations

from rewardfleet.services.gateway.metrics import GatewayMetrics
from rewardfleet.services.gateway.state_store.base import StateBackend
from rewardfleet.services.gateway.state_store.memory import MemoryBackend
from rewardfleet.services.gateway.state_store.metrics import StateStoreMetrics

REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def build_backend(
    state_url: str | None,
    metrics: GatewayMetrics,
    key_prefix: str = "rewardfleet:",
    op_timeout_s: float = 5.0,
    lease_s: float = 10.0,
) -> StateBackend:
    if state_url is None:
        return MemoryBackend(metrics)
    if not state_url.startswith(REDIS_SCHEMES):
        raise ValueError(f"state_url must start with one of {REDIS_SCHEMES}")
    # imported here: a gateway without state_url never loads the Redis client
    from rewardfleet.services.gateway.state_store.redis_backend import RedisBackend
    from rewardfleet.services.gateway.state_store.redis_client import RedisSettings

    settings = RedisSettings(
        url=state_url,
        key_prefix=key_prefix,
        connect_timeout_s=min(op_timeout_s, 2.0),
        op_timeout_s=op_timeout_s,
    )
    return RedisBackend(settings, metrics, StateStoreMetrics(metrics.registry), lease_s=lease_s)
