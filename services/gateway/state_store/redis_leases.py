"""Lease renewal for the runs and concurrency slots a replica holds: one timer for all of them.

A lease (a run's in `redis_cache.py`, a concurrency slot's in `redis_budget.py`) lasts `lease_s` in Redis and
must be renewed while its holder still works, so that only a replica that died lets it expire. Most holds
end in milliseconds, long before a renewal is due; a timer of their own would be created and cancelled for
every sample (thousands per second, each a heap push in the event loop and a cancelled handle to sweep).
Here a hold is an entry in a dict, and one timer, running only while something is held, ticks every
`lease_s / 6` and renews each hold that is at least `lease_s / 3` old: a lease is renewed between a third
and a half of its life after it was taken or last renewed. The renewals of one tick go as one script call
(`renew` takes a batch: one key and two arguments, token and lease_ms, per hold) of at most `MAX_BATCH`
holds each, so renewing costs Redis one call per tick per `MAX_BATCH` holds, not one per hold (one call per
hold was more than one Redis kept up with at a whole step in flight: docs/architecture.md, the hot path).
A renewal call that fails is counted and logged by the store; the next tick tries again, and a lease
lost meanwhile is what a dead replica's would be (its run may be joined or claimed by another replica). A
lease the script finds lost (another holder's now) is logged naming its key.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from redis.commands.core import AsyncScript

from rewardfleet.services.gateway.state_store.redis_client import RedisStore

logger = logging.getLogger(__name__)
MAX_BATCH = 500  # holds per renewal call: a bounded script run (~0.5-1 ms of Redis) and a bounded write


def new_token() -> str:
    """A holder's token: 32 hex characters (the scripts compare that many), unique across replicas."""
    return os.urandom(16).hex()


@dataclass(slots=True)
class _Held:
    keys: Sequence[Any]
    args: Sequence[Any]
    since: float  # event-loop time of the take or the last renewal


class Timer(Protocol):
    """What the renewals read the time from and schedule their tick on: the event loop, or a test's clock."""

    def time(self) -> float: ...

    def call_later(self, delay: float, callback: Callable[[], object]) -> Any: ...


class Leases:
    def __init__(
        self, store: RedisStore, op: str, renew: AsyncScript, lease_s: float, timer: Timer | None = None
    ) -> None:
        self.store = store
        self.timer = timer  # None: the running event loop
        self.op = op
        self.renew = renew
        self.every_s = lease_s / 3
        self._held: dict[int, _Held] = {}
        self._ids = itertools.count()
        self._timer: Any = None  # the pending tick's handle

    def hold(self, keys: Sequence[Any], args: Sequence[Any]) -> int:
        """Keep renewing (`renew` script with these keys and arguments) until `drop` with the returned id."""
        loop = self.timer or asyncio.get_running_loop()
        ident = next(self._ids)
        self._held[ident] = _Held(keys, args, loop.time())
        if self._timer is None:
            self._timer = loop.call_later(self.every_s / 2, self._tick)
        return ident

    def drop(self, ident: int) -> None:
        self._held.pop(ident, None)

    def __len__(self) -> int:
        return len(self._held)

    def _tick(self) -> None:
        self._timer = None
        if not self._held:
            return  # the next hold starts the timer again
        loop = self.timer or asyncio.get_running_loop()
        now = loop.time()
        keys: list[Any] = []
        args: list[Any] = []
        for held in self._held.values():
            if now - held.since >= self.every_s:
                held.since = now
                keys.extend(held.keys)
                args.extend(held.args)
                if len(keys) >= MAX_BATCH:
                    self._send(keys, args)
                    keys, args = [], []
        if keys:
            self._send(keys, args)
        self._timer = loop.call_later(self.every_s / 2, self._tick)

    def _send(self, keys: list[Any], args: list[Any]) -> None:
        renewal = self.store.eval(self.renew, keys, args)
        self.store.send(self.op, renewal, f"{len(keys)} leases not renewed")

        def lost(future: Any) -> None:
            if future.cancelled() or future.exception() is not None:
                return  # counted and logged by `send`
            for key, renewed in zip(keys, future.result(), strict=False):
                if not renewed:
                    logger.warning("%s: the lease %s was lost before its renewal", self.op, key)

        renewal.add_done_callback(lost)
