"""Reliability-suite helpers: restartable `rewardfleet gateway` processes on 127.0.0.1 over `fns/`, and the
figures the suite prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.harness.processes import REPO_ROOT, ChildProcess, rewardfleet_cmd

FNS = REPO_ROOT / "tests" / "gateway" / "reliability" / "fns"


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
