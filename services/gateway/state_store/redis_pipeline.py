"""Automatic pipelining: one event-loop turn's script calls in one write to Redis.

Every Lua script call made during one turn of the event loop goes to Redis in one write, on one connection
kept for the purpose, and the replies are matched to their callers in order. A call
whose answer nobody waits for may linger a few milliseconds for others to share its write (`run`'s
`linger_s`). Under load a call may also wait for the batch in flight (`run`'s `busy_linger_s`): while
replies are due, the calls made meanwhile are written together when the last of them arrives (or after
`busy_linger_s`), one write per round trip instead of one per event-loop turn; with nothing in flight they
go at once, as any call.

The batch is packed by hiredis and written at once; replies are parsed by hiredis in `data_received` and
each answers its own caller's future (why: docs/architecture.md, "Notes moved from module docstrings").

The pipeliner owns its connection outright: it opens the transport itself (TCP, TLS or a unix socket, as the
client's URL says) with this module's protocol from the first byte, and sends the handshake (AUTH, SELECT,
CLIENT SETNAME) as the first calls on it. From redis-py it reads only public settings: the pool's
`connection_class` and `connection_kwargs`, and for TLS the `ssl_context` redis-py's own `SSLConnection` would
build from the same URL (so certificates, hostname checks and verify modes mean what they mean to redis-py).
No redis-py connection or private attribute is borrowed. One deadline guards all calls in
flight: a reply later than `op_timeout_s` aborts the connection, and every call still waiting gets the
error (a connection that lost a reply cannot be trusted to match the next ones). The next call opens a new
connection, so a restarted Redis is picked up by itself. Scripts are sent by SHA (`EVALSHA`); a Redis that
restarted has forgotten them, so a call answered NOSCRIPT is sent again after `SCRIPT LOAD`.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import hiredis
import redis.asyncio as aioredis
from redis.asyncio.connection import SSLConnection, UnixDomainSocketConnection
from redis.commands.core import AsyncScript
from redis.exceptions import AuthenticationError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError


@dataclass(slots=True)
class Call:
    script: AsyncScript | None  # None: a handshake command, answered as it is
    keys: Sequence[Any]
    args: Sequence[Any]
    future: asyncio.Future[Any]
    sent_at: float = 0.0


def _pack(call: Call) -> bytes:
    if call.script is None:
        return bytes(hiredis.pack_command(tuple(call.args)))
    return bytes(hiredis.pack_command(("EVALSHA", call.script.sha, len(call.keys), *call.keys, *call.args)))


class _Link(asyncio.Protocol):
    """One connection's replies, in order, to the calls sent on it."""

    transport: asyncio.Transport

    def __init__(self, owner: Pipeliner) -> None:
        self.owner = owner
        self.reader = hiredis.Reader()
        self.waiting: deque[Call] = deque()
        self.error: BaseException | None = None
        self.loaded: set[str] = set()  # script SHAs this connection has sent a SCRIPT LOAD for

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a stream connection's transport

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        while (reply := self.reader.gets()) is not False:
            if not self.waiting:  # a reply nobody asked for: the stream is out of step
                self.fail(RedisConnectionError("Redis sent a reply no call was waiting for"))
                return
            self.owner.answer(self.waiting.popleft(), reply)
        if not self.waiting:
            self.owner.replies_in()

    def connection_lost(self, exc: Exception | None) -> None:
        error = self.error or RedisConnectionError(
            f"connection to Redis lost{': ' + str(exc) if exc else ''}"
        )
        self.error = error
        if self.owner.link is self:
            self.owner.link = None
        while self.waiting:
            call = self.waiting.popleft()
            if not call.future.done():
                call.future.set_exception(error)

    def fail(self, error: BaseException) -> None:
        self.error = error
        if self.owner.link is self:
            self.owner.link = None
        self.transport.abort()  # connection_lost follows and fails every waiting call


