"""Continuous batching for generation: requests join a running decode loop as soon as a slot is free.

`Batcher` (batcher.py) runs one forward call per batch; for generation that call lasts until the batch's
longest request ends, and everything that arrived meanwhile waits for all of it. `ContinuousBatcher` keeps the
same caller side (`submit`, `QueueFull`, `BatcherStopped`, `queue_length`, `in_flight`, `on_batch`) but drives
a `DecodeBatch` one step at a time:

1. When nothing runs, wait for the first request and collect for `batch_wait_timeout_s`, as `Batcher` does
   (one prefill for a burst is cheaper than many).
2. Before every step: rows whose caller went away (client disconnect cancels the future) are cut out of the
   batch, and queued requests fill the free slots (up to `max_batch_size` rows): they are prefilled and
   spliced into the running batch.
3. One step on the shared forward thread: each row gets its next token; finished rows leave the batch and
   their futures resolve at once, while the others keep decoding.

Each step is its own job on the forward thread, so other operations of the model (`/v1/score`) interleave
with a long generation instead of waiting for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Protocol

from rewardfleet.services.model_server.batcher import BatcherStopped, BatchStats, QueueFull, check_limits

logger = logging.getLogger(__name__)


class Stepper(Protocol):
    """The running batch (runners/decode_batch.py `DecodeBatch`), seen from the loop."""

    rows: list[Any]

    def __len__(self) -> int: ...
    def admit(self, items: list[Any]) -> list[Any]: ...
    def remove(self, rows: list[Any]) -> None: ...
    def step(self) -> list[Any]: ...
    def result(self, row: Any) -> Any: ...


@dataclass
class _Pending:
    item: Any
    future: asyncio.Future[Any]
    enqueued_at: float = field(default_factory=time.perf_counter)


class ContinuousBatcher:
    """Feeds `submit()`ted items into a `Stepper` between its steps; its `result(row)` is the caller's answer
    for a finished row. An exception instance `admit` returns in an item's place fails that item alone."""

    def __init__(
        self,
        new_batch: Callable[[], Stepper],
        *,
        name: str,
        executor: Executor,
        max_batch_size: int = 32,
        batch_wait_timeout_s: float = 0.005,
        max_queue: int = 1024,
        on_batch: Callable[[BatchStats], None] | None = None,
    ) -> None:
        check_limits(max_batch_size, batch_wait_timeout_s, max_queue)
        self.name = name
        self.max_batch_size = max_batch_size
        self.batch_wait_timeout_s = batch_wait_timeout_s
        self.max_queue = max_queue
        self._new_batch = new_batch
        self._executor = executor
        self._on_batch = on_batch
        self._queue: asyncio.Queue[_Pending] | None = None
        self._task: asyncio.Task[None] | None = None
        self._running: dict[int, tuple[Any, _Pending]] = {}  # id(row) -> (row, its request)
        self._admitting = 0  # requests being prefilled into the batch right now

    # -- lifecycle -----------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self.running:
            return
        self._queue = asyncio.Queue(maxsize=self.max_queue)
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"{self.name}-loop")

    async def stop(self) -> None:
        """Fail every request not answered yet with `BatcherStopped` (queued and running alike); a step
        already on the forward thread finishes there and its results are dropped."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._fail([p for _, p in self._running.values()], BatcherStopped(f"{self.name} stopped"))
        self._running.clear()
        if self._queue is not None:
            while not self._queue.empty():
                self._fail([self._queue.get_nowait()], BatcherStopped(f"{self.name} stopped"))

    # -- the caller side -----------------------------------------------------------------------------------
    @property
    def queue_length(self) -> int:
        """Requests waiting for a slot."""
        return self._queue.qsize() if self._queue is not None else 0

    @property
    def in_flight(self) -> int:
        """Requests decoding right now (rows of the running batch)."""
        return len(self._running) + self._admitting

    def submit(self, item: Any) -> asyncio.Future[Any]:
        if self._queue is None or not self.running:
            raise BatcherStopped(f"{self.name} is not running")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        try:
            self._queue.put_nowait(_Pending(item, future))
        except asyncio.QueueFull:
            raise QueueFull(self.name, self.max_queue) from None
        return future

    async def __call__(self, item: Any) -> Any:
        return await self.submit(item)

    # -- the loop ------------------------------------------------------------------------------------------
    async def _first(self) -> list[_Pending]:
        """Nothing is running: wait for a request, then collect what arrives within the batch window."""
        queue = self._queue
        assert queue is not None
        new = [await queue.get()]
        deadline = time.monotonic() + self.batch_wait_timeout_s
        try:
            while len(new) < self.max_batch_size:
                while len(new) < self.max_batch_size and not queue.empty():
                    new.append(queue.get_nowait())
                remaining = deadline - time.monotonic()
                if len(new) >= self.max_batch_size or remaining <= 0:
                    break
                try:
                    async with asyncio.timeout(remaining):
                        new.append(await queue.get())
                except TimeoutError:
                    break
        except asyncio.CancelledError:  # stop() during the window: these are off the queue, fail them here
            self._fail(new, BatcherStopped(f"{self.name} stopped"))
            raise
        return new

    def _waiting(self, new: list[_Pending]) -> list[_Pending]:
        """`new` plus the queued requests that fit into the free slots, taken without waiting."""
        queue = self._queue
        assert queue is not None
        new = [p for p in new if not p.future.cancelled()]
        while len(self._running) + len(new) < self.max_batch_size and not queue.empty():
            p = queue.get_nowait()
            if not p.future.cancelled():
                new.append(p)
        return new

    @staticmethod
    def _fail(pending: list[_Pending], exc: BaseException) -> None:
        for p in pending:
            if not p.future.done():
                p.future.set_exception(exc)

    def _advance(
        self, batch: Stepper, new: list[Any], gone: list[Any]
    ) -> tuple[list[Any], list[tuple[Any, Any]]]:
        """On the forward thread: cut out rows whose client left, admit the new items, run one step; the
        finished rows come back with their answers (decoding is the tokenizer's work: not on the loop)."""
        batch.remove(gone)
        admitted = batch.admit(new) if new else []
        return admitted, [(row, batch.result(row)) for row in batch.step()]

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        batch = self._new_batch()
        new: list[_Pending] = []
        while True:
            if not self._running:
                new = await self._first()
            new = self._waiting(new)
            gone = [row for row, p in self._running.values() if p.future.done()]
            for row in gone:  # the client left (its future was cancelled): free the slot
                self._running.pop(id(row))
            started = time.perf_counter()
            self._admitting = len(new)
            try:
                admitted, finished = await loop.run_in_executor(
                    self._executor, self._advance, batch, [p.item for p in new], gone
                )
            except asyncio.CancelledError:
                self._fail(new, BatcherStopped(f"{self.name} stopped"))
                raise
            except Exception as exc:
                # The batch's state is unknown now: fail every request in it and start a fresh one.
                logger.exception("%s: decode step failed with %d rows", self.name, len(self._running))
                self._fail(new + [p for _, p in self._running.values()], exc)
                self._running.clear()
                batch, new = self._new_batch(), []
                continue
            finally:
                self._admitting = 0
            forward_s = time.perf_counter() - started
            for p, row in zip(new, admitted, strict=True):
                if isinstance(row, BaseException):
                    self._fail([p], row)
                else:
                    self._running[id(row)] = (row, p)
            size = len(self._running)
            for row, answer in finished:
                entry = self._running.pop(id(row), None)
                if entry is not None and not entry[1].future.done():
                    entry[1].future.set_result(answer)
            if self._on_batch is not None and size:
                waits = [started - p.enqueued_at for p in new]
                self._on_batch(BatchStats(size, waits, forward_s))
            new = []
