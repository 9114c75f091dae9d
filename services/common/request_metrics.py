"""`RequestMetrics`: every HTTP request observed once, as plain ASGI (it costs microseconds, not a task).

The middleware only times and reports; what is recorded is the service's `RequestObserver`: the gateway
counts in-flight requests and labels by route template at the end of the request, the model server times
to the start of the response (its streamed generations last as long as the client reads) and labels by
endpoint. Added last, so outermost: refusals by the inner middlewares (401, 413, 408, 429) are counted too.
A request whose app raised is reported with status 500, the status the server's error middleware answers.
"""

from __future__ import annotations

import time
from typing import Protocol

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class RequestObserver(Protocol):
    def request_started(self, scope: Scope) -> None: ...

    def response_started(self, scope: Scope, status: int, elapsed_s: float) -> None: ...

    def request_finished(self, scope: Scope, status: int, elapsed_s: float) -> None: ...


class RequestMetrics:
    def __init__(self, app: ASGIApp, observer: RequestObserver) -> None:
        self.app = app
        self.observer = observer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        observer = self.observer
        watched = _WatchedSend(send, scope, observer)
        observer.request_started(scope)
        try:
            await self.app(scope, receive, watched.send)
        finally:
            observer.request_finished(scope, watched.status, time.perf_counter() - watched.started)


class _WatchedSend:
    """`send`, noting the status: one slotted object a request, not a closure and its cells (a request
    awaiting a judge holds it for the whole call)."""

    __slots__ = ("_send", "observer", "scope", "started", "status")

    def __init__(self, send: Send, scope: Scope, observer: RequestObserver) -> None:
        self._send = send
        self.scope = scope
        self.observer = observer
        self.started = time.perf_counter()
        self.status = 500

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            self.observer.response_started(self.scope, self.status, time.perf_counter() - self.started)
        await self._send(message)
