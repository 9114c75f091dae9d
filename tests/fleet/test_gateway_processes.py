"""`gateway_processes` / `rewardfleet up --processes`: what the plan starts, and what `auto` leaves to the
CPU model servers."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardfleet.services.common.cpus import usable_cpus
from rewardfleet.services.fleet.config import FleetConfig
from rewardfleet.services.fleet.plan import gateway_processes, plan_fleet


def config(tmp_path: Path, processes: int | str, threads: int | None = None) -> FleetConfig:
    server_args = {"torch-num-threads": threads} if threads else {}
    return FleetConfig.model_validate(
        {
            "run_dir": str(tmp_path),
            "gateway_processes": processes,
            "pools": {
                "rm": {
                    "kind": "encoder",
                    "model_path": "builtin:minilm",
                    "replicas": 2,
                    "server_args": server_args,
                }
            },
        }
    )


def test_one_process_by_default_and_n_on_request(tmp_path: Path) -> None:
    assert "--processes" not in plan_fleet(FleetConfig(run_dir=tmp_path)).gateway_spec.argv
    argv = plan_fleet(config(tmp_path, 3)).gateway_spec.argv
    assert argv[argv.index("--processes") + 1] == "3"


def test_auto_leaves_the_model_servers_their_threads(tmp_path: Path) -> None:
    assert gateway_processes(config(tmp_path, "auto")) == max(1, usable_cpus() - 2)
    assert gateway_processes(config(tmp_path, "auto", threads=64)) == 1  # never fewer than one


@pytest.mark.parametrize("bad", [0, -1, "many"])
def test_bad_values_name_the_key(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="gateway_processes"):
        config(tmp_path, bad)  # type: ignore[arg-type]
