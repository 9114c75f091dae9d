"""`rewardfleet serve-model` as a test starts it: a real CPU model server on a free loopback port."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.harness.waiting import eventually

SERVER_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


@dataclass
class RunningServer:
    process: ChildProcess
    url: str
    health_seen: list[int] = field(default_factory=list)

    def client(self, timeout_s: float = 30.0) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=timeout_s)


def start_server(model_path: Path, log_dir: Path, *args: str, name: str = "server") -> RunningServer:
    """`rewardfleet serve-model` on a free port; waits until /health is 200 and records what it saw first."""
    port = free_port()
    cmd = rewardfleet_cmd(
        "serve-model", "--model-path", str(model_path), "--port", str(port), "--torch-num-threads", "1", *args
    )
    proc = ChildProcess(cmd, log_dir / f"{name}-{port}.log", env=SERVER_ENV)
    server = RunningServer(proc, f"http://127.0.0.1:{port}")

    def healthy() -> bool:
        if proc.proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.proc.returncode}:\n{proc.log()[-4000:]}")
        status = httpx.get(server.url + "/health", timeout=2.0).status_code
        server.health_seen.append(status)
        return status == 200

    try:
        eventually(healthy, timeout_s=120, interval_s=0.05, what=f"{server.url} healthy",
                   retry_on=(httpx.HTTPError,), detail=lambda: proc.log()[-4000:])  # fmt: skip
    except BaseException:
        proc.stop()
        raise
    return server
