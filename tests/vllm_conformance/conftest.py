"""Servers for the vLLM conformance tests: the CPU model server on a tiny PRM, and vLLM's own protocol.

vLLM 0.33.0 is installed by .ci/setup into `.venv/vllm-0.33.0` (`pip install --no-deps --target`), outside
the venv's site-packages: verl and other packages probe for an importable `vllm` and change course when it
is there, so it must stay invisible to the test workers. Its classes run in a child interpreter whose
PYTHONPATH adds that directory (vllm_standin.py). Without the directory the tests skip, except under CI
(`CI=true`), where .ci/setup has installed it and a skip would hide a broken install: there they fail.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.harness.processes import REPO_ROOT, ChildProcess, free_port
from bench.harness.tiny_prm import build_tiny_qwen2_prm, step_tag_id
from tests.support.model_server import RunningServer, start_server
from tests.support.vllm import SERVED_NAME, VLLM_VERSION, vllm_dir


@pytest.fixture(scope="session")
def vllm_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("vllm-conformance-logs")


@pytest.fixture(scope="session")
def vllm_url(vllm_logs: Path) -> Iterator[str]:
    """vLLM's protocol classes behind HTTP (vllm_standin.py), in an interpreter that can import vllm."""
    path = vllm_dir()
    port = free_port()
    env = {"PYTHONPATH": os.pathsep.join([str(path), os.environ.get("PYTHONPATH", ""), str(REPO_ROOT)])}
    cmd = [
        sys.executable,
        "-m",
        "tests.vllm_conformance.vllm_standin",
        "--port",
        str(port),
        "--served-model-name",
        SERVED_NAME,
    ]
    proc = ChildProcess(cmd, vllm_logs / "vllm-standin.log", env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        proc.wait_http(f"{url}/ready", timeout_s=120)
        yield url
    finally:
        proc.stop()


@pytest.fixture(scope="session")
def vllm_facts(vllm_url: str) -> dict[str, Any]:
    facts = dict(httpx.get(f"{vllm_url}/facts", timeout=30).json())
    assert facts["version"] == VLLM_VERSION
    return facts


@pytest.fixture(scope="session")
def prm_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_qwen2_prm(tmp_path_factory.mktemp("vllm-prm") / "tiny-prm", seed=5)


@pytest.fixture(scope="session")
def tag_id(prm_path: Path) -> int:
    return step_tag_id(prm_path)


@pytest.fixture(scope="session")
def prm_server(prm_path: Path, tag_id: int, vllm_logs: Path) -> Iterator[RunningServer]:
    vllm_dir()  # no model server either when the tests cannot compare it with anything
    server = start_server(
        prm_path, vllm_logs, "--step-tag-id", str(tag_id), "--served-model-name", SERVED_NAME, name="prm"
    )
    yield server
    server.process.stop()
