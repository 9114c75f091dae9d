"""What a state backend provides, and the error a lost store turns into.

A backend is where the gateway's shared state lives: `memory.py` in the process, `redis_backend.py` in Redis
so that every replica of a fleet sees the same. It holds no feature: each feature builds its own store over
the backend (`cache/choose_store.py`, `limits/choose_store.py`, `spend/choose_store.py`,
`groups/choose_store.py`), an in-process one when `redis` is None, else its Redis one over the shared
`RedisStore` (connection, scripts, pipeline).

A lost store is never papered over: a request whose state cannot be read or written gets
`errors.StateStoreUnavailable` (503 + Retry-After), before its reward function runs whenever possible. The
trainer's retry (the client retries 503) then lands once the store is back; falling back to per-replica
state would quietly run judges twice, multiply budgets by the replica count and leave groups incomplete.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from rewardfleet.services.gateway.metrics import GatewayMetrics

if TYPE_CHECKING:
    from rewardfleet.services.gateway.state_store.redis_client import RedisStore


class StateBackend(Protocol):
    """The shared store, if any; `start` fails with a clear message when the store is unreachable.

    `lease_s` is how long a replica's run or slot lease lasts unrenewed; `finished_keep_s` how long a
    finished entry (an answered group) stays readable: at least the result cache's TTL
    (cache/choose_store.py)."""

    name: str
    metrics: GatewayMetrics
    lease_s: float
    finished_keep_s: float

    @property
    def redis(self) -> RedisStore | None: ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...
