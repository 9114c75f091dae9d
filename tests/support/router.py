"""Stand-in SGLang replicas and real sglang-router processes on loopback, as the router tests start them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.harness.processes import ChildProcess
from bench.harness.router_process import RouterProcess

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


def pid_exists(pid: int) -> bool:
    """True while `pid` is a live (not zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
