"""Backpressure: bounded admission of work requests (per-function limits are `function_limits.py`).

`Admission` bounds what a work request (`/score`, `/score/batch`, `/openrlhf`, `/slime`) costs the gateway
while it is handled, not how long it waits on I/O:

- **body bytes**: the bodies of the requests in flight hold at most `max_inflight_body_bytes` (a request
  reserves its `Content-Length`, a chunked one `max_body_bytes`, before its body is read); this is what
  bounds the memory of samples being scored, whatever their size;
- **requests**: at most `max_inflight_requests` run at once. A request awaiting a remote judge holds its
  connection, its frames and its judge call (sized in docs/architecture.md, the hot path), so the default is
  large enough for a whole GRPO step posted at once: the count bounds that per-request memory and the sockets;
- **CPU work**: new work is refused while the sync pool's backlog (calls waiting for a worker process) is
  over `max_pool_queue`, so work that needs the CPU cannot pile up without bound.

A request that does not fit waits (FIFO, body not yet read, up to `queue_timeout_s`) among at most
`max_queued_requests`; the rest are answered at once with 429 + `Retry-After`. While the gateway drains (see
`drain.py`), work routes answer 503 + `Retry-After` and queued requests are released with the same answer.

`AdmissionMiddleware` is pure ASGI (no per-request task); a request that is admitted costs a scan of its
headers and a few integer updates. Other routes (`/health`, `/ready`, `/metrics`) are never queued: liveness
stays cheap under overload.
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Protocol

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


class Timer(Protocol):
    """Where `queue_timeout_s` is counted: the event loop, or a test's clock (tests/clock.py)."""

    def call_later(self, delay: float, callback: Callable[[], object]) -> Any: ...


class Admission:
    """The counters and the FIFO of waiting requests; shared by the middleware and the drain."""

    def __init__(
        self,
        max_inflight: int,
        max_inflight_body_bytes: int,
        max_queued: int,
        queue_timeout_s: float,
        retry_after_s: int,
        max_backlog: int,
        backlog: Backlog,
        metrics: GatewayMetrics,
        timer: Timer | None = None,
    ) -> None:
        self.timer = timer  # None: the running event loop
        self.max_inflight = max_inflight
        self.max_inflight_body_bytes = max_inflight_body_bytes
        self.max_queued = max_queued
        self.queue_timeout_s = queue_timeout_s
        self.retry_after_s = retry_after_s
        self.max_backlog = max_backlog
        self.backlog = backlog
        self.metrics = metrics
        self.active = 0
        self.body_bytes = 0  # reserved by the requests in flight
        self.draining = False
        # (reservation, future): the future's result is True once `_wake` has reserved it, False on drain,
        # None when queue_timeout_s ran out first (whichever comes first settles it).
        self._waiters: deque[tuple[int, asyncio.Future[bool | None]]] = deque()

    @property
    def queued(self) -> int:
        return len(self._waiters)

    def _fits(self, body_bytes: int) -> bool:
        return (
            self.active < self.max_inflight and self.body_bytes + body_bytes <= self.max_inflight_body_bytes
        )

    def _refuse(self, error: GatewayError) -> GatewayError:
        self.metrics.admission_rejected(error.type)
        return error.with_headers(Retry_After=str(self.retry_after_s))

    def _draining(self) -> GatewayError:
        return self._refuse(Draining("the gateway is shutting down; retry later"))

    async def enter(self, body_bytes: int = 0) -> GatewayError | None:
        """Reserve a slot and `body_bytes`; None when admitted (then call `leave(body_bytes)` once), else the
        refusal to send (`Overloaded` 429 or `Draining` 503)."""
        if self.draining:
            return self._draining()
        if self.backlog.depth > self.max_backlog:
            return self._refuse(
                Overloaded(f"the worker pool has over max_pool_queue={self.max_backlog} calls waiting")
            )
        # Never more than the whole budget, so a single request can always be admitted on its own.
        body_bytes = min(body_bytes, self.max_inflight_body_bytes)
        if not self._waiters and self._fits(body_bytes):
            self.active += 1
            self.body_bytes += body_bytes
            return None
        if len(self._waiters) >= self.max_queued:
            return self._refuse(
                Overloaded(
                    f"{self.active} requests ({self.body_bytes} body bytes) in flight and "
                    f"{len(self._waiters)} queued (max_inflight_requests={self.max_inflight}, "
                    f"max_inflight_body_bytes={self.max_inflight_body_bytes}, "
                    f"max_queued_requests={self.max_queued})"
                )
            )
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool | None] = loop.create_future()
        entry = (body_bytes, waiter)
        self._waiters.append(entry)
        expiry = (self.timer or loop).call_later(self.queue_timeout_s, functools.partial(_time_out, waiter))
        try:
            # Reserved by `leave` (True), refused by `start_draining` (False), or timed out (None).
            admitted = await asyncio.shield(waiter)
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.result():
                self.leave(body_bytes)
            else:
                waiter.cancel()
            raise
        finally:
            expiry.cancel()
            if entry in self._waiters:
                self._waiters.remove(entry)
                self._wake()  # a large request that gave up may have held back smaller ones behind it
        if admitted is None:
            return self._refuse(Overloaded(f"no slot freed within queue_timeout_s={self.queue_timeout_s}"))
        if not admitted:
            return self._draining()
        return None

    def leave(self, body_bytes: int = 0) -> None:
        self.active -= 1
        self.body_bytes -= min(body_bytes, self.max_inflight_body_bytes)
        self._wake()

    def _wake(self) -> None:
        """Reserve for the waiters at the head of the line while they fit, in arrival order (a request that
        does not fit yet is not overtaken: a large body is never starved by small ones)."""
        waiters = self._waiters
        while waiters:
            body_bytes, waiter = waiters[0]
            if waiter.done():  # timed out or cancelled; its own `enter` removes it too
                waiters.popleft()
                continue
            if not self._fits(body_bytes):
                return
            waiters.popleft()
            self.active += 1
            self.body_bytes += body_bytes
            waiter.set_result(True)

    def start_draining(self) -> None:
        self.draining = True
        while self._waiters:
            _, waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(False)


def _time_out(waiter: asyncio.Future[bool | None]) -> None:
    """queue_timeout_s ran out: settle the wait as timed out, unless a slot or the drain settled it first."""
    if not waiter.done():
        waiter.set_result(None)


def reserved_body_bytes(scope: Scope, max_body_bytes: int) -> int:
    """What a request's body may hold: its Content-Length (at most `max_body_bytes`, past which the body
    limits answer 413), `max_body_bytes` for a chunked body, 0 for none."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return min(max(int(value), 0), max_body_bytes)
            except ValueError:
                return max_body_bytes
        if name == b"transfer-encoding":
            return max_body_bytes
    return 0


class AdmissionMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        admission: Admission,
        max_body_bytes: int,
        prefixes: Iterable[str] = WORK_PATH_PREFIXES,
    ) -> None:
        self.app = app
        self.admission = admission
        self.max_body_bytes = max_body_bytes
        self.prefixes = tuple(prefixes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefixes):
            await self.app(scope, receive, send)
            return
        admission = self.admission
        body_bytes = reserved_body_bytes(scope, self.max_body_bytes)
        refused = await admission.enter(body_bytes)
        if refused is not None:
            start, body = refused.asgi_response()
            await send(start)
            await send(body)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            admission.leave(body_bytes)
