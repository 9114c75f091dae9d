"""Automatic pipelining against a real redis-server: calls of one event-loop turn share a round trip, each
gets its own answer or error, and scripts Redis forgot (a restart, SCRIPT FLUSH) are loaded again."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio
import redis.asyncio.connection
from redis.exceptions import AuthenticationError, ConnectionError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bench.harness.redis_server import RedisServer
from rewardfleet.services.gateway.state_store.redis_backend import RedisBackend
from tests.support.state_store import make_backend

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


async def test_a_silent_redis_times_the_calls_in_flight_out_then_a_new_connection_recovers(
    tmp_path: Path,
) -> None:
    """A Redis that stops answering (SIGSTOP: the connection stays open, no reply comes) fails every call in
    flight once `op_timeout_s` has passed, instead of leaving them waiting; once it answers again the next
    call opens a fresh connection (the old one may still hold stale replies)."""
    server = RedisServer(tmp_path).start()
    backend = make_backend(server.url, "silent:")  # op_timeout_s=2.0
    await backend.start()
    assert server.proc is not None
    try:
        store = backend.store
        echo = store.script(ECHO)
        assert await store.eval(echo, ["k"], ["a"]) == b"a"
        link = store.pipeliner.link
        server.proc.signal(signal.SIGSTOP)
        try:
            results = await asyncio.gather(
                store.eval(echo, ["k"], ["b"]), store.eval(echo, ["k"], ["c"]), return_exceptions=True
            )
        finally:
            server.proc.signal(signal.SIGCONT)
        assert all(isinstance(r, RedisTimeoutError) for r in results), results
        assert await store.eval(echo, ["k"], ["d"]) == b"d"
        assert store.pipeliner.link is not link
    finally:
        await backend.close()
        server.stop()


async def test_send_counts_and_logs_a_failure_raises_nothing_and_close_waits_for_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = RedisServer(tmp_path).start()
    backend = make_backend(server.url, "send:")
    await backend.start()
    try:
        store = backend.store
        setter = store.script("redis.call('SET', KEYS[1], ARGV[1]) return 1")
        store.send("probe", store.eval(setter, [store.key("sent")], ["1"]), "probe value not stored")
        await backend.close()  # waits for the write nobody awaited
        reader = redis.asyncio.Redis.from_url(server.url)
        assert await reader.get(store.key("sent")) == b"1"
        await reader.aclose()

        backend = make_backend(server.url, "send:")
        await backend.start()
        store = backend.store
        assert await store.eval(setter, [store.key("sent")], ["2"]) == 1
        server.kill()
        with caplog.at_level(logging.WARNING, logger="rewardfleet.services.gateway.state_store"):
            store.send("probe", store.eval(setter, [store.key("sent")], ["3"]), "probe value not stored")
            await store.pipeliner.drain()
        errors = store.metrics.errors.labels("probe")._value.get()
        assert errors == 1 and "probe value not stored" in caplog.text
    finally:
        await backend.close()
        server.stop()


async def test_unix_socket_url_carries_the_pipeline(tmp_path: Path) -> None:
    """`unix://` (a co-located Redis): the pipeliner opens its own unix-socket connection."""
    sock = tmp_path / "redis.sock"
    server = RedisServer(tmp_path, extra_args=("--unixsocket", str(sock), "--unixsocketperm", "700")).start()
    backend = make_backend(f"unix://{sock}", "unix:")
    await backend.start()
    try:
        store = backend.store
        echo = store.script(ECHO)
        answers = await asyncio.gather(*(store.eval(echo, ["k"], [str(i)]) for i in range(10)))
        assert answers == [str(i).encode() for i in range(10)]
        assert store.pipeliner.link is not None
        assert store.pipeliner.link.transport.get_extra_info("socket").family == socket.AF_UNIX
    finally:
        await backend.close()
        server.stop()


async def test_the_pipeliner_opens_its_own_connection_not_redis_pys(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pipeliner borrows no redis-py connection (nor its private stream): opening its link makes no
    redis-py connection object at all."""
    backend = make_backend(redis_server.url, "own:")
    await backend.start()
    try:
        store = backend.store
        echo = store.script(ECHO)
        await store.client.script_load(ECHO)  # Redis knows the script: no SCRIPT LOAD needed below
        assert store.pipeliner.link is None  # the pipeliner has not connected yet
        made: list[object] = []
        original = redis.asyncio.connection.AbstractConnection.__init__

        def counting(self: redis.asyncio.connection.AbstractConnection, *args: Any, **kwargs: Any) -> None:
            made.append(self)
            original(self, *args, **kwargs)

        monkeypatch.setattr(redis.asyncio.connection.AbstractConnection, "__init__", counting)
        answers = await asyncio.wait_for(
            asyncio.gather(*(store.eval(echo, ["k"], [str(i)]) for i in range(5))), 10
        )
        assert answers == [str(i).encode() for i in range(5)]
        assert store.pipeliner.link is not None and made == []
    finally:
        monkeypatch.undo()
        await backend.close()


async def test_handshake_authenticates_and_selects_the_urls_database(tmp_path: Path) -> None:
    """AUTH with the URL's user and password and SELECT of its database are the first calls on the
    pipeliner's connection: a script's write lands in that database, and a wrong password fails the
    calls with an authentication error instead of sending them unauthenticated."""
    server = RedisServer(tmp_path, extra_args=("--requirepass", "pw-1")).start()
    backend = make_backend(f"redis://default:pw-1@127.0.0.1:{server.port}/3", "auth:")
    await backend.start()
    try:
        store = backend.store
        setter = store.script("redis.call('SET', KEYS[1], ARGV[1]) return 1")
        assert await store.eval(setter, ["in-db"], ["x"]) == 1
        reader = redis.asyncio.Redis.from_url(f"redis://:pw-1@127.0.0.1:{server.port}/3")
        assert await reader.get("in-db") == b"x"
        await reader.aclose()
        other = redis.asyncio.Redis.from_url(f"redis://:pw-1@127.0.0.1:{server.port}/0")
        assert await other.get("in-db") is None
        await other.aclose()
    finally:
        await backend.close()
    wrong = make_backend(f"redis://default:nope@127.0.0.1:{server.port}/0", "auth:")
    try:
        echo = wrong.store.script(ECHO)
        with pytest.raises(AuthenticationError):
            await wrong.store.eval(echo, ["k"], ["a"])
    finally:
        await wrong.close()
        server.stop()
