"""A background job run once per fleet, not once per process: who runs it, where the others read its results.

The holder of a named lease (`lead()` returns True) runs the job and `publish`es what the others need to act
alike (the judge probes' reports and which pools to refuse); the others `read` it. `redis_jobs.py` keeps the
lease in Redis for several processes or replicas; one process alone always leads (`MemoryJobBoard`).
"""

from __future__ import annotations

from typing import Any, Protocol


class JobBoard(Protocol):
    async def lead(self) -> bool: ...

    async def publish(self, board: dict[str, Any], ttl_s: float) -> None: ...

    async def read(self) -> dict[str, Any] | None: ...

    async def release(self) -> None: ...


class MemoryJobBoard:
    """One process: it always holds the lease, and nobody else reads its board."""

    async def lead(self) -> bool:
        return True

    async def publish(self, board: dict[str, Any], ttl_s: float) -> None:
        return None

    async def read(self) -> dict[str, Any] | None:
        return None

    async def release(self) -> None:
        return None
