"""The tenants' quota windows, days and in-flight leases on a clock the test moves (tests/clock.py): in
process (`MemoryCounters`) and on a real redis-server (`RedisCounters`, whose window and day keys and
heartbeat expiries are computed from its clock). No test waits for a real minute or day to pass."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from bench.harness.redis_server import RedisServer
from bench.harness.waiting import eventually_async
from rewardfleet.services.gateway.state_store.metrics import StateStoreMetrics
from rewardfleet.services.gateway.state_store.redis_client import RedisSettings, RedisStore
from rewardfleet.services.gateway.tenants.counters import Counters, MemoryCounters, RedisCounters
from tests.clock import FakeClock

MINUTE_S = 60.0
MIDNIGHT = 1_800_000_000.0 - 1_800_000_000.0 % 86400  # a UTC midnight
START = MIDNIGHT + 3600.0 + 10.0  # 01:00:10 UTC: 50 s left in its minute


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("counters-redis")).start()
    try:
        yield server
    finally:
        server.stop()


def _store(url: str, prefix: str) -> RedisStore:
    settings = RedisSettings(url=url, key_prefix=prefix, connect_timeout_s=1.0, op_timeout_s=2.0)
    return RedisStore(settings, StateStoreMetrics(CollectorRegistry()))


@pytest.fixture(params=["memory", "redis"])
async def counters(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[Counters, FakeClock]]:
    clock = FakeClock(START)
    if request.param == "memory":
        yield MemoryCounters(clock=clock), clock
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    store = _store(server.url, f"test-{uuid.uuid4().hex[:8]}:")
    await store.start()
    counters = RedisCounters(store, lease_s=10.0, clock=clock, sleep=clock.sleep)
    await counters.start()
    try:
        yield counters, clock
    finally:
        await counters.close()
        await store.close()


async def test_a_minute_window_refuses_until_the_clock_reaches_the_next(
    counters: tuple[Counters, FakeClock],
) -> None:
    c, clock = counters
    assert [await c.window_add("b", "rpm", 1, 3, MINUTE_S) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert await c.window_add("b", "rpm", 1, 3, MINUTE_S) == pytest.approx(50.0)  # to the window's end
    assert await c.window_used("b", "rpm", MINUTE_S) == 3
    assert await c.window_add("a", "rpm", 1, 3, MINUTE_S) == 0.0  # a's window is its own
    clock.advance(49.0)  # 01:00:59: the same window
    assert await c.window_add("b", "rpm", 1, 3, MINUTE_S) == pytest.approx(1.0)
    clock.advance(1.0)  # 01:01:00: a new window
    assert await c.window_used("b", "rpm", MINUTE_S) == 0
    assert await c.window_add("b", "rpm", 1, 3, MINUTE_S) == 0.0
    assert await c.window_used("b", "rpm", MINUTE_S) == 1


async def test_a_first_charge_larger_than_the_window_passes_once(
    counters: tuple[Counters, FakeClock],
) -> None:
    c, clock = counters
    assert await c.window_add("b", "tpm", 5000, 1000, MINUTE_S) == 0.0  # never waits forever
    assert await c.window_add("b", "tpm", 1, 1000, MINUTE_S) > 0
    clock.advance(MINUTE_S)
    assert await c.window_add("b", "tpm", 1000, 1000, MINUTE_S) == 0.0
    assert await c.window_add("b", "tpm", 1, 1000, MINUTE_S) > 0  # 1000 of 1000 used: full


async def test_spend_per_day_starts_again_at_utc_midnight(counters: tuple[Counters, FakeClock]) -> None:
    c, clock = counters
    await c.spend_add("a", 7)
    clock.advance(86400.0 - 3600.0 - 10.0 - 1.0)  # 23:59:59
    await c.spend_add("a", 5)
    assert await c.spend("a") == (12, 12)
    clock.advance(1.0)  # midnight: today's spend is 0, the total stays
    assert await c.spend("a") == (0, 12)
    await c.spend_add("a", 2)
    assert await c.spend("a") == (2, 14)
    assert await c.spend("b") == (0, 0)


async def test_in_flight_of_a_replica_whose_heartbeat_lapsed_is_freed(redis_server: RedisServer) -> None:
    """Two replicas on one Redis and one clock: the first stops beating (a crash: no goodbye), and once the
    clock passes its heartbeat's lease its samples no longer count; a beating replica's still do."""
    clock = FakeClock(START)
    prefix = f"test-{uuid.uuid4().hex[:8]}:"
    stores = [_store(redis_server.url, prefix) for _ in range(2)]
    replicas = [RedisCounters(store, lease_s=9.0, clock=clock, sleep=clock.sleep) for store in stores]
    for store, replica in zip(stores, replicas, strict=True):
        await store.start()
        await replica.start()
    crashed, alive = replicas
    try:
        assert await crashed.inflight_acquire("a", 2, 3) and await alive.inflight_acquire("a", 1, 3)
        assert not await alive.inflight_acquire("a", 1, 3)  # 3 of 3 across the fleet
        assert crashed._beat is not None
        crashed._beat.cancel()  # no more heartbeats, and no zrem
        for _ in range(3):  # the live replica's beat (every lease_s / 3) renews its lease as time passes
            clock.advance(3.0)
            await _beats(alive, clock)
        assert await alive.inflight("a") == 3  # +9 s: the crashed one's lease ends now, not before
        clock.advance(1.0)
        assert await alive.inflight("a") == 1
        assert await alive.inflight_acquire("a", 2, 3)
    finally:
        for store, replica in zip(stores, replicas, strict=True):
            await replica.close()
            await store.close()


async def _beats(replica: RedisCounters, clock: FakeClock) -> None:
    """Wait for `replica`'s heartbeat loop to have sent its beat and gone back to sleep on the clock."""
    await eventually_async(
        lambda: clock.sleeping >= 1 and clock.next_wake() == pytest.approx(3.0), interval_s=0
    )
    score = await replica.store.client.zscore(replica.replicas, replica.replica)
    assert score == int((clock.now + replica.lease_s) * 1000)
