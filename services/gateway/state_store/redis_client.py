"""The Redis connection shared by the fleet-wide parts: timed, error-mapped calls and a pub/sub notifier.

Client: redis-py's `redis.asyncio` (maintained by Redis Inc. next to the server, typed, RESP2/RESP3, cluster,
sentinel, TLS and passwords from the URL: `redis://:pw@host:6379/0`, `rediss://` for TLS). Every call has a
short connect and read timeout and a single immediate retry: the retry re-opens a pooled connection that went
stale when Redis restarted (so the fleet recovers by itself), and nothing waits longer than a timeout when
Redis is really gone (the request fails fast with `StateStoreUnavailable`).

`Notifier` keeps one subscriber connection per replica. Waiters `listen(channel)` before they look at the
state and are woken by a PUBLISH of whoever changes it. Correctness never rests on a message arriving:
every wait also re-reads the state at least every `poll_s`, so a message lost in a reconnect only costs
latency. When the subscriber connection is lost, every current waiter is woken with
`StateStoreUnavailable`; the notifier reconnects in the background with backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from rewardfleet.services.common.redact import redact_text
from rewardfleet.services.gateway.errors import StateStoreUnavailable
from rewardfleet.services.gateway.state_store.metrics import StateStoreMetrics
from rewardfleet.services.gateway.state_store.redis_pipeline import Pipeliner

logger = logging.getLogger(__name__)
T = TypeVar("T")
STORE_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError, TimeoutError)


@dataclass(frozen=True)
class RedisSettings:
    url: str
    key_prefix: str = "rewardfleet:"
    connect_timeout_s: float = 2.0
    op_timeout_s: float = 5.0
    max_connections: int = 512
    poll_s: float = 0.5  # the longest a waiter goes without re-reading the state itself


class RedisStore:
    """The client, the key namespace and `call`, which times every round trip and maps failures."""

    def __init__(self, settings: RedisSettings, metrics: StateStoreMetrics) -> None:
        self.settings = settings
        self.metrics = metrics
        self.prefix = settings.key_prefix
        # A blocking pool: past max_connections a call waits (up to op_timeout_s) for a free connection
        # instead of failing at once.
        pool = aioredis.BlockingConnectionPool.from_url(
            settings.url,
            socket_connect_timeout=settings.connect_timeout_s,
            socket_timeout=settings.op_timeout_s,
            retry=Retry(NoBackoff(), 1),
            max_connections=settings.max_connections,
            timeout=settings.op_timeout_s,
            health_check_interval=30,
        )
        self.client: aioredis.Redis = aioredis.Redis(connection_pool=pool)
        self.pipeliner = Pipeliner(
            self.client, settings.op_timeout_s, connect_timeout_s=settings.connect_timeout_s
        )
        self.notifier = Notifier(self, self.key("g", ""))

    def key(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    def script(self, text: str) -> AsyncScript:
        return self.client.register_script(text)

    def eval(
        self,
        script: AsyncScript,
        keys: Sequence[Any],
        args: Sequence[Any],
        linger_s: float = 0.0,
        busy_linger_s: float = 0.0,
    ) -> asyncio.Future[Any]:
        """Run a Lua script, in the pipeline of this event-loop turn (redis_pipeline.py), or within `linger_s`
        for a call nobody waits for, or with the replies of the batch in flight (`busy_linger_s`)."""
        return self.pipeliner.run(script, keys, args, linger_s, busy_linger_s)

    async def call(self, op: str, pending: Awaitable[T]) -> T:
        """Run one store operation; any failure becomes `StateStoreUnavailable` naming the operation."""
        histogram, errors = self.metrics.op(op)
        started = time.perf_counter()
        try:
            result = await pending
        except STORE_ERRORS as exc:
            errors.inc()
            logger.warning("state store %s failed: %s: %s", op, type(exc).__name__, exc)
            raise StateStoreUnavailable(
                f"the state store ({redact_text(self.settings.url)}) failed during {op}: "
                f"{type(exc).__name__}: {exc}; retry later"
            ) from None
        histogram.observe(time.perf_counter() - started)
        return result

    def send(self, op: str, pending: asyncio.Future[Any], context: str) -> None:
        """Run one store operation whose answer nobody waits for: its failure is counted and logged (naming
        `context`) like `call`'s, but raised to no one. `close` still waits for it."""
        histogram, errors = self.metrics.op(op)
        started = time.perf_counter()

        def done(future: asyncio.Future[Any]) -> None:
            exc = None if future.cancelled() else future.exception()
            if exc is None and not future.cancelled():
                histogram.observe(time.perf_counter() - started)
                return
            errors.inc()
            logger.warning("state store %s failed (%s): %s: %s", op, context, type(exc).__name__, exc)

        pending.add_done_callback(done)

    async def start(self) -> None:
        try:
            await self.client.ping()
        except STORE_ERRORS as exc:
            raise StateStoreUnavailable(
                f"state_url {redact_text(self.settings.url)}: cannot reach Redis: {type(exc).__name__}: {exc}"
            ) from None
        await self.notifier.start()

    async def close(self) -> None:
        await self.pipeliner.close()  # after the calls nobody waited for (`send`) have reached Redis
        await self.notifier.close()
        await self.client.aclose()


@dataclass(eq=False)
class Inbox:
    """One waiter's wake-up: set by a message on its channel, or with an error when the store is lost."""

    event: asyncio.Event = field(default_factory=asyncio.Event)
    error: StateStoreUnavailable | None = None

    async def wait(self, timeout_s: float) -> None:
        """Return after a message or `timeout_s`, whichever comes first; raise if the store was lost."""
        if not self.event.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s):
                    await self.event.wait()
        self.event.clear()
        if self.error is not None:
            raise self.error


