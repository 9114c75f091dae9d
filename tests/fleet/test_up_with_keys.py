"""`rewardfleet up` with a gateway that has tenants or API keys: every route but `/health` needs a key, so the
supervisor's readiness probe sends one of the gateway's own (services/fleet/probe_key.py) and `up` gets past
the gateway; a request without a key is still refused."""

from __future__ import annotations

import textwrap
from pathlib import Path

import httpx
import pytest

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.harness.waiting import eventually
from rewardfleet.services.fleet.config import load_fleet_config
from rewardfleet.services.fleet.probe_key import probe_key

FNS = Path(__file__).parents[1] / "gateway" / "tenants" / "fns"
TEAM_KEY = "team-key-0123456789abcdef"
OPS_KEY = "ops-key-0123456789abcdef"
PLAIN_KEY = "plain-key-0123456789abcdef"


def _fleet(tmp_path: Path, port: int, keys: str) -> Path:
    (tmp_path / "team.keys").write_text(f"# the team's key\n{TEAM_KEY}\n")
    if keys == "tenants":
        section = f"""
          tenants:
            team: {{api_keys_file: {tmp_path / "team.keys"}}}
            ops: {{api_keys: [{OPS_KEY}], admin: true}}"""
    else:
        section = f"""
          api_keys_file: {tmp_path / "team.keys"}"""
    path = tmp_path / "fleet.yaml"
    path.write_text(
        textwrap.dedent(f"""
        run_dir: {tmp_path / "run"}
        ready_timeout_s: 60
        gateway:
          port: {port}
          builtin_package: null
          reward_fns_dirs: [{FNS}]""")
        + textwrap.indent(textwrap.dedent(section), "  ")
        + "\n"
    )
    return path


@pytest.mark.parametrize("keys", ["tenants", "api_keys_file"])
def test_up_gets_past_a_gateway_with_keys(tmp_path: Path, keys: str) -> None:
    port = free_port()
    config = _fleet(tmp_path, port, keys)
    expected = OPS_KEY if keys == "tenants" else TEAM_KEY
    assert probe_key(load_fleet_config(config).gateway) == expected  # an admin tenant's key first
    proc = ChildProcess(rewardfleet_cmd("up", "--config", str(config)), tmp_path / "up.log")
    try:
        base = f"http://127.0.0.1:{port}"
        # `up` prints its endpoints once every child it waits for is ready: the probe got past the key
        eventually(
            lambda: "Reward Fleet is up" in proc.log(), timeout_s=180, interval_s=0.2,
            what="up to see the gateway ready", detail=lambda: proc.log()[-3000:],
        )  # fmt: skip
        assert httpx.get(base + "/ready", timeout=10).status_code == 401  # the probe's key, not an open door
        ok = httpx.get(base + "/ready", headers={"Authorization": f"Bearer {TEAM_KEY}"}, timeout=10)
        assert ok.status_code == 200
        assert TEAM_KEY not in proc.log() and OPS_KEY not in proc.log()
    finally:
        proc.stop()
