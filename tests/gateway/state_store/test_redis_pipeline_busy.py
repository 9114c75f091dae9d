"""`busy_linger_s` (redis_pipeline.py) against a real redis-server: with nothing in flight a call goes at
once; while a batch awaits its replies, the calls made meanwhile (one per event-loop turn, as a burst's claims
come) wait for those replies and then share one write."""

from __future__ import annotations

import asyncio
import uuid

import uvloop

from bench.harness.redis_server import RedisServer
from rewardfleet.services.gateway.state_store.redis_backend import RedisBackend
from tests.support.state_store import make_backend

ECHO = "return ARGV[1]"
# Keeps Redis busy for ARGV[1] microseconds: a batch whose reply is surely still due while the test calls.
BUSY = """
local t = redis.call('TIME')
local start = tonumber(t[1]) * 1000000 + tonumber(t[2])
repeat
  t = redis.call('TIME')
until tonumber(t[1]) * 1000000 + tonumber(t[2]) - start > tonumber(ARGV[1])
return 1
"""
LONG_S = 30.0  # a linger no answer below could have waited out: each came with the replies


async def test_with_nothing_in_flight_a_busy_linger_call_goes_at_once(replicas: list[RedisBackend]) -> None:
    store = replicas[0].store
    echo = store.script(ECHO)
    assert await store.eval(echo, ["k"], ["warm"]) == b"warm"  # connected, the script loaded
    async with asyncio.timeout(LONG_S / 3):
        assert await store.eval(echo, ["k"], ["now"], busy_linger_s=LONG_S) == b"now"


async def test_calls_made_while_a_batch_is_in_flight_share_one_write(replicas: list[RedisBackend]) -> None:
    store = replicas[0].store
    echo, busy = store.script(ECHO), store.script(BUSY)
    assert await asyncio.gather(store.eval(echo, ["k"], ["warm"]), store.eval(busy, ["k"], [1])) == [
        b"warm",
        1,
    ]
    before = store.pipeliner.batches
    slow = store.eval(busy, ["k"], [300_000])  # Redis busy for 0.3 s
    await asyncio.sleep(0)  # its own turn: written alone
    calls = []
    for i in range(20):  # one per event-loop turn, each of which would have been a write of its own
        calls.append(store.eval(echo, ["k"], [str(i)], busy_linger_s=LONG_S))
        await asyncio.sleep(0)  # one event-loop turn (not a timer)
    async with asyncio.timeout(LONG_S / 3):
        assert await slow == 1
        assert await asyncio.gather(*calls) == [str(i).encode() for i in range(20)]
    assert store.pipeliner.batches - before == 2  # the slow call's write, then one for all twenty


def test_a_lingering_write_joins_the_busy_ones_under_uvloop(redis_server: RedisServer) -> None:
    """The gateway's loop (uvloop): a call lingering for long (a finish) and calls made while a batch is in
    flight all go with that batch's replies, in one write."""

    async def scenario() -> None:
        backend = make_backend(redis_server.url, f"test-{uuid.uuid4().hex[:8]}:")
        await backend.start()
        try:
            store = backend.store
            echo, busy = store.script(ECHO), store.script(BUSY)
            await asyncio.gather(store.eval(echo, ["k"], ["warm"]), store.eval(busy, ["k"], [1]))
            before = store.pipeliner.batches
            slow = store.eval(busy, ["k"], [300_000])
            await asyncio.sleep(0)  # one event-loop turn (not a timer)
            lingering = store.eval(echo, ["k"], ["finish"], linger_s=LONG_S)
            await asyncio.sleep(0)  # one event-loop turn (not a timer)
            claims = []
            for i in range(10):
                claims.append(store.eval(echo, ["k"], [str(i)], busy_linger_s=LONG_S / 2))
                await asyncio.sleep(0)  # one event-loop turn (not a timer)
            async with asyncio.timeout(LONG_S / 3):
                assert await slow == 1
                assert await lingering == b"finish"
                assert await asyncio.gather(*claims) == [str(i).encode() for i in range(10)]
            assert store.pipeliner.batches - before == 2
            # Lingers shorter than uvloop's millisecond timers (a handle with no `when`), while busy.
            slow = store.eval(busy, ["k"], [50_000])
            await asyncio.sleep(0)  # one event-loop turn (not a timer)
            short = [store.eval(echo, ["k"], ["f"], linger_s=0.0001)]
            short += [store.eval(echo, ["k"], ["c"], busy_linger_s=0.0001) for _ in range(3)]
            async with asyncio.timeout(LONG_S / 3):
                assert await asyncio.gather(slow, *short) == [1, b"f", b"c", b"c", b"c"]
        finally:
            await backend.close()

    uvloop.run(scenario())
