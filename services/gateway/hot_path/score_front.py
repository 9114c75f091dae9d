"""`GatewayApp`: the gateway's FastAPI application, with `POST /score` entering below FastAPI's outer layers.

A `POST` whose path ends in `/score` (`/score`, or `/k/<key>/score` before `PathKey` rewrites it), or that
`also_fast` accepts (environment tool calls: hot_path/tool_call_asgi.py), goes straight into the gateway's
own middleware chain, with `scope["app"]` and `root_path` set as FastAPI sets them; an exception that
escapes the chain is answered by the app's 500 handler unless the response has started, then raised for the
server to log. Every other request, every request with OpenTelemetry configured, and every request when the
built stack is not the gateway's shape (another FastAPI version, no async 500 handler, debug mode) takes
FastAPI's own path; `fast_score_chain` says which. Why and what it saves:
docs/architecture.md, "The hot path".
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, cast

from fastapi import FastAPI
from starlette.middleware.errors import ServerErrorMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)
ErrorHandler = Callable[[Request, Exception], Awaitable[Response]]

# The layers FastAPI puts above the user middleware, outermost first
# (fastapi.applications.FastAPI.build_middleware_stack)
_OUTER_LAYERS = ("ServerErrorMiddleware", "ExceptionTelemetryMiddleware", "AppBodyLimitMiddleware")


def _never(path: str) -> bool:
    return False


class GatewayApp(FastAPI):
    fast_score_chain: ASGIApp | None = None  # the first user middleware, once the stack is built
    # other POST paths that take the same way (hot_path/tool_call_asgi.py's `may_take`), set by the app
    also_fast: Callable[[str], bool] = staticmethod(_never)
    _on_error: ErrorHandler | None = None  # the app's 500 handler, what the server-error layer would call

    def build_middleware_stack(self) -> ASGIApp:
        stack = super().build_middleware_stack()
        self.fast_score_chain, self._on_error = _user_chain(self, stack)
        telemetry = getattr(self, "_native_telemetry", None)  # (FastAPI >= 0.16x)
        if telemetry is not None and telemetry.enabled():  # read once: it reads the environment (~2 % of
            self.fast_score_chain = None  # a post's CPU when FastAPI reads it on every request)
        return stack

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or not (scope["path"].endswith("/score") or self.also_fast(scope["path"]))
            or self.fast_score_chain is None  # not built yet (the first request builds it), unknown, or OTel
        ):
            await super().__call__(scope, receive, send)
            return
        if self.root_path:
            scope["root_path"] = self.root_path
        scope["app"] = self
        sent = _Sent(send)
        try:
            await self.fast_score_chain(scope, receive, sent)
        except Exception as exc:
            assert self._on_error is not None  # set with fast_score_chain
            response = await self._on_error(Request(scope), exc)
            if not sent.started:
                await response(scope, receive, send)
            raise


class _Sent:
    """`send`, remembering whether the response has started."""

    __slots__ = ("send", "started")

    def __init__(self, send: Send) -> None:
        self.send = send
        self.started = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        await self.send(message)


def _user_chain(app: FastAPI, stack: ASGIApp) -> tuple[ASGIApp | None, ErrorHandler | None]:
    """The first user middleware under FastAPI's outer layers, and the app's async 500 handler, or (None,
    None) when the stack is not the gateway's shape (no such handler, debug mode, other layers)."""
    if not app.user_middleware or not isinstance(stack, ServerErrorMiddleware) or stack.debug:
        return None, None
    if stack.handler is None or not inspect.iscoroutinefunction(stack.handler):
        return None, None
    first: Any = app.user_middleware[0].cls
    layer: Any = stack
    for name in _OUTER_LAYERS:
        if type(layer).__name__ != name:
            logger.warning("FastAPI's middleware stack is not the known shape: POST /score takes its path")
            return None, None
        layer = layer.app
    if not isinstance(layer, first):  # FastAPI's body limit wrapped the chain (max_body_size is set)
        return None, None
    return layer, cast(ErrorHandler, stack.handler)
