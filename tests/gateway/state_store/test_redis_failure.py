"""Losing the store: unreachable at start-up stops with a clear message; lost mid-run fails the affected
requests fast with StateStoreUnavailable (nothing runs twice, no waiter hangs); restarted, the same backend
recovers by itself."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.harness.processes import free_port
from bench.harness.redis_server import RedisServer
from bench.harness.waiting import eventually_async
from rewardfleet.services.gateway.cache.choose_store import results_for
from rewardfleet.services.gateway.errors import StateStoreUnavailable
from tests.gateway.state_store.helpers import CountingCompute, record_calls, request
from tests.support.state_store import make_backend


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path).start()
    try:
        yield server
    finally:
        server.stop()


async def test_unreachable_at_start_names_the_url_without_its_password() -> None:
    backend = make_backend(f"redis://:s3cret@127.0.0.1:{free_port()}/0", "x:")
    with pytest.raises(StateStoreUnavailable, match=r"cannot reach Redis") as caught:
        await backend.start()
    assert "s3cret" not in caught.value.message and ":***@127.0.0.1" in caught.value.message
    await backend.close()


async def test_lost_mid_run_fails_fast_then_recovers(own_redis: RedisServer) -> None:
    owner, waiter = make_backend(own_redis.url, "f:"), make_backend(own_redis.url, "f:")
    await owner.start()
    await waiter.start()
    try:
        caches = results_for(owner, "uid", 100, 60.0), results_for(waiter, "uid", 100, 60.0)
        req = request("lost")
        key = caches[0].key(req, "judge", "v1")
        compute = CountingCompute()
        compute.gate.clear()
        running = asyncio.create_task(caches[0].run(key, req, compute.bind(req)))
        await compute.started.wait()
        calls = record_calls(waiter.store)
        joining = asyncio.create_task(caches[1].run(key, req, compute.bind(req)))
        await eventually_async(
            lambda: "cache_check" in calls
        )  # the duplicate listens for the run's end and waits

        own_redis.kill()
        with pytest.raises(StateStoreUnavailable):  # the waiter is woken by the lost connection
            await joining
        fresh = request("new-sample")
        with pytest.raises(StateStoreUnavailable, match="cache_claim"):  # refused before running
            await caches[1].run(caches[1].key(fresh, "judge", "v1"), fresh, compute.bind(fresh))
        compute.gate.set()
        done = await running  # the run in flight keeps its result; only its sharing is lost
        assert done.status == "ok" and compute.runs == 1
        errors = waiter.store.metrics.errors.labels("cache_claim")._value.get()
        assert errors >= 1

        own_redis.start()  # same port, empty: the fleet recovers without a restart
        again = await caches[1].run(caches[1].key(fresh, "judge", "v1"), fresh, compute.bind(fresh))
        assert again.status == "ok" and compute.runs == 2
        await asyncio.wait_for(waiter.store.notifier._ready.wait(), 10.0)  # it reconnects in the background
        assert waiter.store.metrics.reconnects._value.get() >= 1
        async with waiter.store.notifier.listen("f:probe") as inbox:
            await owner.store.client.publish("f:probe", b"1")
            await asyncio.wait_for(inbox.event.wait(), 10.0)  # TimeoutError if the message never came
            assert inbox.error is None
    finally:
        await owner.close()
        await waiter.close()
