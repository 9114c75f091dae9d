"""In-process state (the default backend): the result cache, function gates and group scorer of one process.

Right for one replica; with several, each keeps its own and nothing is shared (see docs/deploy.md).
"""

from __future__ import annotations

from typing import Any

from rewardfleet.services.gateway.features.groups import GroupScorer
from rewardfleet.services.gateway.metrics import GatewayMetrics
from rewardfleet.services.gateway.reliability.function_limits import FunctionGate, Gate
from rewardfleet.services.gateway.reliability.idempotency import ResultCache, Results
from rewardfleet.services.gateway.reliability.jobs import MemoryJobBoard
from rewardfleet.services.gateway.reliability.spend import MemorySpendLedger, SpendLedger
from rewardfleet.services.gateway.state_store.base import Groups


class MemoryBackend:
    name = "memory"

    def __init__(self, metrics: GatewayMetrics) -> None:
        self.metrics = metrics

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def results(self, mode: str, max_entries: int, ttl_s: float) -> Results:
        return ResultCache(mode, max_entries, ttl_s, self.metrics)  # type: ignore[arg-type]

    def gate(
        self,
        fn_name: str,
        max_concurrency: int | None,
        requests_per_minute: float | None,
        tokens_per_minute: float | None,
        lease_s: float,
    ) -> Gate:
        return FunctionGate(max_concurrency, requests_per_minute, tokens_per_minute)

    def groups(self, config: Any, scorer: Any) -> Groups:
        return GroupScorer(config, scorer)

    def spend_ledger(self) -> SpendLedger:
        return MemorySpendLedger()

    def job_board(self, name: str) -> MemoryJobBoard:
        return MemoryJobBoard()
