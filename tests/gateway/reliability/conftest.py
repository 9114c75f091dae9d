"""Reliability-suite plumbing: real `rewardfleet gateway` processes on 127.0.0.1 over `fns/`, restartable on
the same port, plus the router suite's stand-in replicas and real sglang-router."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.router.conftest import start_replica, start_router  # noqa: F401 - fixtures used by the suite
from tests.support import ChildProcess, free_port, rewardfleet_cmd

FNS = Path(__file__).parent / "fns"


def report(name: str, **figures: Any) -> None:
    """Print one line of measured figures (`pytest -s` shows them; docs/reliability.md quotes them)."""
    print(
        f"\n{name} "
        + " ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items())
    )


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


@dataclass
class GatewayProc:
    tmp: Path
    config: dict[str, Any]
    port: int
    env: dict[str, str] = field(default_factory=dict)
    proc: ChildProcess | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, wait_path: str = "/health") -> GatewayProc:
        cfg = self.tmp / "gateway.yaml"
        cfg.write_text(yaml.safe_dump({"builtin_package": None, "reward_fns_dirs": [str(self.tmp / "fns")],
                                       **self.config}))  # fmt: skip
        self.starts += 1
        cmd = rewardfleet_cmd("gateway", "--port", str(self.port), "--config", str(cfg))
        self.proc = ChildProcess(cmd, self.tmp / f"gateway-{self.starts}.log", env=self.env)
        self.proc.wait_http(self.url + wait_path, timeout_s=90)
        return self

    def stop(self) -> int | None:
        return self.proc.stop(timeout_s=30) if self.proc is not None else None

    def logs(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.tmp.glob("gateway-*.log")))


@pytest.fixture
def gateway_factory(tmp_path: Path) -> Iterator[Any]:
    """`gateway_factory(config, env=None)` → a started `GatewayProc` over a copy of `fns/`."""
    shutil.copytree(FNS, tmp_path / "fns")
    with ExitStack() as stack:

        def make(
            config: dict[str, Any], env: dict[str, str] | None = None, start: bool = True
        ) -> GatewayProc:
            gw = GatewayProc(tmp_path, {"workers": 2, **config}, free_port(), dict(env or {}))
            stack.callback(gw.stop)
            return gw.start() if start else gw

        yield make
