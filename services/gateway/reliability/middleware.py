"""Pure ASGI middleware (no BaseHTTPMiddleware: it costs a task and a stream copy per request).

`RequestMetrics` counts every HTTP request once, by route template and status, and tracks in-flight requests.
`BodySizeLimit` answers 413 when Content-Length exceeds the limit, and also counts streamed bytes so a chunked
body cannot get past it.
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rewardfleet.services.gateway.errors import PayloadTooLarge
from rewardfleet.services.gateway.metrics import UNMATCHED_ROUTE, GatewayMetrics


class RequestMetrics:
    def __init__(self, app: ASGIApp, metrics: GatewayMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        metrics = self.metrics
        metrics.inflight_count += 1
        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            metrics.inflight_count -= 1
            route = scope.get("route")
            # The template ("/score"), never the raw path: bounded label values.
            label = getattr(route, "path", None) or UNMATCHED_ROUTE
            self.metrics.observe_request(label, status, time.perf_counter() - started)


class BodySizeLimit:
    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_body_bytes
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    too_big = int(value) > limit
                except ValueError:
                    too_big = False
                if too_big:
                    await self._reject(send, f"Content-Length {int(value)} exceeds max_body_bytes {limit}")
                    return
                break

        received = 0
        exceeded = False
        forwarded = False

        async def limited_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    exceeded = True
                    raise PayloadTooLarge(f"request body exceeds max_body_bytes {limit}")
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal forwarded
            if exceeded:
                return  # the app's answer to the aborted read (FastAPI makes it a 400) is replaced below
            forwarded = True
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except PayloadTooLarge:
            if not exceeded:
                raise
        if exceeded and not forwarded:
            await self._reject(send, f"request body exceeds max_body_bytes {limit}")

    @staticmethod
    async def _reject(send: Send, message: str) -> None:
        start, body = PayloadTooLarge(message).with_headers(Connection="close").asgi_response()
        await send(start)
        await send(body)
