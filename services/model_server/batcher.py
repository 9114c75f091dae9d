"""Server-side dynamic batching: many single requests, one forward pass.

The algorithm is Ray Serve's `@serve.batch`, written as a plain class:

1. `submit(item)` puts `(item, future)` on a bounded queue and returns the future. A full queue raises
   `QueueFull` at once (the routes answer 503 + Retry-After) instead of letting latency grow without bound.
2. One background task waits for the first item, then keeps collecting until `max_batch_size` items are in
   hand or `batch_wait_timeout_s` has passed *since the first item arrived*.
3. Futures already cancelled (the client went away) are dropped before the forward pass.
4. The forward function runs on an executor thread, never on the event loop. Pass one shared single-thread
   executor to every batcher of a model so torch never runs two forwards at once (that would only
   oversubscribe the cores).
5. The forward must return one result per item. A result that is an exception instance fails only its own
   request (e.g. one input too long for the context); an exception raised by the forward fails every request
   of the batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Generic, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

ForwardFn = Callable[[list[T]], Sequence[R | BaseException]]


class QueueFull(Exception):
    """The batcher's queue holds `max_queue` items already; the caller should retry later."""

    def __init__(self, name: str, max_queue: int) -> None:
        super().__init__(f"{name}: queue is full ({max_queue} requests waiting); retry later")
        self.name = name
        self.max_queue = max_queue


class BatcherStopped(Exception):
    """The batcher is not running (not started yet, or shutting down)."""


@dataclass
class BatchStats:
    """What one batch looked like; passed to the `on_batch` hook (metrics live outside this module)."""

    size: int
    queue_wait_s: list[float]
    forward_s: float


@dataclass
class _Pending(Generic[T, R]):
    item: T
    future: asyncio.Future[R]
    enqueued_at: float = field(default_factory=time.perf_counter)


def check_limits(max_batch_size: int, batch_wait_timeout_s: float, max_queue: int) -> None:
    """The settings every batcher (this one and the continuous one) takes, checked the same way."""
    if max_batch_size < 1:
        raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
    if batch_wait_timeout_s < 0:
        raise ValueError(f"batch_wait_timeout_s must be >= 0, got {batch_wait_timeout_s}")
    if max_queue < 1:
        raise ValueError(f"max_queue must be >= 1, got {max_queue}")


class Batcher(Generic[T, R]):
    """Coalesces concurrent `submit()` calls into batches for a synchronous `forward(items) -> results`."""

    def __init__(
        self,
        forward: ForwardFn[T, R],
        *,
        name: str = "batcher",
        max_batch_size: int = 32,
        batch_wait_timeout_s: float = 0.005,
        max_queue: int = 1024,
        executor: Executor | None = None,
        on_batch: Callable[[BatchStats], None] | None = None,
    ) -> None:
        check_limits(max_batch_size, batch_wait_timeout_s, max_queue)
        self.name = name
        self.max_batch_size = max_batch_size
        self.batch_wait_timeout_s = batch_wait_timeout_s
        self.max_queue = max_queue
        self._forward = forward
        self._on_batch = on_batch
        self._own_executor = executor is None
        self._executor = executor or ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{name}-forward")
        self._queue: asyncio.Queue[_Pending[T, R]] | None = None
        self._task: asyncio.Task[None] | None = None
        self._in_flight = 0

    # -- lifecycle -------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start the background batching task on the running event loop."""
        if self.running:
            return
        self._queue = asyncio.Queue(maxsize=self.max_queue)
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"{self.name}-loop")

    async def stop(self) -> None:
        """Stop batching: every request not answered yet fails with `BatcherStopped`.

        That covers the queued requests, a partial batch still being collected and a batch being computed (a
        forward already running finishes on its thread; its results are dropped). None is run during stop:
        the server is going away, and the routes answer `BatcherStopped` with 503, which sglang-router
        retries on another replica, instead of making shutdown wait for a forward nobody may read.
        """
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._queue is not None:
            while not self._queue.empty():
                self._fail_stopped([self._queue.get_nowait()])
        if self._own_executor:
            # Waiting for a running forward must not block the event loop.
            await asyncio.to_thread(self._executor.shutdown, True)

    # -- the caller side ---------------------------------------------------------------------------------
    @property
    def queue_length(self) -> int:
        """Items waiting for a batch (not counting the batch being computed)."""
        return self._queue.qsize() if self._queue is not None else 0

    @property
    def in_flight(self) -> int:
        """Items in the batch being computed right now."""
        return self._in_flight

    def submit(self, item: T) -> asyncio.Future[R]:
        """Queue one item; the future resolves to its result. Raises `QueueFull` or `BatcherStopped`."""
        if self._queue is None or not self.running:
            raise BatcherStopped(f"{self.name} is not running")
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        try:
            self._queue.put_nowait(_Pending(item, future))
        except asyncio.QueueFull:
            raise QueueFull(self.name, self.max_queue) from None
        return future

    async def __call__(self, item: T) -> R:
        """Submit one item and wait for its result. Cancelling the caller cancels the queued request."""
        return await self.submit(item)

    # -- the batching loop -----------------------------------------------------------------------------
    async def _collect(self) -> list[_Pending[T, R]]:
        """Wait for the first item, then gather more until the batch is full or the wait budget is spent.

        Items taken off the queue are only in this partial batch: if `stop()` cancels the collection, they
        fail with `BatcherStopped` here, like the items still queued, or nobody would ever resolve them.
        """
        queue = self._queue
        if queue is None:
            raise BatcherStopped(f"{self.name} is not running")
        batch: list[_Pending[T, R]] = []
        try:
            batch.append(await queue.get())
            deadline = time.monotonic() + self.batch_wait_timeout_s
            while len(batch) < self.max_batch_size:
                # Take whatever is already queued without paying for a timer per item.
                while len(batch) < self.max_batch_size and not queue.empty():
                    batch.append(queue.get_nowait())
                if len(batch) >= self.max_batch_size:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancel that races the get.
                    async with asyncio.timeout(remaining):
                        batch.append(await queue.get())
                except TimeoutError:
                    break
        except asyncio.CancelledError:
            self._fail_stopped(batch)
            raise
        return batch

    def _fail_stopped(self, batch: list[_Pending[T, R]]) -> None:
        for p in batch:
            if not p.future.done():
                p.future.set_exception(BatcherStopped(f"{self.name} stopped"))

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = await self._collect()
            live = [p for p in batch if not p.future.cancelled()]
            if not live:
                continue
            started = time.perf_counter()
            self._in_flight = len(live)
            try:
                results = await loop.run_in_executor(self._executor, self._forward, [p.item for p in live])
                if len(results) != len(live):
                    raise RuntimeError(
                        f"{self.name}: forward returned {len(results)} results for a batch of {len(live)}"
                    )
            except asyncio.CancelledError:
                self._fail_stopped(live)
                raise
            except Exception as exc:
                logger.exception("%s: forward failed for a batch of %d", self.name, len(live))
                for p in live:
                    if not p.future.done():
                        p.future.set_exception(exc)
            else:
                for p, result in zip(live, results, strict=True):
                    if p.future.done():  # cancelled while the forward ran
                        continue
                    if isinstance(result, BaseException):
                        p.future.set_exception(result)
                    else:
                        p.future.set_result(result)
            finally:
                self._in_flight = 0
            if self._on_batch is not None:
                forward_s = time.perf_counter() - started
                self._on_batch(BatchStats(len(live), [started - p.enqueued_at for p in live], forward_s))
