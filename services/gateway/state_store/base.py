"""What a state backend provides, and the error a lost store turns into.

A backend builds the three stateful parts of a gateway: the result cache with its in-flight join
(`reliability/idempotency.py`), a per-function gate (`reliability/function_limits.py`: max_concurrency,
RPM, TPM) and the group scorer (`features/groups.py`). `memory.py` keeps them in the process;
`redis_backend.py` keeps them in Redis so that every replica of a fleet sees the same ones.

A lost store is never papered over: a request whose state cannot be read or written gets
`errors.StateStoreUnavailable` (503 + Retry-After), before its reward function runs whenever possible. The
trainer's retry (the client retries 503) then lands once the store is back; falling back to per-replica
state would quietly run judges twice, multiply budgets by the replica count and leave groups incomplete.
"""

from __future__ import annotations

import numbers
from collections.abc import Awaitable, Callable, Hashable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from services.gateway.schemas import ScoreRequest, ScoreResult


class Charge(Protocol):
    """Tokens charged up front (an estimate); `settle` corrects the charge once the call reports usage."""

    def settle(self, real_tokens: int) -> None: ...


class Gate(Protocol):
    """One reward function's budgets: `hold(estimated_tokens)` waits for a slot and for RPM/TPM budget."""

    def hold(self, tokens: int) -> AbstractAsyncContextManager[Charge]: ...


class Results(Protocol):
    """Result cache + in-flight join (see reliability/idempotency.py for the key and the semantics)."""

    def key(self, request: ScoreRequest, fn_name: str, fn_version: str) -> Hashable | None: ...

    async def run(
        self, key: Hashable, request: ScoreRequest, compute: Callable[[], Awaitable[ScoreResult]]
    ) -> ScoreResult: ...


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


def reported_tokens(extra: dict[str, Any]) -> int | None:
    """Tokens a judge's answer says it used: `extra["usage"]` in the OpenAI shape (`total_tokens`, or
    `prompt_tokens` + `completion_tokens`). None when the function reports nothing usable."""
    usage = extra.get("usage")
    if not isinstance(usage, dict):
        return None
    total = _count(usage.get("total_tokens"))
    if total is not None:
        return total
    prompt, completion = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    return None if prompt is None or completion is None else prompt + completion


def _count(value: Any) -> int | None:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= 0:
        return int(value)
    return None
