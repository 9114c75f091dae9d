"""`WorkerPool`: the process pool that runs sync reward functions, seen from the gateway.

Sync functions run in `pebble.ProcessPool` workers started with `spawn`: a call that exceeds its timeout has
its worker killed and replaced, a worker that dies (`os._exit`, a segfault) fails only the task it was running
(`ProcessExpired`), and functions that rely on `signal.alarm` (math-verify) work because they run in the
worker's main thread. What runs inside a worker is `worker.py`.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from collections.abc import Callable
from typing import Any

import pebble

from rewardfleet.services.gateway.execution.loader import FunctionRef
from rewardfleet.services.gateway.execution.worker import WorkerResult, init_worker, run_call


class WorkerPool:
    """A spawn-context `pebble.ProcessPool` with an awaitable `submit` and a count of tasks in flight."""

    def __init__(
        self,
        workers: int,
        preload_refs: tuple[FunctionRef, ...],
        on_queue_depth: Callable[[int], None] | None = None,
        memory_limit_bytes: int | None = None,
    ) -> None:
        self.workers = workers
        self.in_flight = 0
        self._on_queue_depth = on_queue_depth
        self._pool = pebble.ProcessPool(
            max_workers=workers,
            initializer=init_worker,
            initargs=(preload_refs, memory_limit_bytes),
            context=multiprocessing.get_context("spawn"),
        )

    async def submit(
        self, ref: FunctionRef, kwargs: dict[str, Any], timeout_s: float, tokenizer_path: str | None
    ) -> WorkerResult:
        """Raises `concurrent.futures.TimeoutError` (worker killed and replaced) or `pebble.ProcessExpired`
        (the worker died); the pool carries on either way."""
        future = self._pool.schedule(run_call, args=(ref, kwargs, tokenizer_path), timeout=timeout_s)
        self._track(+1)
        try:
            return await asyncio.wrap_future(future)
        finally:
            self._track(-1)
            if not future.done():  # the request was cancelled (client went away): free the worker
                future.cancel()

    def _track(self, delta: int) -> None:
        self.in_flight += delta
        if self._on_queue_depth is not None:
            self._on_queue_depth(self.queue_depth)

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
