"""`WorkerPool`: the process pool that runs sync reward functions, seen from the gateway.

Sync functions run in `pebble.ProcessPool` workers started with `spawn`: a call that exceeds its timeout has
its worker killed and replaced, a worker that dies (`os._exit`, a segfault) fails only the task it was running
(`ProcessExpired`), and functions that rely on `signal.alarm` (math-verify) work because they run in the
worker's main thread. What runs inside a worker is `worker.py`; how calls are grouped into tasks is
`chunking.py`.

Calls submitted in the same event-loop turn (the samples of one `/score/batch`, or concurrent `/score`s) for
the same function go to the workers in chunks, one task per chunk, when the function is cheap enough that a
chunk fits well inside one call's timeout; each call's result is the one it would get alone. While every
worker has a chunk running and one waiting, new calls wait here instead of in pebble's queue, and go out
together, chunked, when a chunk ends: single posts arrive a call or two per turn, and a task of one call
costs the gateway more CPU than a cheap rule does (chunking.py). An idle pool gets each call at once. A
chunk that fails as a whole (a call in it hangs past the timeout, kills its worker, or does not pickle) is
run again call by call, each as its own task with the full timeout, so only the faulty call ends in
`Timeout` or `WorkerCrashed` and its neighbours get their scores.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pebble

from rewardfleet.services.gateway.execution.chunking import CostEstimates, chunk_sizes
from rewardfleet.services.gateway.execution.loader import FunctionRef
from rewardfleet.services.gateway.execution.worker import WorkerResult, init_worker, run_call, run_calls

# Chunks out per worker before new calls are held back: one running and one waiting, so a worker that ends
# a chunk has its next one at hand while the event loop hears of the end and sends more.
_CHUNKS_PER_WORKER = 2
_Key = tuple[FunctionRef, float, str | None]  # calls that may share a task: same function, timeout, tokenizer
_Pending = tuple[dict[str, Any], "asyncio.Future[WorkerResult]"]


class WorkerPool:
    """A spawn-context `pebble.ProcessPool` with an awaitable `submit` and a count of tasks in flight."""

    def __init__(
        self,
        workers: int,
        preload_refs: tuple[FunctionRef, ...],
        on_queue_depth: Callable[[int], None] | None = None,
        memory_limit_bytes: int | None = None,
        chunking: bool = True,
        max_extra_size: int | None = None,
    ) -> None:
        self.workers = workers
        self.in_flight = 0
        self.chunking = chunking
        self.costs = CostEstimates()
        self.on_queue_depth = on_queue_depth
        self._pool = pebble.ProcessPool(
            max_workers=workers,
            initializer=init_worker,
            initargs=(preload_refs, memory_limit_bytes, max_extra_size),
            context=multiprocessing.get_context("spawn"),
        )
        self._pending: dict[_Key, list[_Pending]] = {}
        self._flush_scheduled = False
        self._chunk_tasks: set[asyncio.Task[None]] = set()  # the chunks out (strong references)

    async def submit(
        self, ref: FunctionRef, kwargs: dict[str, Any], timeout_s: float, tokenizer_path: str | None
    ) -> WorkerResult:
        """Raises `concurrent.futures.TimeoutError` (worker killed and replaced) or `pebble.ProcessExpired`
        (the worker died); the pool carries on either way."""
        self._track(+1)
        try:
            if not self.chunking:
                return await self._run_alone(ref, kwargs, timeout_s, tokenizer_path)
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[WorkerResult] = loop.create_future()
            self._pending.setdefault((ref, timeout_s, tokenizer_path), []).append((kwargs, waiter))
            if not self._flush_scheduled:
                # After every task that is ready this turn has submitted its call: one flush sees them all.
                self._flush_scheduled = True
                loop.call_soon(self._flush)
            return await waiter
        finally:
            self._track(-1)

    async def _run_alone(
        self, ref: FunctionRef, kwargs: dict[str, Any], timeout_s: float, tokenizer_path: str | None
    ) -> WorkerResult:
        future = self._pool.schedule(run_call, args=(ref, kwargs, tokenizer_path), timeout=timeout_s)
        try:
            result = await asyncio.wrap_future(future)
        finally:
            if not future.done():  # the request was cancelled (client went away): free the worker
                future.cancel()
        self.costs.observe(ref, result[3] - result[2])
        return result

    def _flush(self) -> None:
        self._flush_scheduled = False
        if len(self._chunk_tasks) >= self.workers * _CHUNKS_PER_WORKER:
            return  # every worker is busy: the next chunk to end sends what gathered meanwhile
        pending, self._pending = self._pending, {}
        for (ref, timeout_s, tokenizer_path), calls in pending.items():
            live = [c for c in calls if not c[1].done()]
            sizes = chunk_sizes(len(live), self.workers, self.costs.per_call_s(ref), timeout_s)
            start = 0
            for size in sizes:
                chunk = live[start : start + size]
                start += size
                task = asyncio.ensure_future(self._run_chunk(ref, chunk, timeout_s, tokenizer_path))
                self._chunk_tasks.add(task)
                task.add_done_callback(self._chunk_ended)

    def _chunk_ended(self, task: asyncio.Task[None]) -> None:
        self._chunk_tasks.discard(task)
        if self._pending and not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    async def _run_chunk(
        self, ref: FunctionRef, chunk: list[_Pending], timeout_s: float, tokenizer_path: str | None
    ) -> None:
        if len(chunk) == 1:
            kwargs, waiter = chunk[0]
            await self._settle(waiter, self._run_alone(ref, kwargs, timeout_s, tokenizer_path))
            return
        # The chunk's timeout is one call's: chunks are sized so that all of them fit well inside it.
        future: Future[list[WorkerResult]] = self._pool.schedule(
            run_calls, args=(ref, [kwargs for kwargs, _ in chunk], tokenizer_path), timeout=timeout_s
        )
        watch = [waiter for _, waiter in chunk]
        for waiter in watch:  # every caller gone: free the worker
            waiter.add_done_callback(lambda _: _cancel_if_abandoned(future, watch))
        try:
            results = await asyncio.wrap_future(future)
        except Exception:
            # Which call failed is unknown: run each alone, with its own full timeout.
            await asyncio.gather(
                *(
                    self._settle(waiter, self._run_alone(ref, kwargs, timeout_s, tokenizer_path))
                    for kwargs, waiter in chunk
                    if not waiter.done()
                )
            )
            return
        for (_, waiter), result in zip(chunk, results, strict=True):
            self.costs.observe(ref, result[3] - result[2])
            if not waiter.done():
                waiter.set_result(result)

    @staticmethod
    async def _settle(waiter: asyncio.Future[WorkerResult], call: Any) -> None:
        if waiter.done():
            call.close()
            return
        task = asyncio.ensure_future(call)
        # The caller went away: cancelling the call cancels its pool task, which frees the worker.
        waiter.add_done_callback(lambda w: task.cancel() if w.cancelled() else None)
        try:
            result = await task
        except asyncio.CancelledError:
            if waiter.cancelled():
                return
            raise
        except Exception as exc:
            if not waiter.done():
                waiter.set_exception(exc)
        else:
            if not waiter.done():
                waiter.set_result(result)

    def _track(self, delta: int) -> None:
        self.in_flight += delta
        if self.on_queue_depth is not None:
            self.on_queue_depth(self.queue_depth)

    @property
    def queue_depth(self) -> int:
        return max(0, self.in_flight - self.workers)

    async def warm_up(self, timeout_s: float = 120.0) -> None:
        """Start every worker (spawn + preload) before the gateway says it is ready."""
        futures = [self._pool.schedule(time.monotonic) for _ in range(self.workers)]
        await asyncio.wait_for(asyncio.gather(*(asyncio.wrap_future(f) for f in futures)), timeout_s)

    def close(self) -> None:
        self._pool.stop()
        self._pool.join(timeout=10)


def _cancel_if_abandoned(future: Future[Any], waiters: list[asyncio.Future[WorkerResult]]) -> None:
    if not future.done() and all(w.cancelled() for w in waiters):
        future.cancel()
