"""Gateway configuration: `GatewayConfig` and the sections it is made of.

gateway.py    GatewayConfig (embedded as a fleet's `gateway:` section), GatewaySettings (standalone:
              flags > REWARDFLEET_GATEWAY_* > YAML), FunctionConfig (`functions.<name>`)
features.py   `composites`, `fallbacks`, `groups`
graders.py    `graders` (one model per grader type)
formula.py    the little language of a multi grader's `calculate_output`
external_pools.py  `external_pools.<name>`: OpenAI-compatible endpoints outside the fleet
spend.py      `pool_prices.<pool>`: prices per million tokens and spend caps
monitors.py   `judge_probes` and `functions.<name>.shadow`: the judge monitors
"""

from rewardfleet.services.gateway.config.gateway import (
    GatewayConfig,
    GatewaySettings,
    format_validation_error,
)
from rewardfleet.services.gateway.core.config import BASE_PARAMS, FunctionConfig

__all__ = ["BASE_PARAMS", "FunctionConfig", "GatewayConfig", "GatewaySettings", "format_validation_error"]
