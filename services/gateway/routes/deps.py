"""The dependency that hands the routes the app's `Gateway` (facade.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from starlette.datastructures import State

from rewardfleet.services.gateway.facade import Gateway


def get_gateway(request: Request) -> Gateway:
    return gateway_of(request.app.state)


def gateway_of(state: State) -> Gateway:
    """The gateway in the app's `state`, set by the lifespan."""
    gateway: Gateway | None = getattr(state, "gateway", None)
    if gateway is None:  # only possible if a request slips in before start-up finished
        raise RuntimeError("the gateway is not started")
    return gateway


GatewayDep = Annotated[Gateway, Depends(get_gateway)]
