"""The sections that own keys once flat at the top of the gateway config, and their flat spellings.

The sections that own keys once flat at the top of the gateway config, and the mapping that keeps the flat
spelling working: `max_solution_chars: 1000` is `limits: {max_solution_chars: 1000}` (docs/gateway.md).

A flat key given next to its section's own (in the same file, or the same environment) wins over it."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from rewardfleet.services.gateway.admission.config import AdmissionConfig
from rewardfleet.services.gateway.cache.config import CacheConfig
from rewardfleet.services.gateway.config.auth import AuthConfig
from rewardfleet.services.gateway.execution.config import LoadingConfig, SyncPoolConfig
from rewardfleet.services.gateway.limits.config import BodyLimits, InputLimits
from rewardfleet.services.gateway.pools.config import PoolsConfig
from rewardfleet.services.gateway.state_store.config import StateConfig

SECTIONS: dict[str, type[BaseModel]] = {
    "limits": InputLimits,
    "admission": AdmissionConfig,
    "cache": CacheConfig,
    "body": BodyLimits,
    "sync_pool": SyncPoolConfig,
    "state": StateConfig,
    "auth": AuthConfig,
    "loading": LoadingConfig,
    "pools": PoolsConfig,
}
FLAT_KEYS: dict[str, str] = {
    key: section for section, model in SECTIONS.items() for key in model.model_fields
}


def nest_flat_keys(data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` with every flat key moved into its section (a copy; `data` is left as it is)."""
    out = dict(data)
    for key in [k for k in out if k in FLAT_KEYS]:
        section = FLAT_KEYS[key]
        nested = out.get(section)
        if isinstance(nested, BaseModel):
            nested = nested.model_dump(exclude_unset=True)
        elif not isinstance(nested, Mapping):  # absent, or not a mapping: the section's own check says so
            nested = {} if nested is None else nested
        if isinstance(nested, Mapping):
            out[section] = {**nested, key: out.pop(key)}
    return out


def flat_env(prefix: str, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The moved keys' flat variables (`REWARDFLEET_GATEWAY_MAX_SOLUTION_CHARS`), nested into their sections;
    a list or a mapping is given as JSON, as for every other variable."""
    environ = os.environ if environ is None else environ
    upper = {name.upper(): value for name, value in environ.items()}
    found: dict[str, Any] = {}
    for key in FLAT_KEYS:
        value: Any = upper.get(f"{prefix}{key}".upper())
        if value is None:
            continue
        if value.lstrip().startswith(("[", "{")):  # a list or a mapping (routers, external_pools)
            with contextlib.suppress(ValueError):  # else the section's own check names the key
                value = json.loads(value)
        found[key] = value
    return nest_flat_keys(found)
