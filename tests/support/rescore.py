"""Re-scoring test helpers: a real `rewardfleet gateway` on 127.0.0.1 with the test reward functions of
tests/rescore/reward_files/, and `rewardfleet score` run as the user runs it (a child process)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.harness.processes import REPO_ROOT, ChildProcess, free_port, rewardfleet_cmd

REWARD_FILES = REPO_ROOT / "tests" / "rescore" / "reward_files"


@dataclass
class Gateway:
    proc: ChildProcess
    url: str
    outage_file: Path

    def metric(self, prefix: str) -> float:
        import httpx

        total = 0.0
        for line in httpx.get(f"{self.url}/metrics", timeout=10).text.splitlines():
            if line.startswith(prefix):
                total += float(line.rsplit(" ", 1)[1])
        return total


def start_gateway(tmp: Path, config: dict[str, Any]) -> Gateway:
    port = free_port()
    cfg = tmp / "gateway.yaml"
    cfg.write_text(yaml.safe_dump({"workers": 1, **config}))
    outage = tmp / "judge-outage"
    cmd = rewardfleet_cmd(
        "gateway", "--port", str(port), "--config", str(cfg), "--reward-fns", str(REWARD_FILES)
    )
    proc = ChildProcess(cmd, tmp / "gateway.log", env={"RESCORE_OUTAGE_FILE": str(outage)})
    url = f"http://127.0.0.1:{port}"
    try:
        proc.wait_http(f"{url}/ready", timeout_s=120)
    except BaseException:
        proc.stop()
        raise
    return Gateway(proc, url, outage)


def score_cmd(*args: str | Path) -> list[str]:
    return rewardfleet_cmd("score", *(str(a) for a in args), "--no-progress")


def run_score(*args: str | Path, timeout_s: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        score_cmd(*args), cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout_s, check=False
    )


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


__all__ = ["REWARD_FILES", "Gateway", "read_jsonl", "run_score", "score_cmd", "start_gateway", "write_jsonl"]
