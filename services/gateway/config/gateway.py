"""Gateway configuration.

`GatewayConfig` is a plain pydantic model so a fleet config can embed it as its `gateway:` section.
`GatewaySettings` adds the sources a standalone gateway reads: constructor arguments (the CLI flags) win over
`REWARDFLEET_GATEWAY_*` environment variables, which win over the YAML file given with `--config`.

Every check that can be made without importing reward functions is made here, so a bad value fails at
start-up with a message naming its key. Checks that need the loaded functions (does `dispatch` name a real
function?) live in `core/registry.py` and `catalog/build.py`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

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
from rewardfleet.services.gateway.execution.config import SyncPoolConfig
from rewardfleet.services.gateway.graders.config import GraderSpec
from rewardfleet.services.gateway.groups.config import GroupsConfig
from rewardfleet.services.gateway.limits.config import BodyLimits, InputLimits
from rewardfleet.services.gateway.monitors.config import JudgeProbesConfig
from rewardfleet.services.gateway.nemo_gym.config import NeMoGymConfig
from rewardfleet.services.gateway.pools.config import ExternalPoolConfig
from rewardfleet.services.gateway.spend.config import PoolPrice
from rewardfleet.services.gateway.state_store.config import StateConfig

_ADDRESS_RE = re.compile(r"^[A-Za-z0-9._\-\[\]:]+:\d{1,5}$")


def _check_address(key: str, value: str) -> str:
    """A bare `host:port`, exactly what verl passes as `reward_router_address` (no scheme, no path)."""
    if "://" in value or "/" in value or not _ADDRESS_RE.match(value):
        raise ValueError(f"{key}: {value!r} is not a bare host:port (e.g. '127.0.0.1:30000', no http://)")
    port = int(value.rsplit(":", 1)[1])
    if not 0 < port < 65536:
        raise ValueError(f"{key}: port {port} is out of range 1-65535")
    return value


class GatewayConfig(BaseModel):
    """The gateway's settings, independent of where they come from."""

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    builtin_package: str | None = Field(
        default="rewardfleet.reward_fns",
        description="Package whose modules are the built-in functions (loaded first); null = none.",
    )
    reward_fns_dirs: list[Path] = Field(
        default_factory=list, description="User folders of reward-function files, loaded after the built-ins."
    )
    functions: dict[str, FunctionConfig] = Field(default_factory=dict)
    dispatch: dict[str, str] = Field(
        default_factory=dict, description="data_source -> function name; wins over the modules' claims."
    )
    default_reward_fn: str | None = None
    http_max_connections: int = Field(
        default=16384,
        ge=1,
        description="Connection limit of the shared aiohttp session (http_client): one per judge call in "
        "flight, so as many as max_inflight_requests, or the judge calls of a step wait in line.",
    )
    on_load_error: Literal["fail", "skip"] = "fail"
    routers: dict[str, str] = Field(default_factory=dict, description="Router name -> bare host:port.")
    external_pools: dict[str, ExternalPoolConfig] = Field(
        default_factory=dict,
        description="OpenAI-compatible endpoints outside the fleet, reached via this gateway (no router).",
    )
    pool_prices: dict[str, PoolPrice] = Field(
        default_factory=dict,
        description="Pool name (a router or an external pool) -> prices per million tokens and an optional "
        "spend cap; spend is counted from each answer's real `usage` (spend/meter.py).",
    )
    judge_probes: JudgeProbesConfig = Field(
        default_factory=JudgeProbesConfig,
        description="Master-key probes of judge pools (monitors/probes.py, docs/judge_monitoring.md).",
    )
    default_router: str | None = Field(
        default=None, description="Router passed as reward_router_address; the only router if just one."
    )
    reward_model_tokenizer: str | None = Field(default=None, description="HF tokenizer path, loaded once.")
    ready_check_timeout_s: float = Field(default=1.0, gt=0)
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
    max_result_extra_chars: int = Field(
        default=1_000_000,
        ge=1024,
        description="Size of a function's `extra` (like extra_info's); larger is a ResultTooLarge error.",
    )
    # The sync process pool (execution/config.py) and the state replicas share (state_store/config.py):
    # flat keys once too, still accepted (config/sections.py).
    sync_pool: SyncPoolConfig = Field(default_factory=SyncPoolConfig)
    state: StateConfig = Field(default_factory=StateConfig)

    @field_validator("reward_fns_dirs")
    @classmethod
    def _dirs_exist(cls, value: list[Path]) -> list[Path]:
        for path in value:
            if not path.is_dir():
                raise ValueError(f"reward_fns_dirs: {str(path)!r} is not a directory")
        return [path.resolve() for path in value]

    @field_validator("routers")
    @classmethod
    def _router_addresses(cls, value: dict[str, str]) -> dict[str, str]:
        return {name: _check_address(f"router {name!r}", addr) for name, addr in value.items()}

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

    @model_validator(mode="after")
    def _default_router(self) -> GatewayConfig:
        if self.default_router is not None and self.default_router not in self.routers:
            raise ValueError(
                f"default_router: {self.default_router!r} is not one of routers {sorted(self.routers)}"
            )
        if self.default_router is None and len(self.routers) == 1:
            self.default_router = next(iter(self.routers))
        return self

    def function_config(self, name: str) -> FunctionConfig:
        return self.functions.get(name) or FunctionConfig()

    @property
    def reward_router_address(self) -> str | None:
        return self.routers[self.default_router] if self.default_router else None


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
