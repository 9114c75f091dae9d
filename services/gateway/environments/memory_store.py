"""`MemorySessionStore`: sessions in this process (one gateway process, no `state_url`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from rewardfleet.services.gateway.environments.errors import SessionBusy
from rewardfleet.services.gateway.environments.records import SessionRecord


@dataclass
class _Entry:
    text: str  # the record as JSON: a caller's later edits of its copy never reach the store
    version: int
    tenant: str
    env: str
    expires_at: float


class MemorySessionStore:
    """Implements `SessionStore` (store_protocol.py) with dicts; an asyncio.Lock per session in use."""

    volatile = True  # its sessions end with the process

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._by_tenant: dict[str, set[str]] = {}
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}  # key -> (lock, holders and waiters)
        self._open: dict[tuple[str, str], int] = {}  # (env, tenant) -> sessions stored

    def _put(self, key: str, record: SessionRecord) -> None:
        self._entries[key] = _Entry(
            record.to_json(), record.version, record.tenant, record.env, record.expires_at
        )

    async def create(self, key: str, record: SessionRecord, limit: int | None) -> bool:
        if limit is not None and await self.count(record.tenant, record.opened_at) >= limit:
            return False
        self._put(key, record)
        self._by_tenant.setdefault(record.tenant, set()).add(key)
        pair = (record.env, record.tenant)
        self._open[pair] = self._open.get(pair, 0) + 1
        return True

    async def count(self, tenant: str, now: float) -> int:
        keys = self._by_tenant.get(tenant, ())
        return sum(1 for key in keys if self._entries[key].expires_at > now)

    async def load(self, key: str, now: float) -> SessionRecord | None:
        entry = self._entries.get(key)
        if entry is None or entry.expires_at <= now:
            return None
        return SessionRecord.from_json(entry.text)

    @asynccontextmanager
    async def locked(
        self, key: str, now: float, lease_s: float, wait_s: float
    ) -> AsyncIterator[SessionRecord | None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            try:
                if lock.locked():  # a free lock is taken at once: no waiting task to make
                    await asyncio.wait_for(lock.acquire(), wait_s)
                else:
                    await lock.acquire()
            except TimeoutError:
                raise SessionBusy(
                    f"another call of this session ran past {wait_s:g}s (lock_wait_s)"
                ) from None
            try:
                yield await self.load(key, now)
            finally:
                lock.release()
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    async def save(self, key: str, record: SessionRecord, expected: int) -> bool:
        entry = self._entries.get(key)
        if entry is None or entry.version != expected:
            return False
        self._put(key, record)
        return True

    async def delete(self, key: str, tenant: str) -> SessionRecord | None:
        entry = self._entries.get(key)
        if entry is None or entry.tenant != tenant:
            return None
        return self._remove(key)

    def _remove(self, key: str) -> SessionRecord:
        entry = self._entries.pop(key)
        pair = (entry.env, entry.tenant)
        if self._open[pair] == 1:
            del self._open[pair]
        else:
            self._open[pair] -= 1
        keys = self._by_tenant.get(entry.tenant)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_tenant[entry.tenant]
        return SessionRecord.from_json(entry.text)

    async def reap(self, now: float, batch: int) -> list[SessionRecord]:
        expired = [key for key, entry in self._entries.items() if entry.expires_at <= now][:batch]
        return [self._remove(key) for key in expired]

    async def open(self) -> dict[tuple[str, str], int]:
        return dict(self._open)

    async def close(self) -> None:
        return None
