"""The gateway process with `state_url`: the flag and the variable reach it, an unreachable store stops
start-up with a clear message, a bad URL is a configuration error naming the key, and /metrics carries the
store's latency and errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.harness.redis_server import RedisServer
from tests.gateway.state_store.fleet import FLEET_FNS


def gateway_args(port: int, *more: str) -> list[str]:
    return rewardfleet_cmd(
        "gateway", "--port", str(port), "--reward-fns", str(FLEET_FNS), "--workers", "1", *more
    )


def test_unreachable_store_stops_start_up(tmp_path: Path) -> None:
    url = f"redis://:hunter2@127.0.0.1:{free_port()}/0"
    proc = subprocess.run(
        gateway_args(free_port(), "--state-url", url), capture_output=True, text=True, timeout=120
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "cannot reach Redis" in output and ":***@127.0.0.1" in output and "hunter2" not in output


def test_bad_state_url_is_a_configuration_error() -> None:
    env = {**os.environ, "REWARDFLEET_GATEWAY_STATE_URL": "http://127.0.0.1:6379"}
    proc = subprocess.run(
        [sys.executable, "-m", "rewardfleet.services.cli", "gateway", "--port", str(free_port())],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "state_url" in proc.stderr and "redis://" in proc.stderr


def test_flag_reaches_the_gateway_and_metrics_show_the_store(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    port = free_port()
    log = tmp_path / "runs.log"
    env = {"REWARDFLEET_GATEWAY_FUNCTIONS__STAMPED__REWARD_KWARGS": f'{{"log_path": "{log}"}}'}
    proc = ChildProcess(gateway_args(port, "--state-url", redis_server.url), tmp_path / "gw.log", env=env)
    try:
        base = f"http://127.0.0.1:{port}"
        proc.wait_http(base + "/ready", timeout_s=120)
        body = {
            "data_source": "x",
            "reward_fn": "stamped",
            "solution_str": "abcd",
            "ground_truth": "",
            "uid": "f1",
        }
        first, second = (httpx.post(base + "/score", json=body, timeout=30).json() for _ in range(2))
        assert (first["score"], first["cached"], second["cached"]) == (4.0, False, True)
        metrics = httpx.get(base + "/metrics", timeout=10).text
        assert 'rewardfleet_state_store_duration_seconds_count{op="cache_claim"}' in metrics
        assert "rewardfleet_state_store_errors_total" in metrics
        assert "state backend: redis" in proc.log()
    finally:
        proc.stop()
