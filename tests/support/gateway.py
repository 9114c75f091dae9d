"""A real `rewardfleet gateway` process on 127.0.0.1 for tests: its command, its config file, and a start that
waits for /health."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from bench.harness.processes import REPO_ROOT, ChildProcess, free_port, rewardfleet_cmd

REWARD_FILES = REPO_ROOT / "tests" / "gateway" / "reward_files"


def gateway_cmd(*args: str) -> list[str]:
    """`rewardfleet gateway ...` (`python -m rewardfleet.services.gateway` is the same: test_startup.py)."""
    return rewardfleet_cmd("gateway", *args)


@dataclass
class Gateway:
    proc: ChildProcess
    url: str
    port: int
    folder: Path

    def score(self, **body: Any) -> httpx.Response:
        return httpx.post(f"{self.url}/score", json=body, timeout=30)


def write_config(path: Path, config: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(config))
    return path


def start_gateway(tmp: Path, config: dict[str, Any], folder: Path | None, ready: bool = True) -> Gateway:
    port = free_port()
    cfg = write_config(tmp / "gateway.yaml", config)
    args = ["--port", str(port), "--config", str(cfg)]
    if folder is not None:
        args += ["--reward-fns", str(folder)]
    proc = ChildProcess(gateway_cmd(*args), tmp / "gateway.log")
    url = f"http://127.0.0.1:{port}"
    try:
        proc.wait_http(f"{url}/health", timeout_s=90)
    except BaseException:
        proc.stop()
        raise
    return Gateway(proc, url, port, folder or tmp)