@dataclass(eq=False)
class _Channel:
    inboxes: set[Inbox] = field(default_factory=set)
    confirmations: deque[asyncio.Future[None]] = field(default_factory=deque)


class Notifier:
    """Per-key channels are subscribed while someone listens. The channels under `broadcast_prefix` (groups:
    a completion wakes members on every replica anyway) are covered by one pattern subscription made at
    connect time, so listening to one of them costs no round trip."""

    def __init__(self, store: RedisStore, broadcast_prefix: str) -> None:
        self.store = store
        self.broadcast = broadcast_prefix.encode()
        escaped = "".join("\\" + c if c in "*?[]\\" else c for c in broadcast_prefix)
        self._pattern = (escaped + "*").encode()
        self._channels: dict[bytes, _Channel] = {}
        self._pubsub: Any = None
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._keepalive = store.key("notifier").encode()
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep  # the reconnect back-off's (tests')

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="state-store-notifier")
        try:
            async with asyncio.timeout(self.store.settings.connect_timeout_s * 2 + 1):
                await self._ready.wait()
        except TimeoutError:
            raise StateStoreUnavailable("the state store's pub/sub connection did not open") from None

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._pubsub is not None:
            with contextlib.suppress(*STORE_ERRORS):
                await self._pubsub.aclose()

    async def publish(self, channel: str) -> None:
        await self.store.call("publish", self.store.client.publish(channel, b"1"))

    @contextlib.asynccontextmanager
    async def listen(self, channel: str) -> AsyncIterator[Inbox]:
        """Subscribed (confirmed by Redis) for the body; the inbox is woken by each message on `channel`."""
        name = channel.encode()
        inbox = Inbox()
        state = self._channels.get(name)
        try:
            if name.startswith(self.broadcast):
                if self._pubsub is None or not self._ready.is_set():
                    raise StateStoreUnavailable("the state store's pub/sub connection is down; retry later")
                if state is None:
                    state = self._channels[name] = _Channel()
                state.inboxes.add(inbox)
            elif state is None:
                state = self._channels[name] = _Channel()
                pubsub = self._pubsub
                if pubsub is None or not self._ready.is_set():
                    raise StateStoreUnavailable("the state store's pub/sub connection is down; retry later")
                confirmed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                state.confirmations.append(confirmed)
                state.inboxes.add(inbox)
                await self.store.call("subscribe", pubsub.subscribe(name))
                await self._confirmed(confirmed)
            else:
                state.inboxes.add(inbox)
                if state.confirmations:  # someone else's subscribe is on its way: wait for it too
                    await self._confirmed(state.confirmations[-1])
            yield inbox
        finally:
            self._forget(name, inbox)

    async def _confirmed(self, future: asyncio.Future[None]) -> None:
        try:
            async with asyncio.timeout(self.store.settings.op_timeout_s):
                await asyncio.shield(future)
        except TimeoutError:
            raise StateStoreUnavailable("the state store did not confirm a subscription in time") from None

    def _forget(self, name: bytes, inbox: Inbox) -> None:
        state = self._channels.get(name)
        if state is None:
            return
        state.inboxes.discard(inbox)
        if state.inboxes:
            return
        del self._channels[name]
        if name.startswith(self.broadcast):
            return  # covered by the pattern: nothing to unsubscribe
        for future in state.confirmations:
            if not future.done():
                future.cancel()
        pubsub = self._pubsub
        if pubsub is not None and self._ready.is_set():
            task = asyncio.get_running_loop().create_task(self._unsubscribe(pubsub, name))
            task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def _unsubscribe(self, pubsub: Any, name: bytes) -> None:
        with contextlib.suppress(*STORE_ERRORS):
            await pubsub.unsubscribe(name)

    async def _run(self) -> None:
        backoff_s = 0.05
        first = True
        while True:
            pubsub = self.store.client.pubsub()
            try:
                await pubsub.subscribe(self._keepalive)  # opens the connection; keeps it open when idle
                await pubsub.psubscribe(self._pattern)
                own = [name for name in self._channels if not name.startswith(self.broadcast)]
                if own:
                    await pubsub.subscribe(*own)
                self._pubsub = pubsub
                if not first:
                    self.store.metrics.reconnects.inc()
                    logger.info("state store: pub/sub connection re-established")
                first = False
                self._ready.set()
                backoff_s = 0.05
                while True:
                    message = await pubsub.get_message(timeout=1.0)
                    if message is not None:
                        self._dispatch(message)
            except asyncio.CancelledError:
                raise
            except STORE_ERRORS as exc:
                self._lost(exc)
                with contextlib.suppress(*STORE_ERRORS):
                    await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]  # typed from redis 8
                await self.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, 2.0)

    def _dispatch(self, message: dict[str, Any]) -> None:
        state = self._channels.get(message["channel"])
        if state is None:
            return
        kind = message["type"]
        if kind in ("message", "pmessage"):
            for inbox in state.inboxes:
                inbox.event.set()
        elif kind == "subscribe" and state.confirmations:
            future = state.confirmations.popleft()
            if not future.done():
                future.set_result(None)

    def _lost(self, exc: BaseException) -> None:
        if self._ready.is_set():
            logger.warning(
                "state store: pub/sub connection lost (%s: %s); reconnecting", type(exc).__name__, exc
            )
        self._ready.clear()
        self._pubsub = None
        self.store.metrics.errors.labels("pubsub").inc()
        error = StateStoreUnavailable(
            f"the state store connection was lost ({type(exc).__name__}); retry later"
        )
        for state in self._channels.values():
            for future in state.confirmations:
                if not future.done():
                    future.set_exception(error)
                    future.exception()
            state.confirmations.clear()
            for inbox in state.inboxes:
                inbox.error = error
                inbox.event.set()
