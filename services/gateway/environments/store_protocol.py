"""What the sessions (sessions.py) need from storage: the `SessionStore` protocol.

Two implement it: `MemorySessionStore` (memory_store.py, one process) and `RedisSessionStore`
(redis_store.py: the `--processes` state server or a Redis every replica shares). A session is keyed by
`token_key(token)`; the logic (tenants, limits, running the environment) stays in sessions.py.

    create    stores a new record unless its tenant has `limit` live sessions already (atomic: a flood of
              opens cannot pass the quota between a count and a write) -> False when full
    count     the tenant's live sessions (a cheap check before seeding)
    load      the record, or None (expired records are None even before the reaper frees them)
    locked    holds the session's lock for one call (`lease_s`), waiting at most `wait_s` (-> SessionBusy),
              and yields its record as `load` reads it once the lock is held
    save      writes the record if its stored version is still `expected` -> False (lost a race, or gone)
    delete    removes the record if it is the tenant's -> the record, or None
    reap      removes up to `batch` records expired at `now` -> them (each is returned to one caller only)
    open      live sessions by (environment, tenant), for the open gauge
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

from rewardfleet.services.gateway.environments.records import SessionRecord


class SessionStore(Protocol):
    volatile: bool  # its sessions end with this process (then `Sessions.stop` closes them)

    async def create(self, key: str, record: SessionRecord, limit: int | None) -> bool: ...

    async def count(self, tenant: str, now: float) -> int: ...

    async def load(self, key: str, now: float) -> SessionRecord | None: ...

    def locked(
        self, key: str, now: float, lease_s: float, wait_s: float
    ) -> AbstractAsyncContextManager[SessionRecord | None]: ...

    async def save(self, key: str, record: SessionRecord, expected: int) -> bool: ...

    async def delete(self, key: str, tenant: str) -> SessionRecord | None: ...

    async def reap(self, now: float, batch: int) -> list[SessionRecord]: ...

    async def open(self) -> dict[tuple[str, str], int]: ...

    async def close(self) -> None: ...
