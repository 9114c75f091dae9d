"""In-process state: today's result cache, function gates and group scorer, unchanged (the default backend).

Right for one replica; with several, each keeps its own and nothing is shared (see docs/deploy.md).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from services.gateway.admission import FunctionGate
from services.gateway.groups import GroupScorer
from services.gateway.idempotency import ResultCache
from services.gateway.state_store.base import Gate, Groups, Results


class _TokenCharge:
    """Corrects the TPM bucket by the difference between the real and the estimated tokens."""

    def __init__(self, gate: FunctionGate, estimated: int) -> None:
        self.gate = gate
        self.estimated = estimated

    def settle(self, real_tokens: int) -> None:
        bucket = self.gate._tokens
        if bucket is not None and real_tokens != self.estimated:
            bucket.take(real_tokens - self.estimated)  # negative: a refund


class MemoryGate:
    def __init__(self, gate: FunctionGate) -> None:
        self.inner = gate

    def hold(self, tokens: int) -> AbstractAsyncContextManager[_TokenCharge]:
        return self._hold(tokens)

    @asynccontextmanager
    async def _hold(self, tokens: int) -> AsyncIterator[_TokenCharge]:
        async with self.inner.hold(tokens):
            yield _TokenCharge(self.inner, tokens)


class MemoryBackend:
    name = "memory"

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def results(self, mode: str, max_entries: int, ttl_s: float) -> Results:
        return ResultCache(mode, max_entries, ttl_s)  # type: ignore[arg-type]

    def gate(
        self,
        fn_name: str,
        max_concurrency: int | None,
        requests_per_minute: float | None,
        tokens_per_minute: float | None,
        lease_s: float,
    ) -> Gate:
        return MemoryGate(FunctionGate(max_concurrency, requests_per_minute, tokens_per_minute))

    def groups(self, config: Any, functions: Any, scorer: Any) -> Groups:
        return GroupScorer(config, functions, scorer)
