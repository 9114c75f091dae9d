"""Where the vLLM conformance tests find vLLM (installed by .ci/setup outside the venv's site-packages), and
the model name they serve."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.harness.processes import REPO_ROOT

VLLM_VERSION = "0.33.0"
VLLM_DIR = REPO_ROOT / ".venv" / f"vllm-{VLLM_VERSION}"
SERVED_NAME = "tiny-prm"


def vllm_dir() -> Path:
    if (VLLM_DIR / "vllm").is_dir():
        return VLLM_DIR
    why = f"vLLM {VLLM_VERSION} is not installed in {VLLM_DIR} (.ci/setup installs it)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(why + "; under CI these tests must run, not skip")
    pytest.skip(why)
