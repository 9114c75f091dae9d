"""Fleet-wide result cache + in-flight join against a real redis-server, replicas = separate backends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Hashable
from typing import Any

import pytest

from bench.harness.redis_server import RedisServer
from bench.harness.waiting import eventually_async
from rewardfleet.services.gateway.cache.choose_store import results_for
from rewardfleet.services.gateway.state_store.redis_backend import RedisBackend
from tests.gateway.state_store.helpers import CountingCompute, renewals, request
from tests.support.state_store import make_backend


def answered(backend: RedisBackend, how: str) -> float:
    """The replica's rewardfleet_result_cache_answers_total{how}: hits and joins stay per-replica counters, so
    their sum over replicas is the fleet's figure."""
    return float(backend.metrics.result_cache_answers.labels(how)._value.get())


def record_joiners(caches: list[Any]) -> list[Hashable]:
    """The keys each request was told is in flight (it then waits on that run): what a test waits for
    instead of sleeping while the duplicates reach Redis."""
    seen: list[Hashable] = []
    for cache in caches:
        join = cache._join

        async def recording(key: Hashable, *args: Any, join: Any = join) -> Any:
            seen.append(key)
            return await join(key, *args)

        setattr(cache, "_join", recording)  # noqa: B010 - wraps the instance's method, a test double
    return seen


async def test_concurrent_duplicates_on_three_replicas_run_once(replicas: list[RedisBackend]) -> None:
    caches = [results_for(r, "uid", 100, 60.0) for r in replicas]
    req = request("same-uid")
    key = caches[0].key(req, "judge", "v1")
    compute = CountingCompute()
    compute.gate.clear()
    first = asyncio.create_task(caches[0].run(key, req, compute.bind(req)))
    await compute.started.wait()
    waiting = record_joiners(caches)
    joiners = [asyncio.create_task(c.run(key, req, compute.bind(req))) for c in caches[1:] for _ in range(3)]
    await eventually_async(lambda: len(waiting) == 6)  # each found the run in flight and waits on it
    compute.gate.set()
    answers = await asyncio.gather(first, *joiners)
    assert compute.runs == 1
    assert [a.score for a in answers] == [2.0] * 7
    assert answers[0].cached is False and all(a.cached for a in answers[1:])
    assert sum(answered(r, "join") for r in replicas) == 6
    later = await caches[2].run(key, req, compute.bind(req))  # after it finished: from the cache
    assert later.cached and later.score == 2.0 and compute.runs == 1 and answered(replicas[2], "hit") == 1


async def test_key_covers_inputs_so_same_uid_other_response_runs(replicas: list[RedisBackend]) -> None:
    cache = results_for(replicas[0], "uid", 100, 60.0)
    compute = CountingCompute()
    a, b = request("u", "1"), request("u", "22")
    assert cache.key(a, "judge", "v1") != cache.key(b, "judge", "v1")
    assert cache.key(a, "judge", "v1") != cache.key(a, "judge", "v2")  # a reloaded function: new key
    ra = await cache.run(cache.key(a, "judge", "v1"), a, compute.bind(a))
    rb = await results_for(replicas[1], "uid", 100, 60.0).run(cache.key(b, "judge", "v1"), b, compute.bind(b))
    assert (ra.score, rb.score, compute.runs) == (1.0, 2.0, 2)
    cache_a = results_for(replicas[0], "uid", 100, 60.0)
    assert cache_a.key(request(None), "judge", "v1") is None  # no uid: no dedup
    assert results_for(replicas[0], "off", 100, 60.0).key(a, "judge", "v1") is None


async def test_error_is_shared_with_joiners_but_not_cached(replicas: list[RedisBackend]) -> None:
    caches = [results_for(r, "uid", 100, 60.0) for r in replicas[:2]]
    req = request("err")
    key = caches[0].key(req, "judge", "v1")
    compute = CountingCompute(status="error")
    compute.gate.clear()
    first = asyncio.create_task(caches[0].run(key, req, compute.bind(req)))
    await compute.started.wait()
    waiting = record_joiners(caches)
    joiner = asyncio.create_task(caches[1].run(key, req, compute.bind(req)))
    await eventually_async(lambda: waiting == [key])  # the joiner found the run in flight and waits on it
    compute.gate.set()
    a, b = await asyncio.gather(first, joiner)
    assert (a.status, b.status, b.cached, compute.runs) == ("error", "error", True, 1)
    retry = await caches[1].run(key, req, compute.bind(req))  # an error may be transient: runs again
    assert retry.status == "error" and not retry.cached and compute.runs == 2


