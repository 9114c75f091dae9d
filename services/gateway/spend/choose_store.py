"""The spend ledger for a state backend: in the process, or shared in Redis (redis_ledger.py)."""

from __future__ import annotations

from rewardfleet.services.gateway.spend.meter import MemorySpendLedger, SpendLedger
from rewardfleet.services.gateway.state_store.base import StateBackend


def spend_ledger_for(backend: StateBackend) -> SpendLedger:
    if backend.redis is None:
        return MemorySpendLedger()
    from rewardfleet.services.gateway.spend.redis_ledger import RedisSpendLedger  # only with a Redis backend

    return RedisSpendLedger(backend.redis)
