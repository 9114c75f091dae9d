"""What a state backend provides, and the error a lost store turns into.

A backend builds the three stateful parts of a gateway: the result cache with its in-flight join
(`reliability/idempotency.py`), a per-function gate (`reliability/function_limits.py`: max_concurrency,
RPM, TPM), the spend ledger (`reliability/spend.py`) and the group scorer (`features/groups.py`).
`memory.py` keeps them in the process;
`redis_backend.py` keeps them in Redis so that every replica of a fleet sees the same ones.

A lost store is never papered over: a request whose state cannot be read or written gets
`errors.StateStoreUnavailable` (503 + Retry-After), before its reward function runs whenever possible. The
trainer's retry (the client retries 503) then lands once the store is back; falling back to per-replica
state would quietly run judges twice, multiply budgets by the replica count and leave groups incomplete.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from rewardfleet.services.gateway.reliability.function_limits import Gate
from rewardfleet.services.gateway.reliability.idempotency import Results
from rewardfleet.services.gateway.reliability.jobs import JobBoard
from rewardfleet.services.gateway.reliability.spend import SpendLedger
from rewardfleet.services.gateway.schemas import ScoreRequest, ScoreResult


class Groups(Protocol):
    async def submit(
        self, request: ScoreRequest, fn: Any, label: str, functions: Mapping[str, Any]
    ) -> ScoreResult: ...


class StateBackend(Protocol):
    """Builds the stateful parts; `start` fails with a clear message when the store is unreachable."""

    name: str

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def results(self, mode: str, max_entries: int, ttl_s: float) -> Results: ...

    def gate(
        self,
        fn_name: str,
        max_concurrency: int | None,
        requests_per_minute: float | None,
        tokens_per_minute: float | None,
        lease_s: float,
    ) -> Gate: ...

    def groups(self, config: Any, scorer: Any) -> Groups: ...

    def spend_ledger(self) -> SpendLedger: ...

    def job_board(self, name: str) -> JobBoard: ...
