"""Fixtures for router tests: stand-in SGLang replicas and real sglang-router processes on loopback."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from rewardfleet.router import RouterConfig
from tests.router.router_process import RouterProcess
from tests.support import ChildProcess, free_port

# Fast health checks so worker loss shows up within seconds. The timeout stays above the stand-in's /health
# time (>= 1 s, as SGLang's), or every check would fail.
FAST_HEALTH: dict[str, Any] = {
    "health_check_interval_secs": 2,
    "health_check_timeout_secs": 2,
    "health_failure_threshold": 1,
    "health_success_threshold": 1,
}


@dataclass
class Replica:
    """One stand-in SGLang server process."""

    child: ChildProcess
    port: int
    replica_id: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stats(self) -> dict[str, Any]:
        return httpx.get(f"{self.url}/standin/stats", timeout=5).json()

    def control(self, **settings: Any) -> dict[str, Any]:
        return httpx.post(f"{self.url}/standin/control", json=settings, timeout=5).json()


ReplicaFactory = Callable[..., Replica]
RouterFactory = Callable[..., RouterProcess]


@pytest.fixture
def start_replica(tmp_path: Path) -> Iterator[ReplicaFactory]:
    """Start a stand-in replica: `start_replica("judge", "a", "--canned-text", "...")`."""
    with ExitStack() as stack:

        def start(mode: str, replica_id: str, *extra: str) -> Replica:
            port = free_port()
            cmd = [sys.executable, "-m", "tests.sglang_standin", "--port", str(port), "--mode", mode]
            cmd += ["--replica-id", replica_id, *extra]
            child = ChildProcess(cmd, tmp_path / f"standin-{replica_id}-{port}.log")
            stack.callback(child.stop)
            child.wait_http(f"http://127.0.0.1:{port}/health", timeout_s=30)
            return Replica(child, port, replica_id)

        yield start


@pytest.fixture
def start_router(tmp_path: Path) -> Iterator[RouterFactory]:
    """Start a real sglang-router over `worker_urls` and wait until they are all healthy."""
    routers: list[RouterProcess] = []

    def start(worker_urls: list[str], wait: bool = True, **settings: Any) -> RouterProcess:
        settings = {"policy": "round_robin", **FAST_HEALTH, **settings}
        cfg = RouterConfig(port=free_port(), prometheus_port=free_port(), worker_urls=worker_urls, **settings)
        proc = RouterProcess(cfg, tmp_path / f"router-{cfg.port}.log")
        routers.append(proc)
        proc.start()
        if wait:
            proc.wait_ready(timeout_s=30)
        return proc

    yield start
    for proc in routers:
        proc.stop()


def pid_exists(pid: int) -> bool:
    """True while `pid` is a live (not zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
