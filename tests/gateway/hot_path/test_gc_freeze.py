"""The gateway's own process freezes what start-up built and raises the collector's thresholds
(`create_app(freeze_startup=True)`, which the CLI passes; hot_path/gc_tuning.py); an embedding process is
left alone. Run in a child process: both are process-wide."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.harness.processes import REPO_ROOT
from rewardfleet.services.gateway.hot_path import gc_tuning

SCRIPT = """
import gc, sys
from fastapi.testclient import TestClient
from rewardfleet.services.gateway.app import create_app
from rewardfleet.services.gateway.config import GatewayConfig

config = GatewayConfig(workers=1, reward_fns_dirs=[sys.argv[2]])
with TestClient(create_app(config, freeze_startup=sys.argv[1] == "yes")) as client:
    assert client.get("/ready").status_code == 200
    print(gc.get_threshold()[0], gc.get_freeze_count(), len(gc.get_objects()))
"""
GOOD = "async def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 0.5\n"


@pytest.mark.parametrize("freeze", ["yes", "no"])
def test_startup_objects_are_frozen_only_when_asked(tmp_path: Path, freeze: str) -> None:
    (tmp_path / "good.py").write_text(GOOD)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, freeze, str(tmp_path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    young, frozen, tracked = map(int, done.stdout.split()[-3:])
    if freeze == "yes":
        assert frozen > 50_000 and tracked < frozen / 10  # start-up's objects, out of the collector's view
        assert (
            young == gc_tuning.YOUNG_THRESHOLD
        )  # a step's in-flight requests are not walked again and again
    else:
        assert frozen == 0 and young == 700  # CPython's default, untouched
