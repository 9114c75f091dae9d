"""`ModelServer`: the loaded runner, one batcher per operation, readiness, and the request path into a batch.

The app's lifespan owns it: `boot()` loads the model off the event loop (so `/health` can answer 503 while
it loads), starts the batchers on one shared forward thread, warms every operation up through its batcher,
and only then turns ready. `close()` stops the batchers and the thread.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from starlette.requests import Request

from rewardfleet.services.model_server.batcher import Batcher, BatchStats, QueueFull
from rewardfleet.services.model_server.config import ModelServerSettings
from rewardfleet.services.model_server.continuous import ContinuousBatcher
from rewardfleet.services.model_server.engine import EngineProcess, EngineRunner
from rewardfleet.services.model_server.errors import ClientGone, InvalidRequest, NotReady, Overloaded
from rewardfleet.services.model_server.metrics import ModelServerMetrics
from rewardfleet.services.model_server.runners.base import Runner
from rewardfleet.services.model_server.runners.deterministic import serving_continuous, serving_operations

logger = logging.getLogger(__name__)

# Generation runs continuous batching (continuous.py); every other operation one forward per batch.
AnyBatcher = Batcher[Any, Any] | ContinuousBatcher


async def _cancel_on_disconnect(request: Request, waiter: asyncio.Future[Any]) -> None:
    # The body is already read, so the next ASGI message can only be `http.disconnect`.
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            waiter.cancel()
            return


def _gauge(batcher: AnyBatcher, attribute: str) -> Callable[[], float]:
    return lambda: float(getattr(batcher, attribute))


class ModelServer:
    def __init__(self, settings: ModelServerSettings, metrics: ModelServerMetrics) -> None:
        self.settings = settings
        self.metrics = metrics
        self.runner: Runner | EngineRunner | None = None
        self.engine: EngineProcess | None = None
        self.batchers: dict[str, AnyBatcher] = {}
        self.ready = False
        self.boot_error: BaseException | None = None
        self.started_at = time.time()
        # One forward thread for every operation: torch never runs two forwards at once.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="forward")

    # -- lifecycle ---------------------------------------------------------------------------------------
    def _load(self) -> Runner | EngineRunner:
        """The model in an engine process (reward models, encoders) or in this one (generation)."""
        from rewardfleet.services.model_server.runners.loader import load_runner, model_kind

        if self.settings.engine_process and model_kind(self.settings) != "generation":
            self.engine = EngineProcess(self.settings)
            return EngineRunner(self.engine.start(), self.engine)
        return load_runner(self.settings)

    @property
    def engine_alive(self) -> bool:
        return self.engine is None or self.engine.alive

    async def boot(self) -> None:
        loop = asyncio.get_running_loop()
        runner = await loop.run_in_executor(self._executor, self._load)
        self.runner = runner
        deterministic = self.settings.deterministic
        continuous = serving_continuous(runner, deterministic)
        for op, fn in serving_operations(runner, deterministic).items():
            kwargs: dict[str, Any] = {
                "name": op,
                "max_batch_size": self.settings.max_batch_size,
                "batch_wait_timeout_s": self.settings.batch_wait_timeout_s,
                "max_queue": self.settings.max_queue,
                "executor": self._executor,
                "on_batch": self._observer(op),
            }
            batcher: AnyBatcher = (
                ContinuousBatcher(continuous[op], **kwargs) if op in continuous else Batcher(fn, **kwargs)
            )
            batcher.start()
            self.batchers[op] = batcher
            self.metrics.queue_length.labels(op).set_function(_gauge(batcher, "queue_length"))
            self.metrics.running.labels(op).set_function(_gauge(batcher, "in_flight"))
        self.metrics.sglang_queue_reqs.set_function(lambda: self.load()["num_waiting_reqs"])
        self.metrics.sglang_running_reqs.set_function(lambda: self.load()["num_running_reqs"])
        if not self.settings.skip_server_warmup:
            # A padded batch per operation straight on the forward thread, then one request through each
            # batcher, one at a time (the queue may hold a single item).
            await loop.run_in_executor(self._executor, runner.warmup)
            for op, items in runner.warmup_inputs().items():
                await self.batchers[op].submit(items[0])
        self.ready = True
        self.metrics.ready.set(1)
        logger.info("model server ready: %s (%s)", self.settings.model_path, runner.kind)

    async def close(self) -> None:
        self.ready = False
        self.metrics.ready.set(0)
        for batcher in self.batchers.values():
            await batcher.stop()
        await asyncio.to_thread(self._executor.shutdown, True, cancel_futures=True)
        if self.engine is not None:
            await asyncio.to_thread(self.engine.close)

    def _observer(self, op: str):  # type: ignore[no-untyped-def]
        def observe(stats: BatchStats) -> None:
            self.metrics.observe_batch(op, stats)

        return observe

    # -- request path ------------------------------------------------------------------------------------
    def require_runner(self) -> Runner | EngineRunner:
        if not self.ready or self.runner is None:
            raise NotReady("the model is still loading or warming up; retry shortly")
        return self.runner

    def require_kind(self, *kinds: str, endpoint: str) -> Runner | EngineRunner:
        runner = self.require_runner()
        if runner.kind not in kinds:
            needed = " or ".join(kinds) if len(kinds) < 3 else f"{', '.join(kinds[:-1])} or {kinds[-1]}"
            raise InvalidRequest(
                f"{endpoint} needs a {needed} model; this server runs a {runner.kind} model "
                f"({', '.join(runner.architectures) or 'unknown architecture'})"
            )
        return runner

    @property
    def pooling_op(self) -> str:
        """The batcher behind the pooling endpoints: reward logits or sentence embeddings."""
        runner = self.require_kind("reward", "encoder", "clip", endpoint="this endpoint")
        return "score" if runner.kind == "reward" else "embed"

    async def run_many(self, op: str, items: Sequence[Any], request: Request | None = None) -> list[Any]:
        """Queue every item as its own request, wait for all results; cancel them if the client leaves."""
        self.require_runner()
        batcher = self.batchers.get(op)
        if batcher is None:  # e.g. /v1/score on a vision-language model (runners/vision.py)
            raise InvalidRequest(f"this model does not serve {op!r} requests")
        futures: list[asyncio.Future[Any]] = []
        try:
            for item in items:
                futures.append(batcher.submit(item))
        except QueueFull as exc:
            for f in futures:
                f.cancel()
            self.metrics.rejected.labels(op).inc()
            raise Overloaded(str(exc)) from None
        waiter: asyncio.Future[Any] = futures[0] if len(futures) == 1 else asyncio.gather(*futures)
        try:
            if request is None:
                result = await waiter
            else:
                result = await self._unless_disconnected(waiter, request)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
        return [result] if len(futures) == 1 else list(result)

    async def run_one(self, op: str, item: Any, request: Request | None = None) -> Any:
        return (await self.run_many(op, [item], request))[0]

    @staticmethod
    async def _unless_disconnected(waiter: asyncio.Future[Any], request: Request) -> Any:
        """Await `waiter`, cancelling it (so the batcher drops the work) if the client disconnects first.

        A watcher task plus a done-callback, not `asyncio.wait`: this runs once per request on the hot path.
        """
        watcher = asyncio.ensure_future(_cancel_on_disconnect(request, waiter))
        waiter.add_done_callback(lambda _: watcher.cancel())
        try:
            return await waiter
        except asyncio.CancelledError:
            if watcher.done() and not watcher.cancelled():
                raise ClientGone("client disconnected") from None
            raise

    # -- load report -----------------------------------------------------------------------------------
    def load(self) -> dict[str, int]:
        """Requests waiting and in flight, in the per-DP-rank shape sglang-router's power_of_two reads.

        The router polls `GET /get_load` and sums `num_tokens` over the list it gets back (checked against the
        0.3.2 binary in tests/router/test_power_of_two.py). Inputs are tokenised in the batch thread, so the
        count of requests stands in for tokens: the router only compares the number between workers.
        """
        waiting = sum(b.queue_length for b in self.batchers.values())
        running = sum(b.in_flight for b in self.batchers.values())
        return {
            "dp_rank": 0,
            "num_reqs": waiting + running,
            "num_waiting_reqs": waiting,
            "num_running_reqs": running,
            "num_tokens": waiting + running,
        }
