"""The fleet config's `ray:` section: where each part of the fleet runs on a Ray cluster.

```yaml
ray:
  address: auto                 # or "10.0.0.1:6379"; `rewardfleet up --ray ADDRESS` overrides it
  pools:                        # per pool (defaults: a CPU pool takes its torch threads in CPUs, an SGLang
    judge: {num_gpus: 1}        # pool one GPU, or its tp-size)
    reward_model: {autoscale: {min_replicas: 2, max_replicas: 8, target_queue: 32}}
  gateway: {replicas: 2, resources: {gateway_node: 1}}   # on the nodes offering the custom resource
  # or gateways following their load: {autoscale: {min_replicas: 2, max_replicas: 8, target_inflight: 4096}}
  placement_strategy: SPREAD    # each pool's replicas and the gateways: one placement group each
  max_restarts: -1              # Ray restarts a dead part without limit
  niceness: 0                   # the fleet's processes at normal priority (Ray's workers default to 15)
```
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class RayPlacement(BaseModel):
    """What one actor asks of its node: CPUs, GPUs and custom resources."""

    model_config = ConfigDict(extra="forbid")

    num_cpus: float | None = Field(default=None, ge=0)
    num_gpus: float | None = Field(default=None, ge=0)
    resources: dict[str, float] = Field(
        default_factory=dict, description="Custom resources: the part runs only on nodes offering them."
    )

    @field_validator("resources")
    @classmethod
    def _custom(cls, value: dict[str, float]) -> dict[str, float]:
        for name, amount in value.items():
            if name in ("CPU", "GPU", "memory", "object_store_memory"):
                raise ValueError(f"resources.{name}: use num_cpus / num_gpus for Ray's built-in resources")
            if amount <= 0:
                raise ValueError(f"resources.{name} must be > 0, got {amount}")
        return value


class RayScaleBounds(BaseModel):
    """Replicas following a load: within the bounds, one more at most every `up_cooldown_s`, one less once the
    load has stayed under the target for `down_cooldown_s`."""

    model_config = ConfigDict(extra="forbid")

    min_replicas: int = Field(default=1, ge=1, le=64)
    max_replicas: int = Field(default=4, ge=1, le=64)
    up_cooldown_s: float = Field(default=15.0, ge=0)
    down_cooldown_s: float = Field(default=300.0, ge=0)

    @model_validator(mode="after")
    def _bounds(self) -> RayScaleBounds:
        if self.max_replicas < self.min_replicas:
            raise ValueError(f"max_replicas {self.max_replicas} < min_replicas {self.min_replicas}")
        return self


class RayAutoscale(RayScaleBounds):
    """A pool's replicas follow its queue: ceil(requests waiting over all replicas ÷ `target_queue`)."""

    target_queue: float = Field(default=8.0, gt=0, description="Requests waiting per replica.")

    @property
    def target(self) -> float:
        return self.target_queue


class RayGatewayAutoscale(RayScaleBounds):
    """The gateways follow their load: ceil(requests in flight over all gateways ÷ `target_inflight`)."""

    target_inflight: float = Field(default=4096.0, gt=0, description="Requests in flight per gateway.")

    @property
    def target(self) -> float:
        return self.target_inflight


class RayPool(RayPlacement):
    """A pool's replicas: their resources, and optionally scaling on load."""

    autoscale: RayAutoscale | None = None


class RayGateway(RayPlacement):
    """The gateways: each one a `FrontActor` with its own router per pool."""

    replicas: int = Field(
        default=1, ge=1, le=64, description="Gateways at start (with `autoscale`: kept within its bounds)."
    )
    port: int | None = Field(
        default=None, ge=1, le=65535, description="Each gateway's port on its node (default: a free one)."
    )
    autoscale: RayGatewayAutoscale | None = None

    @model_validator(mode="after")
    def _scaled_ports(self) -> RayGateway:
        if self.autoscale is not None and self.port is not None:
            raise ValueError("gateway.port: gateways that scale take a free port each (leave port out)")
        return self

    @property
    def start_replicas(self) -> int:
        if self.autoscale is None:
            return self.replicas
        return min(self.autoscale.max_replicas, max(self.autoscale.min_replicas, self.replicas))

    @property
    def most_replicas(self) -> int:
        return self.replicas if self.autoscale is None else max(self.replicas, self.autoscale.max_replicas)


class RayConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    address: str | None = Field(
        default=None, description="`auto`, or the head's host:port / ray:// URL; `--ray` overrides it."
    )
    namespace: str = Field(default="rewardfleet", min_length=1)
    name: str = Field(
        default="rewardfleet",
        min_length=1,
        description="Name of the actor that publishes the gateways' addresses (one fleet per name).",
    )
    pools: dict[str, RayPool] = Field(default_factory=dict)
    gateway: RayGateway = Field(default_factory=RayGateway)
    placement_strategy: Literal["SPREAD", "STRICT_SPREAD", "PACK", "STRICT_PACK"] = "SPREAD"
    max_restarts: int = Field(default=-1, ge=-1, description="-1: Ray restarts a dead part without limit.")
    reconcile_interval_s: float = Field(
        default=1.0, gt=0, le=60, description="How often each router's workers are matched to the replicas."
    )
    niceness: int = Field(
        default=0,
        ge=0,
        le=19,
        description="Niceness of the fleet's actors and the processes they own. Ray starts its workers at "
        "15, behind every other process of the node; 0 serves the gateway and model servers at normal "
        "priority, as Ray's own job drivers are.",
    )

    @property
    def runtime_env(self) -> dict[str, Any]:
        """The actors' runtime env: the raylet starts their workers at `niceness`."""
        return {"env_vars": {"RAY_worker_niceness": str(self.niceness)}}
