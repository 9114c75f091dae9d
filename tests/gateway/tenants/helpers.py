"""A real gateway process (`rewardfleet gateway --config`, uvicorn) configured with tenants."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import yaml

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.harness.tenants import ADMIN, KEY_A, KEY_B

FNS = Path(__file__).parent / "fns"
KEY_B2 = "tenant-b-key2-0123456789"
KEY_C = "tenant-c-key-0123456789"
KEY_D = "tenant-d-key-0123456789"
T = TypeVar("T")


def tenant_config(tmp: Path, **over: Any) -> dict[str, Any]:
    """Tenants a (train), b (keys file, eval), ops (admin); a fleet pool `judge` priced $1 a call."""
    keys_b = tmp / "b.keys"
    keys_b.write_text(f"# tenant b\n{KEY_B}\n")
    config: dict[str, Any] = {
        "builtin_package": None,
        "reward_fns_dirs": [str(FNS)],
        "routers": {"judge": "127.0.0.1:9"},
        "functions": {"slot": {"max_concurrency": 1}},
        "pool_prices": {
            "judge": {"input_usd_per_million_tokens": 1000.0, "output_usd_per_million_tokens": 0.0}
        },
        "tenancy": {"max_run_labels": 2},
        "tenants": {
            "a": {"api_keys": [KEY_A], "priority": "train", "quotas": {"usd_total": 2.5}},
            "b": {"api_keys_file": str(keys_b), "priority": "eval", "quotas": {"requests_per_minute": 1000}},
            "ops": {"api_keys": [ADMIN], "admin": True},
        },
    }
    config.update(over)
    return config


@contextmanager
def gateway(
    tmp: Path, config: dict[str, Any], state_url: str | None = None, name: str = "gw"
) -> Iterator[str]:
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    port = free_port()
    args = ["gateway", "--config", str(path), "--port", str(port), "--workers", "1"]
    if state_url:
        args += ["--state-url", state_url]
    proc = ChildProcess(rewardfleet_cmd(*args), tmp / f"{name}.log")
    try:
        base = f"http://127.0.0.1:{port}"
        proc.wait_http(base + "/health", timeout_s=120)
        yield base
    finally:
        proc.stop()


def sample(**over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "data_source": "x",
        "reward_fn": "echo",
        "solution_str": "abcd",
        "ground_truth": "",
    }
    body.update(over)
    return body


def same_minute(attempt: Callable[[str], T], keys: Sequence[str]) -> T:
    """Run `attempt(key)` with each key in turn until one runs within one wall-clock minute and return its
    result. Per-minute quotas count fixed wall-clock windows (the gateway reads the same clock as this test),
    so a count is exact only within one window: an attempt that straddles a boundary is run again with a
    fresh tenant's key, and since an attempt lasts well under a minute, the second one cannot straddle too."""
    for key in keys:
        before = time.time() // 60.0
        result = attempt(key)
        if time.time() // 60.0 == before:
            return result
    raise AssertionError(f"every attempt straddled a minute boundary ({len(keys)} keys)")
