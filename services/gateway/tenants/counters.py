"""The tenants' quota counters: in the process, or in Redis.

In-process (`MemoryCounters`), or in Redis shared by every replica (`RedisCounters`, with `state_url`), under
`<state_key_prefix>t:<tenant>:...`.

    window_add   a fixed window (wall-clock aligned, e.g. a minute): adds `amount` unless that would pass
                 `limit` (a first call in an empty window always passes: a single sample larger than a
                 minute's budget is charged the whole budget by the caller, so it waits, never forever)
    in flight    samples being scored; on Redis one hash field per replica, and a replica whose heartbeat
                 is older than `lease_s` no longer counts (a crashed replica's samples are freed)
    spend        nano-dollars per UTC day and in total

Only configured tenants ever reach these (the middleware refuses unknown keys first), so their state is
bounded by the config. Both read the time from `clock` (wall time, `time.time`: windows and days are aligned
to it and shared by replicas), so a test moves a window on by hand (tests/clock.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from rewardfleet.services.gateway.state_store.redis_client import RedisStore

DAY_S = 86400


def window_index(window_s: float, now: float | None = None) -> tuple[int, float]:
    """(index of the window holding `now`, seconds until it ends)."""
    now = time.time() if now is None else now
    index = int(now // window_s)
    return index, (index + 1) * window_s - now


def utc_day(now: float | None = None) -> str:
    return time.strftime("%Y%m%d", time.gmtime(time.time() if now is None else now))


class Counters(Protocol):
    clock: Callable[[], float]  # wall time; what the windows and days are counted on

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def window_add(self, tenant: str, quota: str, amount: int, limit: int, window_s: float) -> float:
        """0 when added; else the seconds until the window ends (nothing added)."""
        ...

    async def window_used(self, tenant: str, quota: str, window_s: float) -> int: ...

    async def inflight_acquire(self, tenant: str, n: int, limit: int | None) -> bool: ...

    async def inflight_release(self, tenant: str, n: int) -> None: ...

    async def inflight(self, tenant: str) -> int: ...

    async def spend_add(self, tenant: str, nano_usd: int) -> None: ...

    async def spend(self, tenant: str) -> tuple[int, int]:
        """(today's, total) nano-dollars."""
        ...


class MemoryCounters:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._windows: dict[tuple[str, str], tuple[int, int]] = {}
        self._inflight: dict[str, int] = {}
        self._spend_total: dict[str, int] = {}
        self._spend_day: dict[str, tuple[str, int]] = {}

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def window_add(self, tenant: str, quota: str, amount: int, limit: int, window_s: float) -> float:
        index, left_s = window_index(window_s, self.clock())
        at, used = self._windows.get((tenant, quota), (index, 0))
        if at != index:
            used = 0
        if used > 0 and used + amount > limit:
            return left_s
        self._windows[(tenant, quota)] = (index, used + amount)
        return 0.0

    async def window_used(self, tenant: str, quota: str, window_s: float) -> int:
        index, _ = window_index(window_s, self.clock())
        at, used = self._windows.get((tenant, quota), (index, 0))
        return used if at == index else 0

    async def inflight_acquire(self, tenant: str, n: int, limit: int | None) -> bool:
        now = self._inflight.get(tenant, 0)
        if limit is not None and now + n > limit:
            return False
        self._inflight[tenant] = now + n
        return True

    async def inflight_release(self, tenant: str, n: int) -> None:
        self._inflight[tenant] = max(0, self._inflight.get(tenant, 0) - n)

    async def inflight(self, tenant: str) -> int:
        return self._inflight.get(tenant, 0)

    async def spend_add(self, tenant: str, nano_usd: int) -> None:
        self._spend_total[tenant] = self._spend_total.get(tenant, 0) + nano_usd
        day = utc_day(self.clock())
        at, spent = self._spend_day.get(tenant, (day, 0))
        self._spend_day[tenant] = (day, (spent if at == day else 0) + nano_usd)

    async def spend(self, tenant: str) -> tuple[int, int]:
        at, spent = self._spend_day.get(tenant, ("", 0))
        return (spent if at == utc_day(self.clock()) else 0), self._spend_total.get(tenant, 0)


# KEYS: the window's counter. ARGV: amount, limit, ttl ms. -> 1 added, 0 refused.
WINDOW_ADD = """
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local amount = tonumber(ARGV[1])
if used > 0 and used + amount > tonumber(ARGV[2]) then return 0 end
redis.call('INCRBY', KEYS[1], amount)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""

# KEYS: the tenant's in-flight hash (replica -> samples), the replicas' heartbeats (zset, expiry ms).
# ARGV: replica id, n, limit (-1: none), now ms. -> the samples in flight after, or -1 when refused.
INFLIGHT_ACQUIRE = """
local now = tonumber(ARGV[4])
local total = 0
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local expires = redis.call('ZSCORE', KEYS[2], all[i])
  if (not expires) or tonumber(expires) < now then
    redis.call('HDEL', KEYS[1], all[i])
  else
    total = total + tonumber(all[i + 1])
  end
end
local n = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
if limit >= 0 and total + n > limit then return -1 end
if n > 0 then redis.call('HINCRBY', KEYS[1], ARGV[1], n) end
return total + n
"""


class RedisCounters:
    """Shared by every replica on one Redis; `lease_s` as the state store's leases (`state_lease_s`). The
    window and day keys and the heartbeats' expiry are computed from `clock`; `sleep` paces the heartbeat."""

    def __init__(
        self,
        store: RedisStore,
        lease_s: float,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.store = store
        self.lease_s = lease_s
        self.clock = clock
        self.sleep = sleep
        self.replica = uuid.uuid4().hex
        self.replicas = store.key("t", "replicas")
        self._window = store.script(WINDOW_ADD)
        self._acquire = store.script(INFLIGHT_ACQUIRE)
        self._beat: asyncio.Task[None] | None = None
        self._closing = False

    def _key(self, tenant: str, *parts: str) -> str:
        return self.store.key("t", tenant, *parts)

    async def _heartbeat(self) -> None:
        expires = int((self.clock() + self.lease_s) * 1000)
        await self.store.call(
            "tenant_heartbeat", self.store.client.zadd(self.replicas, {self.replica: expires})
        )

    async def start(self) -> None:
        await self._heartbeat()

        async def beat() -> None:
            # The flag ends the loop even when a cancellation lands inside a store call that turns it into
            # an error (then suppressed here): close() must not wait on a heartbeat loop that goes on.
            while not self._closing:
                await self.sleep(self.lease_s / 3)
                if self._closing:
                    break
                with contextlib.suppress(Exception):  # counted and logged by store.call; next beat retries
                    await self._heartbeat()

        self._beat = asyncio.create_task(beat())

    async def close(self) -> None:
        self._closing = True
        if self._beat is not None:
            self._beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._beat
        with contextlib.suppress(Exception):
            await self.store.call("tenant_heartbeat", self.store.client.zrem(self.replicas, self.replica))

    async def window_add(self, tenant: str, quota: str, amount: int, limit: int, window_s: float) -> float:
        index, left_s = window_index(window_s, self.clock())
        key = self._key(tenant, "w", quota, str(index))
        ttl_ms = int(window_s * 2000)
        added = await self.store.call(
            "tenant_window", self.store.eval(self._window, [key], [amount, limit, ttl_ms])
        )
        return 0.0 if int(added) == 1 else left_s

    async def window_used(self, tenant: str, quota: str, window_s: float) -> int:
        index, _ = window_index(window_s, self.clock())
        raw = await self.store.call(
            "tenant_read", self.store.client.get(self._key(tenant, "w", quota, str(index)))
        )
        return int(raw or 0)

    async def inflight_acquire(self, tenant: str, n: int, limit: int | None) -> bool:
        args: list[Any] = [self.replica, n, -1 if limit is None else limit, int(self.clock() * 1000)]
        got = await self.store.call(
            "tenant_inflight",
            self.store.eval(self._acquire, [self._key(tenant, "inflight"), self.replicas], args),
        )
        return int(got) >= 0

    async def inflight_release(self, tenant: str, n: int) -> None:
        await self.store.call(
            "tenant_inflight", self.store.client.hincrby(self._key(tenant, "inflight"), self.replica, -n)
        )

    async def inflight(self, tenant: str) -> int:
        args: list[Any] = [self.replica, 0, -1, int(self.clock() * 1000)]
        got = await self.store.call(
            "tenant_inflight",
            self.store.eval(self._acquire, [self._key(tenant, "inflight"), self.replicas], args),
        )
        return int(got)

    async def spend_add(self, tenant: str, nano_usd: int) -> None:
        day = self._key(tenant, "usd", "day", utc_day(self.clock()))
        pipe = self.store.client.pipeline(transaction=True)
        pipe.incrby(self._key(tenant, "usd", "total"), nano_usd)
        pipe.incrby(day, nano_usd)
        pipe.expire(day, 2 * DAY_S)
        await self.store.call("tenant_spend", pipe.execute())

    async def spend(self, tenant: str) -> tuple[int, int]:
        day, total = await self.store.call(
            "tenant_spend",
            self.store.client.mget(
                [self._key(tenant, "usd", "day", utc_day(self.clock())), self._key(tenant, "usd", "total")]
            ),
        )
        return int(day or 0), int(total or 0)
