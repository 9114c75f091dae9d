"""`POST /admin/reload`: re-load the reward functions (see catalog/reload.py)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from rewardfleet.services.gateway.routes.deps import GatewayDep
from rewardfleet.services.gateway.schemas import ErrorEnvelope

router = APIRouter(tags=["admin"])


@router.post("/admin/reload", responses={409: {"model": ErrorEnvelope, "description": "A file is broken."}})
async def reload(gateway: GatewayDep) -> dict[str, Any]:
    """Swap in the functions as they are on disk now; a broken file leaves the old ones serving (409)."""
    return await gateway.reloader.reload()
