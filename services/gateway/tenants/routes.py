"""`GET /tenants/self` and `GET /admin/tenants`: quotas and usage.

`GET /tenants/self`: the calling tenant's own quotas and usage (fleet-wide with `state_url`);
`GET /admin/tenants`: every tenant's, for operators (`/admin/*` needs an `admin: true` tenant)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from rewardfleet.services.gateway.errors import Unauthorized
from rewardfleet.services.gateway.tenants.context import current

router = APIRouter(tags=["tenants"])


@router.get("/tenants/self")
async def tenants_self(request: Request) -> dict[str, Any]:
    """Quotas, usage (samples in flight, this minute's requests and judge tokens, dollars today and in total)
    and run labels of the caller's tenant; never another tenant's."""
    caller = current.get()
    if caller is None:  # only reachable if the tenant middleware is not installed
        raise Unauthorized("no tenant for this request")
    usage: dict[str, Any] = await request.app.state.tenancy.usage(caller)
    return usage


@router.get("/admin/tenants")
async def admin_tenants(request: Request) -> dict[str, Any]:
    """Every tenant's quotas and usage (the middleware lets only `admin: true` tenants reach /admin/*)."""
    caller = current.get()
    if caller is None or not caller.config.admin:
        raise Unauthorized("an admin tenant's key is needed")
    summary: dict[str, Any] = await request.app.state.tenancy.summary()
    return summary
