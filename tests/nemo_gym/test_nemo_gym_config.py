"""The documented configs work together: the gateway started from deploy/nemo_gym/fleet.yaml's `gateway:`
section, and deploy/nemo_gym/nemo_gym_mcqa.yaml resolved by NeMo Gym's own config code (child interpreter,
from its wheel) to the address its server client posts `/verify` to, which answers with NeMo Gym's recorded
reward."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from bench.harness.processes import REPO_ROOT, free_port
from rewardfleet.services.fleet.config import load_fleet_config
from tests.integrations.test_verl_trainer_code import ANTLR_FOR_VERL
from tests.nemo_gym.nemo_gym_source import wheel_path
from tests.nemo_gym.test_parity import CASES, _bodies
from tests.support.gateway import Gateway, start_gateway

DEPLOY = REPO_ROOT / "deploy" / "nemo_gym"


@pytest.fixture(scope="module")
def fleet_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Gateway, int]]:
    fleet = load_fleet_config(DEPLOY / "fleet.yaml")  # the fleet's own loader checks the file
    gateway = yaml.safe_load((DEPLOY / "fleet.yaml").read_text())["gateway"]
    assert set(fleet.gateway.nemo_gym.servers) == set(gateway["nemo_gym"]["servers"])
    gateway["host"] = "127.0.0.1"
    ports = {name: free_port() for name in gateway["nemo_gym"]["servers"]}
    for name, port in ports.items():
        gateway["nemo_gym"]["servers"][name]["port"] = port
    gw = start_gateway(Path(tmp_path_factory.mktemp("fleet_nemo_gym")), gateway, None)
    try:
        yield gw, ports["mcqa"]
    finally:
        gw.proc.stop()


def test_nemo_gym_resolves_the_fleet_and_gets_its_reward(fleet_gateway: tuple[Gateway, int]) -> None:
    _, port = fleet_gateway
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ANTLR_FOR_VERL), os.environ.get("PYTHONPATH", "")]),
    }
    child = Path(__file__).with_name("resolve_address.py")
    config = DEPLOY / "nemo_gym_mcqa.yaml"
    args = [sys.executable, str(child), str(wheel_path()), str(config), "mcqa", "127.0.0.1", str(port)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    url = done.stdout.strip().splitlines()[-1]
    assert url == f"http://127.0.0.1:{port}/verify"
    for _, body, recorded, _ in _bodies(CASES[0]):
        answer = httpx.post(url, json=body, timeout=60).json()
        assert (answer["reward"], answer["extracted_answer"]) == (
            recorded["reward"],
            recorded["extracted_answer"],
        )
