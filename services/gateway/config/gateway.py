"""Gateway configuration.

`GatewayConfig` is a plain pydantic model so a fleet config can embed it as its `gateway:` section.
`GatewaySettings` adds the sources a standalone gateway reads: constructor arguments (the CLI flags) win over
`REWARDFLEET_GATEWAY_*` environment variables, which win over the YAML file given with `--config`.

Every check that can be made without importing reward functions is made here, so a bad value fails at
start-up with a message naming its key. Checks that need the loaded functions (does `dispatch` name a real
function?) live in `core/registry.py` and `catalog/build.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from rewardfleet.services.gateway.admission.config import AdmissionConfig
from rewardfleet.services.gateway.cache.config import CacheConfig
from rewardfleet.services.gateway.composites.config import CompositeSpec, FallbackSpec
from rewardfleet.services.gateway.config.auth import AuthConfig
from rewardfleet.services.gateway.config.sections import flat_env, nest_flat_keys
from rewardfleet.services.gateway.config.tenants import TenancyConfig, TenantConfig, check_tenants
from rewardfleet.services.gateway.core.config import FunctionConfig
from rewardfleet.services.gateway.environments.config import EnvironmentsConfig
from rewardfleet.services.gateway.execution.config import LoadingConfig, SyncPoolConfig
from rewardfleet.services.gateway.graders.config import GraderSpec
from rewardfleet.services.gateway.groups.config import GroupsConfig
from rewardfleet.services.gateway.limits.config import BodyLimits, InputLimits
from rewardfleet.services.gateway.monitors.config import JudgeProbesConfig
from rewardfleet.services.gateway.nemo_gym.config import NeMoGymConfig
from rewardfleet.services.gateway.pools.config import PoolsConfig
from rewardfleet.services.gateway.spend.config import PoolPrice
from rewardfleet.services.gateway.state_store.config import StateConfig


class GatewayConfig(BaseModel):
    """The gateway's settings, independent of where they come from."""

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    functions: dict[str, FunctionConfig] = Field(default_factory=dict)
    dispatch: dict[str, str] = Field(
        default_factory=dict, description="data_source -> function name; wins over the modules' claims."
    )
    default_reward_fn: str | None = None
    pool_prices: dict[str, PoolPrice] = Field(
        default_factory=dict,
        description="Pool name (a router or an external pool) -> prices per million tokens and an optional "
        "spend cap; spend is counted from each answer's real `usage` (spend/meter.py).",
    )
    judge_probes: JudgeProbesConfig = Field(
        default_factory=JudgeProbesConfig,
        description="Master-key probes of judge pools (monitors/probes.py, docs/judge_monitoring.md).",
    )
    # composites/, groups/, graders/ (docs/advanced_rewards.md): composites, judge fallbacks, groups, graders.
    composites: dict[str, CompositeSpec] = Field(default_factory=dict)
    fallbacks: dict[str, FallbackSpec] = Field(default_factory=dict)
    groups: GroupsConfig = Field(default_factory=GroupsConfig)
    graders: dict[str, GraderSpec] = Field(default_factory=dict)
    nemo_gym: NeMoGymConfig = Field(
        default_factory=NeMoGymConfig, description="NeMo Gym resources servers served (docs/nemo_gym.md)."
    )
    environments: EnvironmentsConfig = Field(
        default_factory=EnvironmentsConfig,
        description="Environments (sessions with tools) served (docs/environments.md).",
    )

    # Reliability (admission/, limits/, cache/, execution/isolation.py, docs/reliability.md). Their keys were
    # once flat at the top; that spelling still works (config/sections.py).
    admission: AdmissionConfig = Field(default_factory=AdmissionConfig)
    limits: InputLimits = Field(default_factory=InputLimits)
    body: BodyLimits = Field(default_factory=BodyLimits)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    keep_alive_s: int = Field(
        default=75,
        ge=1,
        description="An idle client connection stays open this long. Longer than a balancer's own idle "
        "timeout (HAProxy, nginx, cloud load balancers: 60 s or less), so the gateway never closes a "
        "connection the balancer is sending the next request on (that request would be lost).",
    )
    # Keys (config/auth.py): api_keys, api_keys_file, auth_exempt_metrics; the flat spelling still works.
    auth: AuthConfig = Field(default_factory=AuthConfig)
    # Tenants (tenants/, docs/tenants.md): none = one implicit tenant, as before.
    tenants: dict[str, TenantConfig] = Field(
        default_factory=dict, description="Tenant name -> its keys, quotas, weight and priority class."
    )
    tenancy: TenancyConfig = Field(default_factory=TenancyConfig)
    # The sync process pool (execution/config.py) and the state replicas share (state_store/config.py):
    # flat keys once too, still accepted (config/sections.py).
    sync_pool: SyncPoolConfig = Field(default_factory=SyncPoolConfig)
    state: StateConfig = Field(default_factory=StateConfig)
    # What is loaded (execution/config.py) and the pools reached (pools/config.py): flat keys once too.
    loading: LoadingConfig = Field(default_factory=LoadingConfig)
    pools: PoolsConfig = Field(default_factory=PoolsConfig)

    @field_validator("functions")
    @classmethod
    def _function_names(cls, value: dict[str, FunctionConfig]) -> dict[str, FunctionConfig]:
        for name in value:
            if not name.isidentifier():
                raise ValueError(f"functions: {name!r} is not a valid function name (use letters, digits, _)")
        return value

    @model_validator(mode="before")
    @classmethod
    def _flat_keys(cls, data: Any) -> Any:
        return nest_flat_keys(data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _body_budget_holds_a_body(self) -> GatewayConfig:
        if self.admission.max_inflight_body_bytes < self.body.max_body_bytes:
            raise ValueError(
                f"max_inflight_body_bytes ({self.admission.max_inflight_body_bytes}) must be at least "
                f"max_body_bytes ({self.body.max_body_bytes}), or a request of the largest size could never "
                "be admitted"
            )
        return self

    @model_validator(mode="after")
    def _tenants_hold_the_keys(self) -> GatewayConfig:
        if self.tenants:
            if self.auth.api_keys or self.auth.api_keys_file is not None:
                raise ValueError(
                    "tenants: with tenants configured every key belongs to a tenant; move api_keys / "
                    "api_keys_file into a tenant"
                )
            check_tenants(self.tenants, self.tenancy)
        return self

    def function_config(self, name: str) -> FunctionConfig:
        return self.functions.get(name) or FunctionConfig()

    @property
    def reward_router_address(self) -> str | None:
        return self.pools.reward_router_address


class _YamlFileSource(PydanticBaseSettingsSource):
    """Values from the `--config` YAML file; a top-level `gateway:` section is used when present."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None) -> None:
        super().__init__(settings_cls)
        self.path = path

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:  # pragma: no cover
        raise NotImplementedError  # __call__ is overridden

    def __call__(self) -> dict[str, Any]:
        if self.path is None:
            return {}
        data = yaml.safe_load(Path(self.path).read_text()) or {}
        if not isinstance(data, dict):
            raise ValueError(f"{self.path}: the config file must hold a mapping, got {type(data).__name__}")
        section = data.get("gateway", data)
        if not isinstance(section, dict):
            raise ValueError(f"{self.path}: the 'gateway' section must be a mapping")
        return nest_flat_keys(section)


class _FlatEnvSource(PydanticBaseSettingsSource):
    """The flat variables of keys that moved into a section (`REWARDFLEET_GATEWAY_MAX_SOLUTION_CHARS`), after
    the environment's own variables, before the YAML file."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:  # pragma: no cover
        raise NotImplementedError  # __call__ is overridden

    def __call__(self) -> dict[str, Any]:
        return flat_env(str(self.config.get("env_prefix", "")))


class GatewaySettings(BaseSettings, GatewayConfig):
    """`GatewayConfig` read from init arguments, `REWARDFLEET_GATEWAY_*` variables and a YAML file."""

    model_config = SettingsConfigDict(
        env_prefix="REWARDFLEET_GATEWAY_", env_nested_delimiter="__", extra="forbid"
    )

    config_file: Path | None = Field(default=None, exclude=True, description="YAML file read at start-up.")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        path = None
        if isinstance(init_settings, InitSettingsSource):
            path = init_settings.init_kwargs.get("config_file")
        return init_settings, env_settings, _FlatEnvSource(settings_cls), _YamlFileSource(settings_cls, path)


def format_validation_error(exc: Exception) -> str:
    """One line per bad key, `key.path: problem`, for start-up messages."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    lines = []
    for err in errors():
        loc = ".".join(str(part) for part in err.get("loc", ()))
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        lines.append(f"{loc}: {msg}" if loc else msg)
    return "\n".join(lines)
