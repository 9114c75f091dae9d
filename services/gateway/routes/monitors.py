"""`GET /monitors`: what the judge monitors know (docs/judge_monitoring.md), for `rewardfleet status`.

Spend is fleet-wide (read from the shared ledger when `state_url` is set). Behind the gateway's API keys like
every route but /health; public with /metrics when `auth_exempt_metrics` is set.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from rewardfleet.services.gateway.routes.deps import GatewayDep

router = APIRouter(tags=["meta"])


@router.get("/monitors")
async def monitors(gateway: GatewayDep) -> dict[str, Any]:
    spend = await gateway.spend.summary() if gateway.spend is not None else {"pools": {}, "functions": {}}
    probes = gateway.prober.summary() if gateway.prober is not None else {}
    shadow = gateway.shadow.summary() if gateway.shadow is not None else {}
    return {"spend": spend, "probes": probes, "shadow": shadow}
