"""A monitor configured with a name that does not exist stops the gateway at start-up, naming it."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from bench.harness.processes import REPO_ROOT, free_port
from tests.support.gateway import gateway_cmd, write_config

ROUTERS = {"routers": {"judge": "127.0.0.1:9"}, "workers": 1}


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ({"pool_prices": {"jdge": {"input_usd_per_million_tokens": 1, "output_usd_per_million_tokens": 1}}},
         "pool_prices: ['jdge'] name no pool (routers and external_pools: ['judge'])"),
        ({"judge_probes": {"functions": ["no_such_judge"]}},
         "judge_probes.functions: ['no_such_judge'] are not loaded functions"),
        ({"functions": {"judge": {"shadow": {"pool": "gold"}}}},
         "functions.<name>.shadow.pool names no pool: {'judge': 'gold'}"),
    ],
)  # fmt: skip
def test_unknown_names_stop_startup(tmp_path: Path, config: dict[str, Any], needle: str) -> None:
    path = write_config(tmp_path / "gw.yaml", {**ROUTERS, **config})
    cmd = gateway_cmd("--port", str(free_port()), "--config", str(path))
    result = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert needle in result.stderr, result.stderr[-2000:]


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ({"pool_prices": {"judge": {"input_usd_per_million_tokens": -1, "output_usd_per_million_tokens": 1}}},
         "pool_prices.judge.input_usd_per_million_tokens: Input should be greater than or equal to 0"),
        ({"functions": {"judge": {"max_spend_usd": 0}}},
         "functions.judge.max_spend_usd: Input should be greater than 0"),
        ({"judge_probes": {"degrade_above_ratio": 1.5}},
         "judge_probes.degrade_above_ratio: Input should be less than"),
        ({"functions": {"judge": {"shadow": {"pool": "judge", "sample_rate": 0}}}},
         "functions.judge.shadow.sample_rate: Input should be greater than 0"),
    ],
)  # fmt: skip
def test_bad_values_exit_2_naming_the_key(tmp_path: Path, config: dict[str, Any], needle: str) -> None:
    path = write_config(tmp_path / "gw.yaml", {**ROUTERS, **config})
    cmd = gateway_cmd("--port", str(free_port()), "--config", str(path))
    result = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and needle in result.stderr, result.stderr[-2000:]