@pytest.fixture
async def short_leases(redis_server: RedisServer) -> AsyncIterator[list[RedisBackend]]:
    backends = [make_backend(redis_server.url, "lease-test:", poll_s=0.05, lease_s=0.3) for _ in range(2)]
    for backend in backends:
        await backend.start()
    yield backends
    for backend in backends:
        await backend.close()


async def test_lease_of_a_dead_replica_expires_and_a_waiter_takes_over(
    short_leases: list[RedisBackend],
) -> None:
    cache = results_for(short_leases[0], "uid", 100, 60.0)
    req = request("crash")
    key = cache.key(req, "judge", "v1")
    # a replica took the run's lease and died: nobody renews it, nobody finishes it
    await short_leases[0].store.client.set(cache._keys(key)[1], b"d" * 32, px=300)  # type: ignore[attr-defined]
    compute = CountingCompute()
    answer = await cache.run(key, req, compute.bind(req))
    assert compute.runs == 1 and answer.score == 2.0 and not answer.cached


async def test_a_long_run_keeps_its_lease(short_leases: list[RedisBackend]) -> None:
    """A run three times longer than the lease is renewed, so a duplicate joins it instead of running."""
    first, second = (results_for(b, "uid", 100, 60.0) for b in short_leases)
    req = request("long")
    key = first.key(req, "judge", "v1")
    compute = CountingCompute()
    compute.gate.clear()
    owner = asyncio.create_task(first.run(key, req, compute.bind(req)))
    await compute.started.wait()
    joiner = asyncio.create_task(second.run(key, req, compute.bind(req)))
    # The run outlives three lease lifetimes (0.3 s): the owner has renewed its lease three times.
    await eventually_async(lambda: renewals(short_leases[0], "lease_renew") >= 3, what="3 lease renewals")
    compute.gate.set()
    a, b = await asyncio.gather(owner, joiner)
    assert compute.runs == 1 and b.cached and b.score == a.score


async def test_cache_is_bounded_fifo(replicas: list[RedisBackend]) -> None:
    cache = results_for(replicas[0], "uid", 3, 60.0)
    compute = CountingCompute()
    reqs = [request(f"u{i}") for i in range(5)]
    for req in reqs:
        await cache.run(cache.key(req, "judge", "v1"), req, compute.bind(req))
    await replicas[0].store.pipeliner.drain()  # the stores are sent after the answers: until Redis ran them
    client = replicas[0].store.client
    assert await client.zcard(replicas[0].store.key("r", "index")) == 3
    stored = [await client.exists(cache._keys(cache.key(r, "judge", "v1"))[0]) for r in reqs]  # type: ignore[attr-defined]
    assert stored == [0, 0, 1, 1, 1]


async def test_ttl_expires_results(replicas: list[RedisBackend]) -> None:
    cache = results_for(replicas[0], "uid", 10, 0.2)
    compute = CountingCompute()
    req = request("ttl")
    key = cache.key(req, "judge", "v1")
    await cache.run(key, req, compute.bind(req))
    assert (await cache.run(key, req, compute.bind(req))).cached
    client = replicas[0].store.client

    async def expired() -> bool:
        return not await client.exists(cache._keys(key)[0])  # type: ignore[attr-defined]

    await eventually_async(expired, what="Redis expiring the result (ttl 0.2 s)")
    assert not (await cache.run(key, req, compute.bind(req))).cached and compute.runs == 2


async def test_retry_on_another_replica_right_after_the_answer_runs_nothing_again(
    replicas: list[RedisBackend],
) -> None:
    """The owner answers without waiting for CACHE_FINISH's reply; a retry sent the moment the answer is out
    (here: in the same event-loop turn, before that write has even left) still finds the run (held lease or
    stored result) and never runs the function a second time."""
    first, second = (results_for(r, "uid", 100, 60.0) for r in replicas[:2])
    compute = CountingCompute()
    for n in range(20):
        req = request(f"retry-{n}")
        key = first.key(req, "judge", "v1")
        answer = await first.run(key, req, compute.bind(req))
        retried = await second.run(key, req, compute.bind(req))
        assert not answer.cached and retried.cached and retried.score == answer.score
    assert compute.runs == 20
