"""API key -> tenant.

Built from the config; `reload()` re-reads the keys files (and the config file's `tenants:` section when the
gateway was started with one), so a key moved between tenants, added or removed takes effect without a
restart.

A presented key is compared with every key of every tenant by `hmac.compare_digest`, without stopping at a
match (as services/common/api_keys.py does): the time taken says nothing of which key matched.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rewardfleet.services.gateway.config.tenants import (
    TenancyConfig,
    TenantConfig,
    TenantsSection,
    check_tenants,
)


@dataclass(frozen=True)
class Table:
    tenants: dict[str, TenantConfig]
    tenancy: TenancyConfig
    keys: tuple[tuple[bytes, str], ...]  # (key, tenant name)

    def rank(self, config: TenantConfig) -> int:
        classes = self.tenancy.priority_classes
        return classes.index(config.priority) if config.priority is not None else len(classes) - 1


def _table(tenants: dict[str, TenantConfig], tenancy: TenancyConfig) -> Table:
    keys = check_tenants(tenants, tenancy)
    pairs = tuple((key.encode(), name) for name, ks in keys.items() for key in ks)
    return Table(dict(tenants), tenancy, pairs)


class TenantDirectory:
    def __init__(
        self, tenants: dict[str, TenantConfig], tenancy: TenancyConfig, config_file: Path | None = None
    ) -> None:
        self.table = _table(tenants, tenancy)
        self.config_file = config_file
        self.generation = 0
        self.check: Callable[[TenancyConfig], None] | None = None  # more checks of a reloaded `tenancy:`

    def resolve(self, presented: bytes) -> str | None:
        """The tenant owning `presented`, else None (constant time over all keys)."""
        found: str | None = None
        for key, name in self.table.keys:
            if hmac.compare_digest(presented, key):
                found = name
        return found

    def reload(self) -> dict[str, Any]:
        """Re-read the keys (and the config file's tenants); ValueError leaves the old table serving."""
        tenants, tenancy = self.table.tenants, self.table.tenancy
        if self.config_file is not None:
            section = TenantsSection.from_yaml(yaml.safe_load(self.config_file.read_text()) or {})
            if not section.tenants:
                raise ValueError(
                    "tenants: the config file names no tenant (tenants cannot be turned off by reload)"
                )
            tenants, tenancy = section.tenants, section.tenancy
            if self.check is not None:
                self.check(tenancy)
        self.table = _table(tenants, tenancy)
        self.generation += 1
        return {"generation": self.generation, "tenants": sorted(self.table.tenants)}
