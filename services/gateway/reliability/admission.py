"""Backpressure: bounded admission of work requests (per-function limits are `function_limits.py`).

`Admission` bounds the work routes (`/score`, `/score/batch`, `/openrlhf`, `/slime`): at most
`max_inflight_requests` run at once, at most `max_queued_requests` more wait (FIFO, up to `queue_timeout_s`)
for a slot, and the rest are answered at once with 429 + `Retry-After`. A queued request has not had its body
read yet, so the memory the gateway holds is bounded by `max_inflight_requests * max_body_bytes`. New work is
also refused with 429 while the sync pool's backlog (calls waiting for a worker process) is over
`max_pool_queue`, which bounds that queue too. While the gateway drains (see `drain.py`), work routes answer
503 + `Retry-After` and queued requests are released with the same answer.

`AdmissionMiddleware` is pure ASGI (no per-request task); a request that is admitted costs two integer
updates. Other routes (`/health`, `/ready`, `/metrics`) are never queued: liveness stays cheap under overload.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from rewardfleet.services.gateway.errors import Draining, GatewayError, Overloaded
from rewardfleet.services.gateway.metrics import GatewayMetrics

WORK_PATH_PREFIXES: tuple[str, ...] = ("/score", "/openrlhf", "/slime")


class Backlog:
    """Calls waiting for a sync worker, as last reported by the worker pool (which starts after admission)."""

    def __init__(self) -> None:
        self.depth = 0

    def set(self, depth: int) -> None:
        self.depth = depth


class Admission:
    """The counters and the FIFO of waiting requests; shared by the middleware and the drain."""

    def __init__(
        self,
        max_inflight: int,
        max_queued: int,
        queue_timeout_s: float,
        retry_after_s: int,
        max_backlog: int,
        backlog: Backlog,
        metrics: GatewayMetrics,
    ) -> None:
        self.max_inflight = max_inflight
        self.max_queued = max_queued
        self.queue_timeout_s = queue_timeout_s
        self.retry_after_s = retry_after_s
        self.max_backlog = max_backlog
        self.backlog = backlog
        self.metrics = metrics
        self.active = 0
        self.draining = False
        self._waiters: deque[asyncio.Future[bool]] = deque()

    @property
    def queued(self) -> int:
        return len(self._waiters)

    def _refuse(self, error: GatewayError) -> GatewayError:
        self.metrics.admission_rejected(error.type)
        return error.with_headers(Retry_After=str(self.retry_after_s))

    def _draining(self) -> GatewayError:
        return self._refuse(Draining("the gateway is shutting down; retry later"))

    async def enter(self) -> GatewayError | None:
        """Take a slot; None when admitted, else the refusal to send (`Overloaded` 429 or `Draining` 503)."""
        if self.draining:
            return self._draining()
        if self.backlog.depth > self.max_backlog:
            return self._refuse(
                Overloaded(f"the worker pool has over max_pool_queue={self.max_backlog} calls waiting")
            )
        if self.active < self.max_inflight and not self._waiters:
            self.active += 1
            return None
        if len(self._waiters) >= self.max_queued:
            return self._refuse(
                Overloaded(
                    f"{self.active} requests in flight and {len(self._waiters)} queued "
                    f"(max_inflight_requests={self.max_inflight}, max_queued_requests={self.max_queued})"
                )
            )
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            # The slot is handed over by `leave` (True) or refused by `start_draining` (False).
            admitted = await asyncio.wait_for(asyncio.shield(waiter), self.queue_timeout_s)
        except TimeoutError:
            if waiter.done() and waiter.result():  # handed a slot just as the wait ran out: give it back
                self.leave()
            else:
                waiter.cancel()
            return self._refuse(Overloaded(f"no slot freed within queue_timeout_s={self.queue_timeout_s}"))
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.result():
                self.leave()
            else:
                waiter.cancel()
            raise
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
        if not admitted:
            return self._draining()
        return None

    def leave(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(True)  # the slot passes straight to the next in line: `active` unchanged
                return
        self.active -= 1

    def start_draining(self) -> None:
        self.draining = True
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(False)


class AdmissionMiddleware:
    def __init__(
        self, app: ASGIApp, admission: Admission, prefixes: Iterable[str] = WORK_PATH_PREFIXES
    ) -> None:
        self.app = app
        self.admission = admission
        self.prefixes = tuple(prefixes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefixes):
            await self.app(scope, receive, send)
            return
        admission = self.admission
        refused = await admission.enter()
        if refused is not None:
            start, body = refused.asgi_response()
            await send(start)
            await send(body)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            admission.leave()