class Pipeliner:
    def __init__(
        self,
        client: aioredis.Redis,
        op_timeout_s: float,
        max_batch: int = 512,
        connect_timeout_s: float | None = None,
    ) -> None:
        self.client = client
        self.op_timeout_s = op_timeout_s
        self.connect_timeout_s = connect_timeout_s if connect_timeout_s is not None else op_timeout_s
        self.max_batch = max_batch
        self.link: _Link | None = None
        self._queue: list[Call] = []
        self._scheduled = False
        self._lingering: asyncio.TimerHandle | None = None  # a flush held back for calls that may wait
        self._after_replies = False  # the held-back flush goes as soon as the batch in flight is answered
        self._linger_at = 0.0  # when the held-back flush is due (loop time)
        self._connecting: asyncio.Task[None] | None = None
        self._watchdog: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loading: dict[str, asyncio.Task[Any]] = {}  # script sha -> its SCRIPT LOAD under way
        self.batches = 0  # how many writes were sent (with `calls`: the mean batch size)
        self.calls = 0

    def run(
        self,
        script: AsyncScript,
        keys: Sequence[Any],
        args: Sequence[Any],
        linger_s: float = 0.0,
        busy_linger_s: float = 0.0,
    ) -> asyncio.Future[Any]:
        """`linger_s` > 0: a call nobody waits for (a result's finish) may wait that long for others to share
        its write. `busy_linger_s` > 0: while earlier calls await their replies, this one waits for them (at
        most that long) and shares the write of everything made meanwhile. The first call that does not
        linger, or `drain`, sends it at once; the order of writes stays the order of calls."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._queue.append(Call(script, keys, args, future))
        if busy_linger_s > 0 and self.link is not None and self.link.waiting:
            linger_s = busy_linger_s if linger_s <= 0 else min(linger_s, busy_linger_s)
            self._after_replies = True
        if linger_s > 0:
            if not self._scheduled:
                when = loop.time() + linger_s
                if self._lingering is not None and self._linger_at > when:
                    self._lingering.cancel()  # (uvloop's handle of a timer due now has no `when`)
                    self._lingering = None
                if self._lingering is None:
                    self._linger_at = when
                    self._lingering = loop.call_later(linger_s, self._flush)
        elif not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._flush)  # after every coroutine runnable now has had its turn
        return future

    async def drain(self) -> None:
        """Until every call made so far has been answered (or failed)."""
        while True:
            pending = [c.future for c in self._queue]
            if self.link is not None:
                pending += [c.future for c in self.link.waiting]
            pending += list(self._tasks)
            if not pending:
                return
            if self._queue:
                self._flush()
            await asyncio.gather(*pending, return_exceptions=True)

    async def close(self) -> None:
        await self.drain()
        if self.link is not None:
            self.link.transport.close()
            self.link = None

    def replies_in(self) -> None:
        """The batch in flight is answered: what waits for it (`busy_linger_s`) goes now."""
        if self._after_replies and self._queue and not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        self._after_replies = False
        if self._lingering is not None:
            self._lingering.cancel()
            self._lingering = None
        if not self._queue:
            return
        link = self.link
        if link is None:
            if self._connecting is None:
                self._connecting = self._spawn(self._connect())
            return  # sent once connected (or failed if connecting fails)
        queue, self._queue = self._queue, []
        now = time.monotonic()
        for start in range(0, len(queue), self.max_batch):
            batch = self._with_loads(link, queue[start : start + self.max_batch])
            payload = b"".join(_pack(c) for c in batch)
            for call in batch:
                call.sent_at = now
            link.waiting.extend(batch)
            link.transport.write(payload)
            self.batches += 1
            self.calls += len(batch)
        if self._watchdog is None:
            self._watchdog = asyncio.get_running_loop().call_later(self.op_timeout_s, self._check_deadline)

    def _with_loads(self, link: _Link, batch: list[Call]) -> list[Call]:
        """`batch` with a SCRIPT LOAD before the first call of each script on this connection. Redis runs
        one connection's commands in order, so the EVALSHA behind it finds the script even on a Redis that has
        just started: no NOSCRIPT round trip, and no retried call overtaking the ones sent after it (the order
        of writes is the order of calls, which the FIFO-bounded indexes rely on)."""
        out: list[Call] = []
        for call in batch:
            script = call.script
            if script is not None and script.sha not in link.loaded:
                link.loaded.add(script.sha)
                loaded = asyncio.get_running_loop().create_future()
                # Nobody awaits it: a failed load shows as the EVALSHA's NOSCRIPT, which is retried.
                loaded.add_done_callback(lambda f: f.cancelled() or f.exception())
                out.append(Call(None, (), ("SCRIPT", "LOAD", script.script), loaded))
            out.append(call)
        return out

    def _check_deadline(self) -> None:
        self._watchdog = None
        link = self.link
        if link is None or not link.waiting:
            return
        late_by = time.monotonic() - link.waiting[0].sent_at - self.op_timeout_s
        if late_by >= 0:
            link.fail(RedisTimeoutError(f"no reply from Redis within {self.op_timeout_s} s"))
            return
        self._watchdog = asyncio.get_running_loop().call_later(-late_by, self._check_deadline)

    async def _connect(self) -> None:
        """Open this pipeliner's own connection, run the handshake on it, then send what queued meanwhile."""
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                link = await self._open()
                await self._handshake(link)
            self.link = link
        except BaseException as exc:
            queue, self._queue = self._queue, []
            error = self._connect_error(exc)
            for call in queue:
                if not call.future.done():
                    call.future.set_exception(error)
            if not isinstance(exc, Exception):
                raise
            return
        finally:
            self._connecting = None
        self._flush()

    async def _open(self) -> _Link:
        pool = self.client.connection_pool
        kwargs = pool.connection_kwargs
        loop = asyncio.get_running_loop()
        link = _Link(self)
        if issubclass(pool.connection_class, UnixDomainSocketConnection):
            await loop.create_unix_connection(lambda: link, kwargs["path"])
            return link
        host, port = kwargs.get("host", "localhost"), int(kwargs.get("port", 6379))
        tls = None
        if issubclass(pool.connection_class, SSLConnection):
            # redis-py's own reading of the ssl_* settings; constructing the connection opens nothing
            tls = pool.connection_class(**kwargs).ssl_context.get()
        await loop.create_connection(lambda: link, host, port, ssl=tls)
        return link

    async def _handshake(self, link: _Link) -> None:
        kwargs = self.client.connection_pool.connection_kwargs
        commands: list[tuple[Any, ...]] = []
        password, username = kwargs.get("password"), kwargs.get("username")
        if password is not None:
            commands.append(("AUTH", username, password) if username else ("AUTH", password))
        if int(kwargs.get("db") or 0):
            commands.append(("SELECT", int(kwargs["db"])))
        if kwargs.get("client_name"):
            commands.append(("CLIENT", "SETNAME", kwargs["client_name"]))
        loop = asyncio.get_running_loop()
        calls = [Call(None, (), command, loop.create_future()) for command in commands]
        link.waiting.extend(calls)
        link.transport.write(b"".join(_pack(c) for c in calls))
        for call in calls:
            await call.future  # an error reply raises here: the link is not used

    @staticmethod
    def _connect_error(exc: BaseException) -> Exception:
        if isinstance(exc, ResponseError) and ("WRONGPASS" in str(exc) or "NOAUTH" in str(exc)):
            return AuthenticationError(str(exc))
        if isinstance(exc, TimeoutError):
            return RedisTimeoutError("connecting to Redis timed out")
        if isinstance(exc, OSError):
            return RedisConnectionError(f"cannot connect to Redis: {exc}")
        if isinstance(exc, Exception):
            return exc
        return RedisConnectionError("connecting was cancelled")

    def answer(self, call: Call, reply: Any) -> None:
        if isinstance(reply, hiredis.ReplyError):
            message = str(reply)
            if message.startswith("NOSCRIPT") and call.script is not None:
                self._spawn(self._load_and_retry(call, call.script))
                return
            reply = ResponseError(message)
        if call.future.done():
            return  # its caller was cancelled
        if isinstance(reply, Exception):
            call.future.set_exception(reply)
        else:
            call.future.set_result(reply)

    async def _load_and_retry(self, call: Call, script: AsyncScript) -> None:
        """Redis forgot the script (a restart, SCRIPT FLUSH): load it (once for all the calls that found it
        missing), then send the call again."""
        try:
            loading = self._loading.get(script.sha)
            if loading is None:
                loading = self._loading[script.sha] = self._spawn(self.client.script_load(script.script))
                loading.add_done_callback(lambda _: self._loading.pop(script.sha, None))
            await asyncio.shield(loading)
            result = await self.run(script, call.keys, call.args)
        except Exception as exc:  # NOSCRIPT again at once, or the store failed: this call's error
            result = exc
        if call.future.done():
            return
        if isinstance(result, Exception):
            call.future.set_exception(result)
        else:
            call.future.set_result(result)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task
