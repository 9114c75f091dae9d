"""Gateways for the environment tests: real `rewardfleet gateway` processes on 127.0.0.1, serving the built-in
environments and the test ones of `envs/`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd

ENVS = Path(__file__).parent / "envs"


@contextmanager
def gateway(tmp: Path, config: dict[str, Any], *args: str, name: str = "gateway") -> Iterator[str]:
    """A gateway with `config` (plus the test environments, reaped every 0.2 s); yields its URL."""
    port = free_port()
    config = {
        "builtin_package": None,  # no reward function is needed: a faster start
        **config,
        "environments": {"folders": [str(ENVS)], "reap_interval_s": 0.2, **config.get("environments", {})},
    }
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = ChildProcess(
        rewardfleet_cmd("gateway", "--port", str(port), "--config", str(path), *args), tmp / f"{name}.log"
    )
    url = f"http://127.0.0.1:{port}"
    try:
        proc.wait_http(f"{url}/health", timeout_s=120)  # /ready needs a key when there are tenants
        yield url
    finally:
        proc.stop()


def metric(url: str, name: str, key: str | None = None, **labels: str) -> float:
    """The value of one series of the gateway's /metrics (0 when absent); `key`: an API key to send."""
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    headers = {"authorization": f"Bearer {key}"} if key else None
    answer = httpx.get(f"{url}/metrics", headers=headers, timeout=10)
    answer.raise_for_status()
    for line in answer.text.splitlines():
        if line.startswith(f"{name}{{") and line.split("}")[0].split("{")[1] == want:
            return float(line.rsplit(" ", 1)[1])
    return 0.0
