"""A fleet config (`rewardfleet up`) with tenants: the gateway's own file keeps each tenant's inline keys (the
display redacts them, the file must not)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import yaml


def test_fleet_keeps_tenant_keys_in_the_gateway_file(tmp_path: Path) -> None:
    from rewardfleet.services.fleet.config import load_fleet_config
    from rewardfleet.services.fleet.plan import plan_fleet

    path = tmp_path / "fleet.yaml"
    path.write_text(
        textwrap.dedent(f"""
        run_dir: {tmp_path / "run"}
        gateway:
          builtin_package: null
          tenants:
            team-a: {{api_keys: [team-a-secret-key-0123456789], priority: train, weight: 2}}
        """)
    )
    plan = plan_fleet(load_fleet_config(path))
    section = yaml.safe_load(plan.gateway_config_text)["gateway"]
    assert section["tenants"]["team-a"]["api_keys"] == ["team-a-secret-key-0123456789"]
    assert section["tenants"]["team-a"]["weight"] == 2
    assert "team-a-secret-key" not in plan.gateway_config_display()
