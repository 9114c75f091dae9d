"""The app factory: settings in, a FastAPI app out; its lifespan boots and closes the `ModelServer`.

Nothing heavy happens at import time. The model loads in the background after the socket is bound, so
`/health` answers 503 while loading and warming up (as SGLang does) and 200 once ready.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI

from rewardfleet.services.common.api_keys import ApiKeyMiddleware
from rewardfleet.services.common.body_limits import RequestBodyLimits
from rewardfleet.services.common.request_metrics import RequestMetrics
from rewardfleet.services.model_server.config import ModelServerSettings
from rewardfleet.services.model_server.errors import error_response_body, install_error_handlers
from rewardfleet.services.model_server.metrics import ModelServerMetrics
from rewardfleet.services.model_server.routes import (
    health,
    native,
    openai_generation,
    openai_pooling,
    pooling,
)
from rewardfleet.services.model_server.server import ModelServer

logger = logging.getLogger(__name__)

# SGLang 0.5.23 (`sglang/srt/utils/auth.py`, `decide_request_auth`): probes, /metrics and OPTIONS need no key.
OPEN_PREFIXES = ("/health", "/ready", "/metrics")
_UNAUTHORIZED = json.dumps({"error": "Unauthorized"}).encode()


def _error_body(status: int, type_: str, message: str) -> bytes:
    """SGLang's shapes: its bare 401 `{"error": "Unauthorized"}`, else its `ErrorResponse`."""
    if status == 401:
        return _UNAUTHORIZED
    return json.dumps(error_response_body(message, status, type_)).encode()


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
    routers = (native.router, openai_pooling.router, pooling.router, openai_generation.router, health.router)
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
    app.add_middleware(
        RequestBodyLimits,
        max_body_bytes=settings.max_body_bytes,
        body_read_timeout_s=settings.body_read_timeout_s,
        error_body=_error_body,
        on_refused=metrics.body_refused,
    )
    if settings.api_key is not None:
        app.add_middleware(
            ApiKeyMiddleware,
            keys=[settings.api_key.get_secret_value()],
            public_prefixes=OPEN_PREFIXES,
            public_methods=("OPTIONS",),
            error_body=_error_body,
            challenge=False,
        )
    # Added last, so outermost: refused (401, 408, 413) requests are counted too.
    app.add_middleware(RequestMetrics, observer=metrics)
    return app
