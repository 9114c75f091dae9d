"""The exact argv that starts an sglang-router for a `RouterConfig`.

Every setting is passed explicitly, defaults included, so the command line alone says how a router runs and a
change of the binary's defaults cannot change ours silently.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from rewardfleet.router.config import RouterConfig

BINARY_NAME = "sglang-router"


class RouterBinaryNotFound(FileNotFoundError):
    """The `sglang-router` executable is neither next to the interpreter nor on PATH."""


def sglang_router_binary() -> Path:
    """The `sglang-router` of this interpreter's environment, else the first one on PATH."""
    beside = Path(sys.executable).parent / BINARY_NAME
    if beside.is_file():
        return beside
    found = shutil.which(BINARY_NAME)
    if found:
        return Path(found)
    raise RouterBinaryNotFound(
        f"{BINARY_NAME} not found next to {sys.executable} nor on PATH; "
        "install it with `pip install 'reward-fleet[router]'` (sglang-router==0.3.2)"
    )


def build_command(cfg: RouterConfig, binary: Path | None = None) -> list[str]:
    """argv for `sglang-router launch` with every setting of `cfg`."""
    exe = binary if binary is not None else sglang_router_binary()
    cmd = [str(exe), "launch", "--host", cfg.host, "--port", str(cfg.port)]
    if cfg.worker_urls:
        cmd += ["--worker-urls", *cfg.worker_urls]
    cmd += [
        "--policy", cfg.policy,
        "--max-payload-size", str(cfg.max_payload_size),
        "--worker-startup-timeout-secs", str(cfg.worker_startup_timeout_secs),
        "--worker-startup-check-interval", str(cfg.worker_startup_check_interval),
        "--health-check-interval-secs", str(cfg.health_check_interval_secs),
        "--health-check-timeout-secs", str(cfg.health_check_timeout_secs),
        "--health-failure-threshold", str(cfg.health_failure_threshold),
        "--health-success-threshold", str(cfg.health_success_threshold),
        "--health-check-endpoint", cfg.health_check_endpoint,
        "--retry-max-retries", str(cfg.retry_max_retries),
        "--retry-initial-backoff-ms", str(cfg.retry_initial_backoff_ms),
        "--retry-max-backoff-ms", str(cfg.retry_max_backoff_ms),
        "--retry-backoff-multiplier", _number(cfg.retry_backoff_multiplier),
        "--retry-jitter-factor", _number(cfg.retry_jitter_factor),
        "--cb-failure-threshold", str(cfg.cb_failure_threshold),
        "--cb-success-threshold", str(cfg.cb_success_threshold),
        "--cb-timeout-duration-secs", str(cfg.cb_timeout_duration_secs),
        "--cb-window-duration-secs", str(cfg.cb_window_duration_secs),
        "--request-timeout-secs", str(cfg.request_timeout_secs),
        "--shutdown-grace-period-secs", str(cfg.shutdown_grace_period_secs),
        "--max-concurrent-requests", str(cfg.max_concurrent_requests),
        "--queue-size", str(cfg.queue_size),
        "--queue-timeout-secs", str(cfg.queue_timeout_secs),
        "--prometheus-host", cfg.prometheus_host,
        "--prometheus-port", str(cfg.prometheus_port),
        "--log-level", cfg.log_level,
    ]  # fmt: skip
    if cfg.policy == "manual":
        cmd += ["--assignment-mode", cfg.assignment_mode, "--max-idle-secs", str(cfg.max_idle_secs)]
    if cfg.disable_health_check:
        cmd.append("--disable-health-check")
    if cfg.disable_retries:
        cmd.append("--disable-retries")
    if cfg.disable_circuit_breaker:
        cmd.append("--disable-circuit-breaker")
    if cfg.rate_limit_tokens_per_second is not None:
        cmd += ["--rate-limit-tokens-per-second", str(cfg.rate_limit_tokens_per_second)]
    if cfg.api_key is not None:
        cmd += ["--api-key", cfg.api_key.get_secret_value()]
    if cfg.service_discovery:
        cmd += ["--service-discovery", "--selector", *(f"{k}={v}" for k, v in cfg.selector.items())]
        cmd += ["--service-discovery-port", str(cfg.service_discovery_port)]
        if cfg.service_discovery_namespace is not None:
            cmd += ["--service-discovery-namespace", cfg.service_discovery_namespace]
    if cfg.log_dir is not None:
        cmd += ["--log-dir", str(cfg.log_dir)]
    return cmd


def _number(value: float) -> str:
    # `repr` keeps full precision and never uses exponent notation for the ranges validated in RouterConfig.
    return repr(float(value))
