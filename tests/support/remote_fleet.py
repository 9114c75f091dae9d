"""One stand-in SGLang server per pool (judge, reward model, encoder), each behind a real sglang-router on
loopback: the remote reward functions' fleet."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.harness.processes import ChildProcess, free_port
from bench.harness.router_process import RouterProcess
from rewardfleet.router import RouterConfig


@dataclass
class Pool:
    name: str
    server_url: str  # the stand-in's own URL (its /standin/* routes)
    router: RouterProcess

    @property
    def address(self) -> str:
        return self.router.address

    def stats(self) -> dict[str, Any]:
        return dict(httpx.get(f"{self.server_url}/standin/stats", timeout=5).json())

    def served(self) -> dict[str, int]:
        return dict(self.stats()["served"])

    def control(self, **settings: Any) -> None:
        httpx.post(f"{self.server_url}/standin/control", json=settings, timeout=5).raise_for_status()


@dataclass
class Fleet:
    judge: Pool
    reward_model: Pool
    encoder: Pool

    @property
    def router_addresses(self) -> dict[str, str]:
        return {p.name: p.address for p in (self.judge, self.reward_model, self.encoder)}


def start_pool(stack: ExitStack, tmp: Path, name: str, mode: str, *extra: str) -> Pool:
    port = free_port()
    cmd = [sys.executable, "-m", "tests.sglang_standin", "--port", str(port), "--mode", mode, *extra]
    child = ChildProcess(cmd, tmp / f"standin-{name}.log")
    stack.callback(child.stop)
    child.wait_http(f"http://127.0.0.1:{port}/health", timeout_s=30)
    cfg = RouterConfig(
        port=free_port(),
        prometheus_port=free_port(),
        worker_urls=[f"http://127.0.0.1:{port}"],
        policy="round_robin",
        # Above the stand-in's /health time (>= 1 s, as SGLang's), or every check fails.
        health_check_interval_secs=2,
        health_check_timeout_secs=2,
        # Failure tests send 4xx/5xx on purpose; an open breaker would fail the tests after them.
        disable_circuit_breaker=True,
        retry_max_retries=2,
    )
    router = RouterProcess(cfg, tmp / f"router-{name}.log")
    stack.callback(router.stop)
    router.start().wait_ready(timeout_s=30)
    return Pool(name=name, server_url=f"http://127.0.0.1:{port}", router=router)
