"""The key the supervisor's readiness probe sends to the gateway (`GET /ready`), when the gateway has keys.

With `api_keys` or tenants configured every route but `/health` needs a key, `/ready` included, so `up` would
wait for a gateway that answers 401 until `ready_timeout_s`. The probe sends one of the gateway's own keys:
an admin tenant's first (its requests are the operator's, not a team's, in the per-tenant metrics), else
any tenant's, else the first of `api_keys` / `api_keys_file`. Read at each gateway (re)start, so a keys file
edited while the fleet runs is read again. The key stays in memory: the probe's headers are never shown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from rewardfleet.services.common.api_keys import read_keys_file
from rewardfleet.services.gateway.config import GatewayConfig


def probe_key(gateway: GatewayConfig) -> str | None:
    for _, tenant in sorted(gateway.tenants.items(), key=lambda item: (not item[1].admin, item[0])):
        keys = tenant.keys()
        if keys:
            return keys[0]
    inline = [key.get_secret_value() for key in gateway.auth.api_keys]
    if inline:
        return inline[0]
    if gateway.auth.api_keys_file is not None:
        from_file = read_keys_file(gateway.auth.api_keys_file)
        return from_file[0] if from_file else None
    return None


def probe_headers(gateway: GatewayConfig) -> Callable[[], Mapping[str, str]] | None:
    """The readiness probe's headers, read when called; None for a gateway without keys."""
    if not gateway.tenants and not gateway.auth.api_keys and gateway.auth.api_keys_file is None:
        return None

    def headers() -> Mapping[str, str]:
        key = probe_key(gateway)
        return {"Authorization": f"Bearer {key}"} if key else {}

    return headers
