"""The `tenants:` and `tenancy:` sections of the gateway config.

    tenancy:
      priority_classes: [eval, train]     # served in this order when a pool is saturated
      max_run_labels: 16                  # distinct `run` labels per tenant; more fold into "other"
      headroom_fraction: 0.05             # of a pool's slots kept free for tenants within their share
      headroom_slots: {judge: 4}          # per function (pool), instead of the fraction
    tenants:
      team-a:
        api_keys: [...]                   # or api_keys_file: /etc/rewardfleet/team-a.keys
        priority: train
        weight: 2
        quotas: {samples_in_flight: 4096, requests_per_minute: 60000, judge_tokens_per_minute: 2e6,
                 usd_per_day: 50, usd_total: 500, sessions_open: 1000}

A key belongs to exactly one tenant (checked here and on every reload).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from rewardfleet.services.common.api_keys import check_api_keys, read_keys_file

TENANT_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
OTHER_RUN = "other"


class TenantQuotas(BaseModel):
    """Each limit is optional (None = no limit of that kind)."""

    model_config = ConfigDict(extra="forbid")

    samples_in_flight: int | None = Field(default=None, ge=1, description="Samples being scored at once.")
    requests_per_minute: int | None = Field(default=None, ge=1, description="HTTP work requests a minute.")
    judge_tokens_per_minute: int | None = Field(
        default=None,
        ge=1,
        description="Estimated tokens (ceil(chars/4)) of samples of judge functions (a `pool` in their "
        "reward_kwargs, or a max_concurrency/RPM/TPM limit) a minute.",
    )
    usd_per_day: float | None = Field(default=None, gt=0, description="Judge spend per UTC day, dollars.")
    usd_total: float | None = Field(default=None, gt=0, description="Judge spend in total, dollars.")
    sessions_open: int | None = Field(
        default=None, ge=1, description="Environment sessions open at once (closed or expired ones free)."
    )


class TenantConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    api_keys: Annotated[list[SecretStr], Field(default_factory=list)]
    api_keys_file: Path | None = Field(default=None, description="One key per line, re-read on reload.")
    weight: float = Field(default=1.0, gt=0, le=1000, description="Share of a saturated pool, relative.")
    priority: str | None = Field(default=None, description="A class of tenancy.priority_classes.")
    admin: bool = Field(default=False, description="May call /admin/* (reload).")
    quotas: TenantQuotas = Field(default_factory=TenantQuotas)

    @field_validator("api_keys")
    @classmethod
    def _strong_keys(cls, value: list[SecretStr]) -> list[SecretStr]:
        check_api_keys([key.get_secret_value() for key in value], "api_keys")
        return value

    def keys(self) -> list[str]:
        """Inline keys and the keys file's, read now (a reload reads the file again)."""
        keys = [key.get_secret_value() for key in self.api_keys]
        if self.api_keys_file is not None:
            if not self.api_keys_file.is_file():
                raise ValueError(f"api_keys_file: {str(self.api_keys_file)!r} is not a file")
            keys += check_api_keys(read_keys_file(self.api_keys_file), f"api_keys_file {self.api_keys_file}")
        return keys


class TenancyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    priority_classes: list[str] = Field(
        default_factory=lambda: ["eval", "train"],
        min_length=1,
        description="Served first to last when a pool is saturated; no `priority`: the last class.",
    )
    max_run_labels: int = Field(default=16, ge=1, le=1000, description="Distinct run labels per tenant.")
    run_header: str = Field(default="x-rewardfleet-run", description="Header carrying the run label.")
    share_across_tenants: list[str] = Field(
        default_factory=list,
        description="Functions whose equal samples share one call and cached result across tenants "
        "(deterministic rule functions only). Any other function's cache and calls are per tenant.",
    )

    headroom_fraction: float = Field(
        default=0.05,
        ge=0,
        lt=1,
        description="Of a pool's slots (a function's max_concurrency), the fraction (rounded up) that a "
        "tenant over its share leaves free for tenants within theirs (tenants/shares.py).",
    )
    headroom_slots: dict[str, int] = Field(
        default_factory=dict,
        description="Per function with max_concurrency: the free slots kept, instead of headroom_fraction "
        "(0..max_concurrency-1).",
    )

    @field_validator("headroom_slots")
    @classmethod
    def _slots_not_negative(cls, value: dict[str, int]) -> dict[str, int]:
        for name, slots in value.items():
            if slots < 0:
                raise ValueError(f"tenancy.headroom_slots.{name}: {slots} is negative")
        return value

    @field_validator("run_header")
    @classmethod
    def _lower(cls, value: str) -> str:
        return value.lower()


def check_tenants(tenants: dict[str, TenantConfig], tenancy: TenancyConfig) -> dict[str, list[str]]:
    """name -> its keys; ValueError naming the tenant when a name, class or key is wrong, or a key is
    claimed by two tenants (its value is never printed)."""
    owner: dict[str, str] = {}
    out: dict[str, list[str]] = {}
    for name, cfg in tenants.items():
        if not TENANT_NAME_RE.match(name):
            raise ValueError(f"tenants: {name!r} is not a tenant name (letters, digits, _ . -; at most 64)")
        if cfg.priority is not None and cfg.priority not in tenancy.priority_classes:
            raise ValueError(
                f"tenants.{name}.priority: {cfg.priority!r} is not one of {tenancy.priority_classes}"
            )
        keys = cfg.keys()
        if not keys:
            raise ValueError(f"tenants.{name}: no API key (api_keys or api_keys_file)")
        for index, key in enumerate(keys):
            other = owner.get(key)
            if other is not None:
                raise ValueError(
                    f"tenants.{name}: key #{index} is also a key of tenant {other!r}; a key belongs to "
                    "one tenant"
                )
            owner[key] = name
        out[name] = keys
    return out


def check_headroom(tenancy: TenancyConfig, pools: dict[str, int | None]) -> None:
    """ValueError naming the field when `headroom_slots` names a function that is not a pool (`pools`: each
    function's max_concurrency) or keeps the whole pool free."""
    for name, slots in tenancy.headroom_slots.items():
        capacity = pools.get(name)
        if not capacity:
            raise ValueError(
                f"tenancy.headroom_slots.{name}: {name!r} is not a function with max_concurrency "
                f"(functions with a pool: {sorted(n for n, c in pools.items() if c)})"
            )
        if slots >= capacity:
            raise ValueError(
                f"tenancy.headroom_slots.{name}: {slots} must be below the function's max_concurrency "
                f"({capacity}), or no tenant could borrow a slot"
            )


class TenantsSection(BaseModel):
    """What a reload re-reads from the config file."""

    model_config = ConfigDict(extra="ignore")

    tenants: dict[str, TenantConfig] = Field(default_factory=dict)
    tenancy: TenancyConfig = Field(default_factory=TenancyConfig)

    @model_validator(mode="after")
    def _valid(self) -> TenantsSection:
        check_tenants(self.tenants, self.tenancy)
        return self

    @classmethod
    def from_yaml(cls, data: Any) -> TenantsSection:
        section = data.get("gateway", data) if isinstance(data, dict) else {}
        if not isinstance(section, dict):
            raise ValueError("the config file's gateway section is not a mapping")
        return cls.model_validate(
            {"tenants": section.get("tenants") or {}, "tenancy": section.get("tenancy") or {}}
        )
