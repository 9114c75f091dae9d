"""Gateway configuration: `GatewayConfig` and `GatewaySettings`.

`GatewayConfig` is embedded as a fleet's `gateway:` section; `GatewaySettings` is standalone (flags >
REWARDFLEET_GATEWAY_* > YAML), both in gateway.py. Each section model lives with its feature
(`functions.<name>`: core/config.py; `groups`: groups/config.py; `composites`, `fallbacks`:
composites/config.py; `graders`: graders/config.py; `pools` (routers, `external_pools`): pools/config.py;
`pool_prices`: spend/config.py; `judge_probes`: monitors/config.py; `nemo_gym`: nemo_gym/config.py; `limits`,
`body`: limits/config.py; `admission`: admission/config.py; `cache`: cache/config.py; `sync_pool`,
`loading`: execution/config.py; `state`: state_store/config.py); this package
assembles them, with sections.py (the flat keys of moved sections), auth.py (`auth`: no gateway package
owns the keys) and tenants.py (`tenants`, `tenancy`: kept here because the tenants package sits above the
config it reads).
"""

from rewardfleet.services.gateway.config.gateway import (
    GatewayConfig,
    GatewaySettings,
    format_validation_error,
)
from rewardfleet.services.gateway.core.config import BASE_PARAMS, FunctionConfig

__all__ = ["BASE_PARAMS", "FunctionConfig", "GatewayConfig", "GatewaySettings", "format_validation_error"]
