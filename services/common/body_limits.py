"""`RequestBodyLimits`: a request body must be small enough and arrive in time, on every service.

Pure ASGI (no BaseHTTPMiddleware: it costs a task and a stream copy per request). Two limits, one `receive`
wrapper:

- **Size** (`max_body_bytes`): a Content-Length above the limit is answered 413 before the body is read; a
  chunked body is counted as it streams, so it cannot get past the limit either.
- **Time** (`body_read_timeout_s`): the whole body must arrive within this many seconds of the app's first
  read. uvicorn has no such limit (its `timeout_keep_alive` only covers the gap *between* requests), so
  without it a client that sends the headers and one byte of a declared body, a chunked body that trickles
  a byte at a time, or a chunked body that never ends, holds its admission slot (and a worker's memory) for
  as long as it likes while everyone else gets 429. A per-chunk idle timeout would not catch the trickle;
  this is a deadline for the whole body. The answer is **408 Request Timeout** with `Connection: close`
  (RFC 9110 §15.5.9: the server did not receive a complete request message within the time it was prepared
  to wait; nginx's `client_body_timeout` answers the same), and the connection is closed.

The clock starts at the app's first read, not at the request's arrival: time spent queued for an admission
slot is the server's doing, not the client's. Reads after the body is complete (a route watching for
`http.disconnect`) are not limited. A refusal replaces whatever the app tried to answer to the aborted read
(FastAPI turns a failed read into a 400), unless the app had already started its answer, and the app's
frames are unwound so every slot it held is released. `on_refused(reason)` counts each refusal
(`"too_large"` or `"read_timeout"`) in the service's metrics.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rewardfleet.services.common.api_keys import ErrorBody, gateway_error_body

TOO_LARGE = "too_large"
READ_TIMEOUT = "read_timeout"


def refusals_counter(name: str, namespace: str, registry: CollectorRegistry) -> Counter:
    """The counter a service passes `RequestBodyLimits` as `on_refused` (through its own method), both
    reasons present from the start so dashboards see zeros."""
    counter = Counter(
        name,
        "Requests refused while their body was read, by reason: too_large (413, max_body_bytes) or "
        "read_timeout (408, body_read_timeout_s).",
        ["reason"],
        namespace=namespace,
        registry=registry,
    )
    for reason in (TOO_LARGE, READ_TIMEOUT):
        counter.labels(reason)
    return counter


class _Refused(Exception):
    """Raised out of `receive` to unwind the app; caught by the middleware, which answers."""

    def __init__(self, status: int, type_: str, message: str, reason: str) -> None:
        super().__init__(message)
        self.status = status
        self.type = type_
        self.message = message
        self.reason = reason


class RequestBodyLimits:
    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int | None,
        body_read_timeout_s: float | None,
        error_body: ErrorBody = gateway_error_body,
        on_refused: Callable[[str], None] | None = None,
    ) -> None:
        if body_read_timeout_s is not None and body_read_timeout_s <= 0:
            raise ValueError(f"body_read_timeout_s must be > 0, got {body_read_timeout_s}")
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.body_read_timeout_s = body_read_timeout_s
        self.error_body = error_body
        self.on_refused = on_refused

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_body_bytes
        if limit is not None:
            for name, value in scope["headers"]:
                if name == b"content-length":
                    try:
                        too_big = int(value) > limit
                    except ValueError:
                        too_big = False
                    if too_big:
                        message = f"Content-Length {int(value)} exceeds max_body_bytes {limit}"
                        await self._refuse(send, _Refused(413, "PayloadTooLarge", message, TOO_LARGE))
                        return
                    break

        body = _LimitedBody(receive, send, limit, self.body_read_timeout_s)
        try:
            await self.app(scope, body.receive, body.send)
        except Exception:
            if body.refused is None:
                raise  # not ours; whatever the app raised while unwinding from a refusal is replaced
        if body.refused is not None and not body.forwarded:
            await self._refuse(send, body.refused)

    async def _refuse(self, send: Send, refused: _Refused) -> None:
        if self.on_refused is not None:
            self.on_refused(refused.reason)
        body = self.error_body(refused.status, refused.type, refused.message)
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": refused.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class _LimitedBody:
    """One request's `receive` and `send` under the limits: one slotted object, not two closures and their
    cells (a request awaiting a judge holds it for the whole call)."""

    __slots__ = (
        "_receive",
        "_send",
        "body_done",
        "deadline",
        "forwarded",
        "limit",
        "received",
        "refused",
        "timeout_s",
    )

    def __init__(self, receive: Receive, send: Send, limit: int | None, timeout_s: float | None) -> None:
        self._receive = receive
        self._send = send
        self.limit = limit
        self.timeout_s = timeout_s
        self.deadline: float | None = None
        self.received = 0
        self.body_done = False
        self.refused: _Refused | None = None
        self.forwarded = False

    async def receive(self) -> Message:
        if self.body_done or self.refused is not None:
            return await self._receive()
        timeout_s = self.timeout_s
        if timeout_s is not None and self.deadline is None:
            self.deadline = asyncio.get_running_loop().time() + timeout_s
        try:
            if self.deadline is None:
                message = await self._receive()
            else:
                async with asyncio.timeout_at(self.deadline):
                    message = await self._receive()
        except TimeoutError:
            self.refused = _Refused(
                408,
                "RequestTimeout",
                f"the request body did not arrive within body_read_timeout_s {timeout_s:g}",
                READ_TIMEOUT,
            )
            raise self.refused from None
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            limit = self.limit
            if limit is not None and self.received > limit:
                self.refused = _Refused(
                    413, "PayloadTooLarge", f"request body exceeds max_body_bytes {limit}", TOO_LARGE
                )
                raise self.refused
            self.body_done = not message.get("more_body", False)
        else:  # http.disconnect: nothing more will come
            self.body_done = True
        return message

    async def send(self, message: Message) -> None:
        if self.refused is not None:
            return  # the app's answer to the aborted read is replaced by the middleware
        self.forwarded = True
        await self._send(message)
