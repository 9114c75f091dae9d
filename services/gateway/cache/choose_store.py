"""The result cache for a state backend: in the process, or shared in Redis (redis_cache.py)."""

from __future__ import annotations

from rewardfleet.services.gateway.cache.idempotency import ResultCache, Results
from rewardfleet.services.gateway.state_store.base import StateBackend


def results_for(backend: StateBackend, mode: str, max_entries: int, ttl_s: float) -> Results:
    """`mode` is the config's `idempotency`; an answered group stays readable at least `ttl_s` too."""
    if backend.redis is None:
        return ResultCache(mode, max_entries, ttl_s, backend.metrics)  # type: ignore[arg-type]
    from rewardfleet.services.gateway.cache.redis_cache import RedisResults  # only with a Redis backend

    backend.finished_keep_s = max(backend.finished_keep_s, ttl_s)
    return RedisResults(backend.redis, mode, max_entries, ttl_s, backend.lease_s, backend.metrics)
