"""The fleet config: one YAML file describing model pools, their routers and the gateway.

```yaml
pools:
  encoder:
    kind: encoder            # judge | reward_model | encoder | prm | image_reward_model
    backend: cpu             # cpu (our model server) | sglang (GPU hosts)
    model_path: builtin:minilm
    replicas: 1
    server_args: {max-batch-size: 32}
    deterministic: false     # true: bitwise the same score alone or in any batch (docs/reproducibility.md)
    router: {policy: round_robin}
default_pool: encoder         # its router is what `reward_router_address` carries
gateway: {port: 8000, ...}    # gateway.config.GatewayConfig; `routers` is filled in from the pools
```

Ports left unset are picked free on 127.0.0.1 when the fleet starts. Validation errors name the key.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rewardfleet.router.config import RouterConfig
from rewardfleet.services.common.api_keys import check_api_keys
from rewardfleet.services.fleet.determinism import check_deterministic_args
from rewardfleet.services.fleet.on_ray.config import RayConfig
from rewardfleet.services.fleet.on_slurm.config import SlurmConfig
from rewardfleet.services.gateway.config import GatewayConfig, format_validation_error
from rewardfleet.services.gateway.pools.config import ExternalPoolConfig
from rewardfleet.services.model_server.checkpoints import BUILTIN_MODELS, DUAL_ENCODERS

DEFAULT_CONFIG_PATH = Path(__file__).with_name("default.yaml")
_POOL_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,40}$")
# Set by the fleet for each router; a pool's `router:` section may not set them.
_ROUTER_MANAGED = frozenset({"host", "port", "worker_urls", "prometheus_port", "prometheus_host"})

# image_reward_model: a CLIP-style dual encoder scoring (text, image) pairs by the cosine of their embeddings
# (the built-in `image_text_score`); SGLang serves it with --is-embedding, as reward models and encoders.
PoolKind = Literal["judge", "reward_model", "encoder", "prm", "image_reward_model"]


class FleetConfigError(ValueError):
    """The fleet config file is missing, not YAML, or fails validation (the message names each key)."""


class PoolConfig(BaseModel):
    """One model pool: `replicas` model servers of one model behind one sglang-router."""

    model_config = ConfigDict(extra="forbid")

    kind: PoolKind
    backend: Literal["cpu", "sglang", "external"] = "cpu"
    model_path: str | None = Field(
        default=None,
        description="Checkpoint directory, .gguf file or HF id (sglang), or a built-in: "
        + ", ".join(BUILTIN_MODELS),
    )
    external: ExternalPoolConfig | None = Field(
        default=None,
        description="backend external: an OpenAI-compatible endpoint outside the fleet (base_url, model, "
        "api_key_env, rpm, tpm, ...); no replicas, no router.",
    )
    served_model_name: str | None = None
    replicas: int = Field(default=1, ge=1, le=64)
    base_port: int | None = Field(default=None, ge=1, le=65535, description="Replica i listens on base+i.")
    server_args: dict[str, Any] = Field(
        default_factory=dict,
        description="Extra flags for serve-model / sglang.launch_server, e.g. {dtype: bf16}.",
    )
    deterministic: bool = Field(
        default=False,
        description="Bitwise the same score alone, in any batch and on any replica: the CPU server's and "
        "SGLang's --enable-deterministic-inference (slower; docs/reproducibility.md).",
    )
    load_in_background: bool = Field(
        default=False,
        description="Start-up does not wait for this pool: the gateway comes up first, and the pool's router "
        "routes to each replica once it has loaded (`rewardfleet status` shows when).",
    )
    router_port: int | None = Field(default=None, ge=1, le=65535)
    router_prometheus_port: int | None = Field(default=None, ge=1, le=65535)
    router: dict[str, Any] = Field(
        default_factory=lambda: {"policy": "round_robin", "health_check_interval_secs": 10},
        description="RouterConfig fields (policy, retries, circuit breaker, timeouts) of the pool's router.",
    )

    @field_validator("server_args")
    @classmethod
    def _flag_names(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key, arg in value.items():
            if not re.fullmatch(r"[a-z][a-z0-9_-]*", key):
                raise ValueError(f"{key!r} is not a flag name (write it without dashes, e.g. max-batch-size)")
            if isinstance(arg, dict | list):
                raise ValueError(f"{key}: flag values must be scalars, got {type(arg).__name__}")
            if key.replace("_", "-") == "api-key":  # the replicas would refuse it at start-up; say so now
                check_api_keys(["" if arg is None else str(arg)], f"server_args.{key}")
        return value

    @field_validator("router")
    @classmethod
    def _router_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        managed = sorted(set(value) & _ROUTER_MANAGED)
        if managed:
            raise ValueError(f"{managed} are set by the fleet (use router_port / router_prometheus_port)")
        # Validate now so a typo fails at load time, naming the key; ports are placeholders here.
        RouterConfig(**value, port=30000, prometheus_port=29000)
        return value

    @model_validator(mode="after")
    def _kind_backend(self) -> PoolConfig:
        self._prm_pool()
        if self.backend == "external":
            if self.external is None:
                raise ValueError("backend external needs an `external:` section (base_url, model, ...)")
            fleet_only = sorted(
                k
                for k in ("model_path", "base_port", "router_port", "router_prometheus_port")
                if getattr(self, k) is not None
            ) + [k for k in ("server_args", "load_in_background") if k in self.model_fields_set]
            if self.deterministic:
                fleet_only.append("deterministic")
            if fleet_only or self.replicas != 1:
                raise ValueError(f"backend external runs nothing here: remove {fleet_only or ['replicas']}")
            return self
        if self.external is not None:
            raise ValueError("`external:` is only for backend external")
        if self.model_path is None:
            raise ValueError("model_path is required for the cpu and sglang backends")
        if self.deterministic:
            check_deterministic_args(self.backend, self.server_args)
        if self.model_path.startswith("builtin:") and self.model_path not in BUILTIN_MODELS:
            raise ValueError(f"model_path {self.model_path!r}: built-in models are {list(BUILTIN_MODELS)}")
        if self.backend == "sglang" and self.model_path.startswith("builtin:"):
            raise ValueError("model_path: builtin models are for the cpu backend")
        if self.kind == "image_reward_model" and self.backend == "cpu":
            _check_dual_encoder(self.model_path)
        if self.router.get("policy") == "power_of_two":
            # sglang-router 0.3.2 polls GET /get_load for this policy (tests/router/test_power_of_two.py).
            if self.backend == "sglang":
                raise ValueError(
                    "router.policy: power_of_two reads each worker's load from GET /get_load, which SGLang "
                    "0.5.23 does not serve (it has /v1/loads); the router would see every load as unknown. "
                    "Use round_robin or cache_aware for an sglang pool."
                )
            if self.replicas < 2:
                raise ValueError(
                    "router.policy: power_of_two needs at least 2 replicas (the router refuses 1)"
                )
        return self

    def _prm_pool(self) -> None:
        """A process reward model pool speaks vLLM's `/pooling`, which SGLang does not serve and sglang-router
        0.3.2 does not proxy (404): the gateway reaches its one replica directly."""
        vllm_pooling = self.external is not None and self.external.api == "vllm_pooling"
        if self.kind != "prm":
            if vllm_pooling:
                raise ValueError("external.api vllm_pooling is for kind prm (a process reward model)")
            return
        if self.backend == "sglang":
            raise ValueError(
                "kind prm: SGLang 0.5.23 serves no process reward model; use backend cpu, or backend "
                "external with a vLLM server (external.api: vllm_pooling)"
            )
        if self.backend == "external" and self.external is not None and not vllm_pooling:
            raise ValueError(
                "kind prm with backend external needs external.api: vllm_pooling (a vLLM server)"
            )
        if self.backend == "cpu" and self.replicas != 1:
            raise ValueError(
                "kind prm: replicas must be 1 (sglang-router 0.3.2 does not proxy /pooling, so the gateway "
                "addresses the replica itself); run more PRM pools for more capacity"
            )

    @property
    def checkpoint(self) -> str:
        """`model_path` of a pool the fleet runs (validation guarantees it is set for cpu and sglang)."""
        if self.model_path is None:
            raise ValueError("an external pool has no model_path")
        return self.model_path

    @property
    def is_embedding(self) -> bool:
        """SGLang serves reward models and encoders with --is-embedding."""
        return self.kind in ("reward_model", "encoder", "image_reward_model")

    def router_config(self, port: int, prometheus_port: int, worker_urls: list[str]) -> RouterConfig:
        return RouterConfig(
            **self.router,
            host="127.0.0.1",
            port=port,
            prometheus_port=prometheus_port,
            worker_urls=worker_urls,
        )


def _check_dual_encoder(model_path: str) -> None:
    """An image reward model pool on the CPU backend must hold a dual encoder (read from a local config)."""
    config = Path(model_path) / "config.json"
    if model_path.startswith("builtin:"):
        raise ValueError(
            f"model_path: {model_path} is not a dual encoder (image_reward_model needs CLIPModel)"
        )
    if not config.is_file():
        return  # checked by the model server at start-up, which names the problem
    try:
        architectures = list(json.loads(config.read_text()).get("architectures") or [])
    except (OSError, ValueError):
        return
    if not set(architectures) & set(DUAL_ENCODERS):
        raise ValueError(
            f"model_path: {model_path} holds {architectures or 'no architecture'}; an image_reward_model "
            f"pool serves a dual encoder ({sorted(DUAL_ENCODERS)})"
        )


class FleetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pools: dict[str, PoolConfig] = Field(default_factory=dict)
    default_pool: str | None = Field(default=None, description="Pool whose router is reward_router_address.")
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)
    gateway_processes: int | Literal["auto"] = Field(
        default=1,
        description="Gateway processes serving its port (`rewardfleet gateway --processes`); 'auto': one per "
        "usable CPU left after the CPU model servers' torch threads (1 each where unset).",
    )
    run_dir: Path = Field(default=Path(".rewardfleet"), description="Logs, generated configs, fleet state.")
    ready_timeout_s: float = Field(default=300.0, gt=0, description="Longest wait for one child to be ready.")
    restart_max_backoff_s: float = Field(default=30.0, gt=0)
    ray: RayConfig | None = Field(
        default=None, description="Where each part runs on a Ray cluster (`rewardfleet up --ray`)."
    )
    slurm: SlurmConfig | None = Field(
        default=None, description="The allocation `rewardfleet up --slurm` asks for."
    )

    @field_validator("pools")
    @classmethod
    def _pool_names(cls, value: dict[str, PoolConfig]) -> dict[str, PoolConfig]:
        for name in value:
            if not _POOL_NAME_RE.match(name):
                raise ValueError(
                    f"pool name {name!r}: use lower-case letters, digits and _ (start with a letter)"
                )
        return value

    @field_validator("gateway_processes")
    @classmethod
    def _processes(cls, value: int | str) -> int | str:
        if isinstance(value, int) and value < 1:
            raise ValueError("gateway_processes must be >= 1 or 'auto'")
        return value

    @model_validator(mode="after")
    def _defaults(self) -> FleetConfig:
        routed = {n: p for n, p in self.pools.items() if p.backend != "external"}
        if self.default_pool is not None and self.default_pool not in routed:
            raise ValueError(
                f"default_pool: {self.default_pool!r} is not one of the pools with a router {sorted(routed)}"
            )
        if self.default_pool is None and routed:
            # verl's reward_router_address points at the reward model; prefer it, then the judge.
            for kind in ("reward_model", "judge", "encoder", "image_reward_model"):
                match = next((n for n, p in routed.items() if p.kind == kind), None)
                if match:
                    self.default_pool = match
                    break
        if self.ray is not None:
            self._check_ray(self.ray)
        clash = sorted(
            (set(self.gateway.pools.routers) | set(self.gateway.pools.external_pools)) & set(self.pools)
        )
        if clash:
            raise ValueError(
                f"gateway.routers: {clash} are pool names; the fleet sets those addresses itself"
            )
        return self

    def _check_ray(self, ray: RayConfig) -> None:
        unknown = sorted(set(ray.pools) - {n for n, p in self.pools.items() if p.backend != "external"})
        if unknown:
            raise ValueError(f"ray.pools: {unknown} are not pools the fleet runs")
        prm = sorted(n for n, p in self.pools.items() if p.kind == "prm" and p.backend != "external")
        if prm:
            raise ValueError(
                f"ray: pools {prm} (kind prm) are reached at their replica's own address, which moves on "
                "Ray; run them as backend external"
            )
        if ray.gateway.most_replicas > 1 and self.gateway.state.state_url is None:
            raise ValueError(
                "ray.gateway.replicas > 1 (or autoscale.max_replicas > 1) needs gateway.state.state_url: "
                "a Redis every gateway node reaches (the gateways share groups, idempotency and budgets "
                "through it)"
            )


def load_fleet_config(path: Path | None) -> FleetConfig:
    """Read and validate a fleet config; `None` is the embedded CPU default."""
    source = path or DEFAULT_CONFIG_PATH
    try:
        data = yaml.safe_load(source.read_text()) or {}
    except OSError as exc:
        raise FleetConfigError(f"{source}: cannot read the fleet config: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise FleetConfigError(f"{source}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise FleetConfigError(f"{source}: the fleet config must be a mapping, got {type(data).__name__}")
    base = source.parent
    # Relative folders in the file are relative to the file, not to wherever `rewardfleet up` runs.
    gateway = data.get("gateway")
    for holder in (gateway, gateway.get("loading") if isinstance(gateway, dict) else None):
        if isinstance(holder, dict) and isinstance(holder.get("reward_fns_dirs"), list):
            holder["reward_fns_dirs"] = [str((base / d).resolve()) for d in holder["reward_fns_dirs"]]
    try:
        return FleetConfig.model_validate(data)
    except ValidationError as exc:
        raise FleetConfigError(f"{source}: invalid fleet config:\n{format_validation_error(exc)}") from exc
