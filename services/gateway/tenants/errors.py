"""The tenants' refusals, in the gateway's one error envelope (errors.py)."""

from __future__ import annotations

import math

from rewardfleet.services.gateway.errors import GatewayError


class TenantQuotaExceeded(GatewayError):
    """429: a tenant's quota (`quota` names it) is used up; Retry-After says when to try again. Nothing of
    the request was started."""

    status_code = 429
    type = "TenantQuotaExceeded"

    def __init__(self, tenant: str, quota: str, limit: float, retry_after_s: float, message: str) -> None:
        super().__init__(
            message, quota=quota, tenant=tenant, limit=limit, retry_after_s=math.ceil(retry_after_s)
        )
        self.with_headers(Retry_After=str(max(1, math.ceil(retry_after_s))))


class Forbidden(GatewayError):
    """403: the key is a tenant's, but this tenant may not call the route (`/admin/*` needs `admin: true`)."""

    status_code = 403
    type = "Forbidden"


class InvalidRunLabel(GatewayError):
    status_code = 422
    type = "InvalidRunLabel"
