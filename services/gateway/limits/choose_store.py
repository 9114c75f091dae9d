"""A function's gate for a state backend: in the process, or shared in Redis (redis_gate.py)."""

from __future__ import annotations

from rewardfleet.services.gateway.limits.function_limits import FunctionGate, Gate
from rewardfleet.services.gateway.state_store.base import StateBackend


def gate_for(
    backend: StateBackend,
    fn_name: str,
    max_concurrency: int | None,
    requests_per_minute: float | None,
    tokens_per_minute: float | None,
    lease_s: float,
) -> Gate:
    if backend.redis is None:
        return FunctionGate(max_concurrency, requests_per_minute, tokens_per_minute)
    from rewardfleet.services.gateway.limits.redis_gate import RedisGate  # only with a Redis backend

    return RedisGate(backend.redis, fn_name, max_concurrency, requests_per_minute, tokens_per_minute, lease_s)
