"""The notifier's reconnect back-off on a clock the test moves, against a real redis-server killed and
restarted: each failed attempt waits twice as long as the last (0.05 s up to 2 s), and a connection that
opens again starts the back-off over. The fleet under a Redis kill, on real time, is test_fleet_e2e.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bench.harness.redis_server import RedisServer
from bench.harness.waiting import eventually_async
from rewardfleet.services.gateway.state_store.redis_backend import RedisBackend
from tests.clock import FakeClock
from tests.support.state_store import make_backend

BACKOFF_S = [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]


@pytest.fixture
async def own_redis(tmp_path: Path) -> AsyncIterator[tuple[RedisServer, RedisBackend, FakeClock]]:
    """A redis-server of this test's own (it is killed), a backend on it, its notifier on a fake clock."""
    server = RedisServer(tmp_path).start()
    backend = make_backend(server.url, "backoff:")
    clock = FakeClock()
    try:
        await backend.start()
        backend.store.notifier.sleep = clock.sleep
        yield server, backend, clock
    finally:
        await backend.close()
        server.stop()


def reconnects(backend: RedisBackend) -> float:
    value = backend.metrics.registry.get_sample_value("rewardfleet_state_store_reconnects_total")
    return value or 0.0


async def waits(clock: FakeClock, n: int) -> None:
    """Until the notifier has asked for its n-th wait and is parked on it."""
    await eventually_async(lambda: len(clock.slept) == n and clock.sleeping == 1, what=f"back-off wait {n}")


async def test_reconnects_back_off_then_start_over(
    own_redis: tuple[RedisServer, RedisBackend, FakeClock],
) -> None:
    server, backend, clock = own_redis
    server.kill()
    for n, wait_s in enumerate(BACKOFF_S, start=1):
        await waits(clock, n)  # attempt n failed (the first: the connection lost), wait n asked for
        assert clock.slept[-1] == wait_s
        clock.advance(wait_s)
    await waits(clock, len(BACKOFF_S) + 1)
    assert clock.slept[-1] == 2.0 and reconnects(backend) == 0  # capped; still down
    server.start()
    clock.advance(2.0)
    await eventually_async(lambda: reconnects(backend) == 1, what="the notifier reconnecting")
    server.kill()
    await waits(clock, len(BACKOFF_S) + 2)
    assert clock.slept[-1] == BACKOFF_S[0]  # a connection that opened reset the back-off
    server.start()
    clock.advance(BACKOFF_S[0])
    await eventually_async(lambda: reconnects(backend) == 2, what="the notifier reconnecting again")
