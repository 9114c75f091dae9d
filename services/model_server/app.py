"""The app factory: settings in, a FastAPI app out; its lifespan boots and closes the `ModelServer`.

Nothing heavy happens at import time. The model loads in the background after the socket is bound, so
`/health` answers 503 while loading and warming up (as SGLang does) and 200 once ready.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from rewardfleet.services.model_server.auth import ApiKeyMiddleware
from rewardfleet.services.model_server.config import ModelServerSettings
from rewardfleet.services.model_server.errors import install_error_handlers
from rewardfleet.services.model_server.metrics import ModelServerMetrics
from rewardfleet.services.model_server.routes import health, native, openai_generation, openai_pooling
from rewardfleet.services.model_server.server import ModelServer

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]


class RequestMetricsMiddleware:
    """Counts requests by endpoint and status and times them; plain ASGI, so it costs microseconds."""

    def __init__(self, app: ASGIApp, metrics: ModelServerMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(
        self,
        scope: Scope,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        endpoint = self.metrics.endpoint_label(scope["path"])
        started = time.perf_counter()
        status = 500

        async def send_and_record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                self.metrics.request_duration.labels(endpoint).observe(time.perf_counter() - started)
            await send(message)

        try:
            await self.app(scope, receive, send_and_record)
        finally:
            self.metrics.requests.labels(endpoint, str(status)).inc()


def _terminate_self() -> None:
    os.kill(os.getpid(), signal.SIGTERM)


async def _boot_or_exit(server: ModelServer, on_boot_failure: Callable[[], None]) -> None:
    try:
        await server.boot()
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        server.boot_error = exc
        logger.exception("model server failed to start")
        on_boot_failure()


def create_app(
    settings: ModelServerSettings,
    metrics: ModelServerMetrics | None = None,
    on_boot_failure: Callable[[], None] = _terminate_self,
) -> FastAPI:
    """`on_boot_failure` runs if the model cannot load or warm up (default: SIGTERM to this process; the CLI
    asks its uvicorn server to exit and then exits 1)."""
    # Hot routes first: the router matches paths in order, and every route skipped costs each request.
    routers = (native.router, openai_pooling.router, openai_generation.router, health.router)
    paths = [getattr(route, "path", "") for r in routers for route in r.routes]
    metrics = metrics or ModelServerMetrics(endpoints=paths)
    server = ModelServer(settings, metrics)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        boot = asyncio.create_task(_boot_or_exit(server, on_boot_failure), name="model-server-boot")
        try:
            yield
        finally:
            if not boot.done():
                boot.cancel()
            await asyncio.gather(boot, return_exceptions=True)
            await server.close()

    app = FastAPI(
        title="Reward Fleet model server", lifespan=lifespan, openapi_url=None, docs_url=None, redoc_url=None
    )
    app.state.server = server
    for r in routers:
        app.include_router(r)
    install_error_handlers(app, retry_after_s=settings.retry_after_s)
    if settings.api_key is not None:
        app.add_middleware(ApiKeyMiddleware, api_key=settings.api_key.get_secret_value())
    # Added last, so outermost: refused (401) requests are counted too.
    app.add_middleware(RequestMetricsMiddleware, metrics=metrics)
    return app
