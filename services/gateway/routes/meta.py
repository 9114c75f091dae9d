"""`GET /health`, `/ready`, `/reward_fns`, `/metrics`."""

from __future__ import annotations

import asyncio

import aiohttp
from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST

from rewardfleet.services.common.router_http import base_url
from rewardfleet.services.gateway.facade import Gateway
from rewardfleet.services.gateway.routes.deps import GatewayDep
from rewardfleet.services.gateway.schemas import (
    ReadyStatus,
    RewardFunctionInfo,
    RewardFunctionList,
    RouterCheck,
    StartupCheckStatus,
)

router = APIRouter(tags=["meta"])


@router.get("/health")
async def health() -> dict[str, str]:
    """Liveness: the process answers. Cheap, touches nothing."""
    return {"status": "ok"}


async def _check_router(gateway: Gateway, address: str) -> RouterCheck:
    timeout = aiohttp.ClientTimeout(total=gateway.config.pools.ready_check_timeout_s)
    try:
        async with gateway.http_client.get(f"{base_url(address)}/health", timeout=timeout) as resp:
            if resp.status >= 500:
                return RouterCheck(
                    address=address, reachable=False, error=f"GET /health answered {resp.status}"
                )
            return RouterCheck(address=address, reachable=True)
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        return RouterCheck(address=address, reachable=False, error=f"{type(exc).__name__}: {exc}")


@router.get("/ready", response_model=ReadyStatus, responses={503: {"model": ReadyStatus}})
async def ready(gateway: GatewayDep) -> JSONResponse:
    """Readiness: functions loaded, workers started, and every configured router answers `GET /health`.
    Also reports each function's start-up check (informational: a failed one does not make this 503)."""
    names = list(gateway.config.pools.routers)
    checks = await asyncio.gather(*(_check_router(gateway, gateway.config.pools.routers[n]) for n in names))
    status = ReadyStatus(
        ready=gateway.ready and all(c.reachable for c in checks),
        reward_fns=len(gateway.catalog.functions),
        routers=dict(zip(names, checks, strict=True)),
        startup_checks={
            name: StartupCheckStatus(ok=fn.startup_check.ok, detail=fn.startup_check.detail)
            for name, fn in gateway.catalog.functions.items()
            if fn.startup_check is not None
        },
    )
    return JSONResponse(status.model_dump(), status_code=200 if status.ready else 503)


@router.get("/reward_fns", response_model=RewardFunctionList)
async def reward_fns(gateway: GatewayDep) -> RewardFunctionList:
    """The loaded functions, what they receive, and the effective data_source dispatch table."""
    infos = [
        RewardFunctionInfo(
            name=fn.name,
            source_file=str(fn.source_file),
            origin=fn.origin,
            kind="async" if fn.is_async else "sync",
            injected_params=fn.injected_params,
            data_sources=list(fn.data_sources),
            version=fn.version,
            timeout_s=fn.config.timeout_s,
            on_error_score=fn.config.on_error_score,
        )
        for fn in gateway.catalog.functions.values()
    ]
    dispatcher = gateway.catalog.dispatcher
    return RewardFunctionList(
        reward_fns=infos, dispatch=dispatcher.table(), default_reward_fn=dispatcher.default
    )


@router.get("/metrics", response_class=Response)
async def metrics(request: Request, gateway: GatewayDep) -> Response:
    """Prometheus exposition of the gateway's own registry; under `--processes N`, of all N merged."""
    siblings = getattr(request.app.state, "siblings", None)
    if siblings is not None:  # the merge renders this process's own exposition itself
        body, _ = await siblings.exposition()
        return Response(body, media_type=CONTENT_TYPE_LATEST)
    body, content_type = gateway.metrics.exposition()
    return Response(body, media_type=content_type)
