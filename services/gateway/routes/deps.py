"""The dependency that hands the routes the app's `Gateway` (facade.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from rewardfleet.services.gateway.facade import Gateway, gateway_of


def get_gateway(request: Request) -> Gateway:
    return gateway_of(request.app.state)


GatewayDep = Annotated[Gateway, Depends(get_gateway)]
