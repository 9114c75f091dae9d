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
import json
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

WORK_PATH_PREFIXES: tuple[str, ...] = ("/score", "/openrlhf", "/slime")


class Admission:
    """The counters and the FIFO of waiting requests; shared by the middleware, the drain and `/metrics`."""

    def __init__(
        self,
        max_inflight: int,
        max_queued: int,
        queue_timeout_s: float,
        retry_after_s: int,
        max_backlog: int,
    ) -> None:
        self.max_inflight = max_inflight
        self.max_queued = max_queued
        self.queue_timeout_s = queue_timeout_s
        self.retry_after_s = retry_after_s
        self.max_backlog = max_backlog
        self.backlog: Callable[[], int] = lambda: 0  # the sync pool's queue depth, set once the pool exists
        self.active = 0
        self.draining = False
        self.rejected_overload = 0
        self.rejected_draining = 0
        self._waiters: deque[asyncio.Future[bool]] = deque()

    @property
    def queued(self) -> int:
        return len(self._waiters)

    async def enter(self) -> str | None:
        """Take a slot; None when admitted, else why not ("draining" or the overload message)."""
        if self.draining:
            self.rejected_draining += 1
            return "draining"
        if self.backlog() > self.max_backlog:
            self.rejected_overload += 1
            return f"the worker pool has over max_pool_queue={self.max_backlog} calls waiting"
        if self.active < self.max_inflight and not self._waiters:
            self.active += 1
            return None
        if len(self._waiters) >= self.max_queued:
            self.rejected_overload += 1
            return (
                f"{self.active} requests in flight and {len(self._waiters)} queued "
                f"(max_inflight_requests={self.max_inflight}, max_queued_requests={self.max_queued})"
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
            self.rejected_overload += 1
            return f"no slot freed within queue_timeout_s={self.queue_timeout_s}"
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
            self.rejected_draining += 1
            return "draining"
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


def _error_response(status: int, type_: str, message: str, retry_after_s: int) -> tuple[bytes, list[Any]]:
    body = json.dumps({"error": {"type": type_, "message": message}}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(retry_after_s).encode()),
    ]
    return body, headers


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
            if refused == "draining":
                status, type_, message = 503, "Draining", "the gateway is shutting down; retry later"
            else:
                status, type_, message = 429, "Overloaded", refused
            body, headers = _error_response(status, type_, message, admission.retry_after_s)
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        try:
            await self.app(scope, receive, send)
        finally:
            admission.leave()
