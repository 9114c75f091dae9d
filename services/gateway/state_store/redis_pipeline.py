"""Automatic pipelining: every Lua script call made during one turn of the event loop goes to Redis in one
pipeline (one write, one read) instead of one round trip each.

Under load the costs of a round trip (two system calls, a wake-up of Redis, a wake-up of the gateway) are
most of what shared state costs per request; with 64 requests in flight they are paid once per batch. The
batch is packed by hiredis (C) and written at once: redis-py's own pipeline packs in Python, which cost
more than the round trips it saved. A
call's answer (or its error) goes to its own caller only. Scripts are sent by SHA (`EVALSHA`); a Redis that
restarted has forgotten them, so the calls answered NOSCRIPT are sent again after `SCRIPT LOAD`.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

import hiredis
import redis.asyncio as aioredis
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

Call = tuple[AsyncScript, Sequence[Any], Sequence[Any], "asyncio.Future[Any]"]


class Pipeliner:
    def __init__(self, client: aioredis.Redis, max_batch: int = 512) -> None:
        self.client = client
        self.max_batch = max_batch
        self._queue: list[Call] = []
        self._scheduled = False
        self._tasks: set[asyncio.Task[None]] = set()
        self.batches = 0  # how many pipelines were sent (with `calls`: the mean batch size)
        self.calls = 0

    def run(self, script: AsyncScript, keys: Sequence[Any], args: Sequence[Any]) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._queue.append((script, keys, args, future))
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._flush)  # after every coroutine runnable now has had its turn
        return future

    async def drain(self) -> None:
        """Until every call made so far has been sent and answered (or failed)."""
        while self._queue or self._tasks:
            if self._queue:
                self._flush()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _flush(self) -> None:
        self._scheduled = False
        queue, self._queue = self._queue, []
        for start in range(0, len(queue), self.max_batch):
            task = asyncio.get_running_loop().create_task(self._send(queue[start : start + self.max_batch]))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _send(self, batch: list[Call]) -> None:
        self.batches += 1
        self.calls += len(batch)
        try:
            results = await self._execute(batch)
            missing = [i for i, r in enumerate(results) if isinstance(r, NoScriptError)]
            if missing:
                for script in {id(batch[i][0]): batch[i][0] for i in missing}.values():
                    await self.client.script_load(script.script)
                again = await self._execute([batch[i] for i in missing])
                for i, result in zip(missing, again, strict=True):
                    results[i] = result
        except BaseException as exc:  # the connection failed: every call of the batch gets the error
            for *_, future in batch:
                if not future.done():
                    future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for (*_, future), result in zip(batch, results, strict=True):
            if future.done():
                continue  # its caller was cancelled
            if isinstance(result, Exception):
                future.set_exception(result)
            else:
                future.set_result(result)

    async def _execute(self, batch: list[Call]) -> list[Any]:
        """One write of every call (packed by hiredis, in C), then one reply per call, on one pooled
        connection. An error reply is that call's result; a broken connection is dropped and raised.

        The replies of a batch share one deadline (the connection's socket timeout): a timer per reply,
        as redis-py's `read_response` arms by default, cost more than the reply's parsing."""
        payload = b"".join(
            hiredis.pack_command(("EVALSHA", script.sha, len(keys), *keys, *args))
            for script, keys, args, _ in batch
        )
        pool = self.client.connection_pool
        conn = await pool.get_connection()  # type: ignore[no-untyped-call]
        try:
            await conn.send_packed_command(payload, check_health=False)
            results: list[Any] = []
            try:
                async with asyncio.timeout(conn.socket_timeout):
                    for _ in batch:
                        try:
                            results.append(await conn.read_response(timeout=math.inf))
                        except ResponseError as exc:
                            results.append(exc)
            except TimeoutError:
                raise RedisTimeoutError(f"no reply from Redis within {conn.socket_timeout} s") from None
        except BaseException:
            await conn.disconnect()  # a half-read pipeline leaves the connection out of step: never reuse it
            raise
        finally:
            await pool.release(conn)
        return results
