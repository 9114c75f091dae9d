"""The objects the lifespan builds and the routes use, and the dependency that hands them out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request

from services.gateway.config import GatewayConfig
from services.gateway.core.registry import RewardFunction
from services.gateway.core.scoring import Scorer
from services.gateway.metrics import GatewayMetrics


@dataclass
class Gateway:
    config: GatewayConfig
    metrics: GatewayMetrics
    functions: dict[str, RewardFunction]
    scorer: Scorer
    http_client: Any  # aiohttp.ClientSession
    ready: bool = False
    features: Any = None  # extensions.Features: composites, graders, groups, reload (issue 9)


def get_gateway(request: Request) -> Gateway:
    gateway: Gateway | None = getattr(request.app.state, "gateway", None)
    if gateway is None:  # only possible if a request slips in before start-up finished
        raise RuntimeError("the gateway is not started")
    return gateway


GatewayDep = Annotated[Gateway, Depends(get_gateway)]
