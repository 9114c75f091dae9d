"""Sandbox slots: how many sandboxes one gateway process runs at once, and which slot (uid) each uses.

The bound lives here, in one place, because the `code` reward is an async function running on the
gateway's event loop: every sample of every request waits for a slot before its sandbox starts, so at most
`slots` sandboxes (bubblewrap processes or Sandbox Fusion requests) run at once per gateway process. The
pools are kept per event loop (an asyncio primitive belongs to one loop) and per slot count.

A server may order the waiters itself (weighted fair queuing across its tenants): it sets `slot_queue` for the
request being served (through reward_fns/contract.py), and each `hold()` first takes its turn there.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from typing import Protocol


class SlotQueue(Protocol):
    """A server's queue in front of a pool: `hold(pool)` returns once it is the caller's turn for a slot of
    `pool`, and keeps that turn until it exits (it admits at most `pool.slots` holders at once)."""

    def hold(self, pool: SlotPool) -> AbstractAsyncContextManager[None]: ...


# The serving request's queue, if its server has one (None: slots are taken first come, first served).
slot_queue: ContextVar[SlotQueue | None] = ContextVar("rewardfleet_slot_queue", default=None)


class SlotPool:
    """`slots` numbered slots; `hold()` waits (FIFO) for a free one and yields its number."""

    def __init__(self, slots: int, first: int = 0) -> None:
        self.slots = slots
        self._free: asyncio.Queue[int] = asyncio.Queue()
        for slot in range(first, first + slots):
            self._free.put_nowait(slot)

    @property
    def busy(self) -> int:
        return self.slots - self._free.qsize()

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[int]:
        queue = slot_queue.get()
        async with contextlib.nullcontext() if queue is None else queue.hold(self):
            slot = await self._free.get()
            try:
                yield slot
            finally:
                self._free.put_nowait(slot)


_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, int], SlotPool]] = (
    weakref.WeakKeyDictionary()
)


def pool_for(backend: str, slots: int) -> SlotPool:
    """The running loop's pool for this backend and slot count (created on first use)."""
    per_loop = _pools.setdefault(asyncio.get_running_loop(), {})
    key = (backend, slots)
    if key not in per_loop:
        # Slot numbers are unique across a loop's pools: a bubblewrap slot number picks its uid.
        per_loop[key] = SlotPool(slots, first=sum(p.slots for p in per_loop.values()))
    return per_loop[key]
