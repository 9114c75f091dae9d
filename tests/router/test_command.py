"""build_command: every flag exists in the real binary and parses back to the configured values."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr
from sglang_router.launch_router import parse_router_args

from rewardfleet.router import RouterConfig, build_command, sglang_router_binary
from rewardfleet.router import command as command_module
from rewardfleet.router.command import RouterBinaryNotFound
from rewardfleet.services.common.redact import redact_argv


@pytest.fixture(scope="module")
def binary_flags() -> set[str]:
    out = subprocess.run(
        [str(sglang_router_binary()), "launch", "--help"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return set(re.findall(r"(--[a-z0-9][a-z0-9-]*)", out.stdout))


FULL = RouterConfig(
    host="127.0.0.1",
    port=31000,
    worker_urls=["http://127.0.0.1:31001", "http://127.0.0.1:31002"],
    policy="power_of_two",
    health_check_interval_secs=7,
    health_check_timeout_secs=3,
    health_failure_threshold=4,
    health_success_threshold=5,
    health_check_endpoint="/health_generate",
    disable_health_check=True,
    retry_max_retries=9,
    retry_initial_backoff_ms=11,
    retry_max_backoff_ms=1234,
    retry_backoff_multiplier=2.5,
    retry_jitter_factor=0.05,
    disable_retries=True,
    cb_failure_threshold=13,
    cb_success_threshold=2,
    cb_timeout_duration_secs=17,
    cb_window_duration_secs=19,
    disable_circuit_breaker=True,
    request_timeout_secs=23,
    shutdown_grace_period_secs=3,
    max_concurrent_requests=64,
    queue_size=7,
    queue_timeout_secs=29,
    rate_limit_tokens_per_second=31,
    api_key=SecretStr("top-secret-0f9e8d7c"),
    service_discovery=True,
    selector={"app": "judge", "tier": "gpu"},
    service_discovery_namespace="rl",
    service_discovery_port=8080,
    prometheus_host="127.0.0.1",
    prometheus_port=31009,
    log_level="debug",
    log_dir=Path("/tmp/router-logs"),
    max_payload_size=1024,
    worker_startup_timeout_secs=37,
    worker_startup_check_interval=2,
)


def test_every_emitted_flag_exists_in_the_binary(binary_flags: set[str]) -> None:
    cmd = build_command(FULL)
    assert cmd[1] == "launch"
    emitted = {arg for arg in cmd[2:] if arg.startswith("--")}
    assert emitted, cmd
    missing = emitted - binary_flags
    assert not missing, f"flags unknown to sglang-router 0.3.2: {sorted(missing)}"


@pytest.mark.parametrize("cfg", [FULL, RouterConfig()], ids=["all-settings", "defaults"])
def test_binary_parser_reads_back_every_setting(cfg: RouterConfig) -> None:
    parsed = parse_router_args(build_command(cfg)[2:])  # the binary's own argument parser
    for name in RouterConfig.model_fields:
        ours = getattr(cfg, name)
        theirs = getattr(parsed, name)
        if name == "api_key":
            ours = ours.get_secret_value() if ours is not None else None
        elif name == "log_dir":
            ours = str(ours) if ours is not None else None
        assert theirs == ours, f"{name}: binary parsed {theirs!r}, config has {ours!r}"


def test_api_key_is_hidden_by_the_fleet_redaction() -> None:
    cmd = build_command(FULL)
    assert "top-secret-0f9e8d7c" in cmd
    shown = redact_argv(cmd)
    assert "top-secret-0f9e8d7c" not in shown
    assert shown[shown.index("--api-key") + 1] == "***"


def test_binary_found_next_to_interpreter() -> None:
    assert sglang_router_binary() == Path(sys.executable).parent / "sglang-router"


def test_missing_binary_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(command_module.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RouterBinaryNotFound, match=r"pip install 'reward-fleet\[router\]'"):
        sglang_router_binary()
