"""A full queue answers 503 + Retry-After; the CLI stays light and fails fast on bad settings."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.harness.processes import REPO_ROOT, free_port, rewardfleet_cmd
from tests.support.model_server import RunningServer, start_server


@pytest.fixture(scope="module")
def tiny_queue_server(tiny_models: dict[str, Path], log_dir: Path) -> Iterator[RunningServer]:
    server = start_server(
        tiny_models["llama_rm"],
        log_dir,
        "--max-batch-size",
        "1",
        "--max-queue",
        "1",
        "--batch-wait-timeout-s",
        "0",
        "--retry-after-s",
        "3",
        name="queue",
    )
    yield server
    server.process.stop()


def test_full_queue_is_503_with_retry_after(tiny_queue_server: RunningServer) -> None:
    text = "a long input to keep the forward busy " * 12

    async def burst() -> list[httpx.Response]:
        async with httpx.AsyncClient(
            base_url=tiny_queue_server.url, timeout=60, limits=httpx.Limits(max_connections=64)
        ) as c:
            return await asyncio.gather(*(c.post("/classify", json={"text": text}) for _ in range(48)))

    responses = asyncio.run(burst())
    codes = [r.status_code for r in responses]
    assert 200 in codes and 503 in codes, codes
    assert set(codes) <= {200, 503}
    rejected = next(r for r in responses if r.status_code == 503)
    assert rejected.headers["retry-after"] == "3"
    assert "queue is full" in rejected.json()["error"]["message"]
    with httpx.Client(base_url=tiny_queue_server.url) as c:
        metrics = c.get("/metrics").text
        v1 = c.get("/health").status_code
    assert 'rewardfleet_model_server_queue_rejections_total{operation="score"}' in metrics
    assert v1 == 200  # a full queue is back-pressure, not ill health


def test_llama_reward_model_scores_match_direct_forward(
    tiny_queue_server: RunningServer, tiny_models: dict[str, Path]
) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    path = tiny_models["llama_rm"]
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    with torch.inference_mode():
        want = float(model(**tok("is this right?", return_tensors="pt")).logits[0, 0])
    with httpx.Client(base_url=tiny_queue_server.url) as c:
        got = c.post("/classify", json={"text": "is this right?"}).json()["embedding"][0]
    assert got == pytest.approx(want, abs=1e-4)


def test_cli_module_does_not_import_torch() -> None:
    code = (
        "import sys, rewardfleet.services.cli, rewardfleet.services.cli_app; "
        "import rewardfleet.services.model_server.cli; "
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, check=True
    )
    assert out.stdout.strip() == "False False"


def test_cli_help_lists_sglang_flag_names() -> None:
    out = subprocess.run(
        rewardfleet_cmd("serve-model", "--help"),
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={"COLUMNS": "200", "PATH": ""},
        check=True,
    )
    for flag in (
        "--model-path",
        "--port",
        "--host",
        "--served-model-name",
        "--is-embedding",
        "--max-batch-size",
        "--batch-wait-timeout-s",
        "--max-queue",
        "--context-length",
    ):
        assert flag in out.stdout, flag


def test_cli_refuses_a_missing_model_dir(tmp_path: Path) -> None:
    out = subprocess.run(
        rewardfleet_cmd("serve-model", "--model-path", str(tmp_path / "nope"), "--port", str(free_port())),
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
    )
    assert out.returncode == 2 and "is neither a directory nor a .gguf file" in out.stderr


def test_causal_lm_with_is_embedding_exits_nonzero(tiny_models: dict[str, Path]) -> None:
    out = subprocess.run(
        rewardfleet_cmd(
            "serve-model",
            "--model-path",
            str(tiny_models["qwen2_lm"]),
            "--port",
            str(free_port()),
            "--is-embedding",
        ),
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
    )
    assert out.returncode == 1 and "is a causal LM" in out.stdout + out.stderr
