"""Automatic pipelining against a real redis-server: calls of one event-loop turn share a round trip, each
gets its own answer or error, and scripts Redis forgot (a restart, SCRIPT FLUSH) are loaded again."""

from __future__ import annotations

import asyncio
from pathlib import Path

from redis.exceptions import ConnectionError, ResponseError

from services.gateway.state_store.redis_backend import RedisBackend
from tests.state_store.conftest import make_backend
from tests.state_store.redis_server import RedisServer

ECHO = "return ARGV[1]"
FAIL_ON_X = "if ARGV[1] == 'x' then return redis.error_reply('bad x') end return ARGV[1]"


async def test_one_turn_one_pipeline_each_its_answer(replicas: list[RedisBackend]) -> None:
    store = replicas[0].store
    echo = store.script(ECHO)
    assert await store.eval(echo, ["k"], ["loaded"]) == b"loaded"  # Redis knows the script from here on
    before = store.pipeliner.batches
    answers = await asyncio.gather(*(store.eval(echo, ["k"], [str(i)]) for i in range(100)))
    assert answers == [str(i).encode() for i in range(100)]
    assert store.pipeliner.batches - before == 1


async def test_an_error_reaches_only_its_caller(replicas: list[RedisBackend]) -> None:
    store = replicas[0].store
    script = store.script(FAIL_ON_X)
    results = await asyncio.gather(
        store.eval(script, ["k"], ["a"]), store.eval(script, ["k"], ["x"]), return_exceptions=True
    )
    assert results[0] == b"a"
    assert isinstance(results[1], ResponseError) and "bad x" in str(results[1])


async def test_forgotten_scripts_are_loaded_again(replicas: list[RedisBackend]) -> None:
    store = replicas[0].store
    echo = store.script(ECHO)
    assert await store.eval(echo, ["k"], ["1"]) == b"1"
    await store.client.script_flush()  # what a restarted Redis knows of our scripts: nothing
    assert await asyncio.gather(store.eval(echo, ["k"], ["2"]), store.eval(echo, ["k"], ["3"])) == [
        b"2",
        b"3",
    ]


async def test_lost_connection_fails_every_call_of_the_batch(tmp_path: Path) -> None:
    server = RedisServer(tmp_path).start()
    backend = make_backend(server.url, "lost:")
    await backend.start()
    try:
        store = backend.store
        echo = store.script(ECHO)
        assert await store.eval(echo, ["k"], ["a"]) == b"a"
        server.kill()
        results = await asyncio.gather(
            store.eval(echo, ["k"], ["a"]), store.eval(echo, ["k"], ["b"]), return_exceptions=True
        )
        assert all(isinstance(r, ConnectionError) for r in results), results
    finally:
        await backend.close()
        server.stop()
