"""A fleet on 127.0.0.1 for the end-to-end tests: a real redis-server, N real gateway processes with the
Redis state backend, and a real HAProxy balancing them round-robin (its config written here)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from bench.harness.haproxy import HAPROXY, haproxy_config
from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.harness.redis_server import RedisServer

FLEET_FNS = Path(__file__).parent / "fleet_fns"


@dataclass
class Fleet:
    tmp: Path
    redis: RedisServer | None
    config: dict[str, Any]
    gateways: list[ChildProcess] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)
    balancer: ChildProcess | None = None
    balancer_port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.balancer_port}"

    def start(self, replicas: int) -> Fleet:
        fns = self.tmp / "fns"
        if not fns.exists():
            shutil.copytree(FLEET_FNS, fns)
        config = {"builtin_package": None, "reward_fns_dirs": [str(fns)], "workers": 1, **self.config}
        if self.redis is not None:
            config["state_url"] = self.redis.url
        cfg = self.tmp / f"gateway-{len(self.gateways)}.yaml"
        cfg.write_text(yaml.safe_dump(config))
        for _ in range(replicas):
            port = free_port()
            index = len(self.gateways)
            cmd = rewardfleet_cmd("gateway", "--port", str(port), "--config", str(cfg))
            self.gateways.append(ChildProcess(cmd, self.tmp / f"gateway-{index}.log"))
            self.ports.append(port)
        for port, proc in zip(self.ports, self.gateways, strict=True):
            proc.wait_http(f"http://127.0.0.1:{port}/ready", timeout_s=120)
        self.balancer_port = free_port()
        (self.tmp / "haproxy.cfg").write_text(haproxy_config(self.balancer_port, self.ports))
        self.balancer = ChildProcess(
            [HAPROXY, "-db", "-f", str(self.tmp / "haproxy.cfg")], self.tmp / "haproxy.log"
        )
        self.balancer.wait_http(f"{self.url}/health", timeout_s=30)
        return self

    def stop(self) -> None:
        if self.balancer is not None:
            self.balancer.stop()
        for proc in self.gateways:
            proc.stop(timeout_s=30)

    def metric(self, name: str) -> float:
        """A metric summed over every replica (each scraped directly, not through the balancer)."""
        total = 0.0
        for port in self.ports:
            text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
            for line in text.splitlines():
                if line.startswith(name) and not line.startswith("#"):
                    total += float(line.rsplit(" ", 1)[1])
        return total


def runs_by_uid(log_path: Path) -> dict[str, list[float]]:
    runs: dict[str, list[float]] = {}
    if log_path.exists():
        for line in log_path.read_text().splitlines():
            uid, stamp = line.rsplit(" ", 1)
            runs.setdefault(uid, []).append(float(stamp))
    return runs
