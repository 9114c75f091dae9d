"""The client and the trainer-side adapters import without the server stack (no fastapi, no torch)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.harness.processes import REPO_ROOT

HEAVY = ("fastapi", "starlette", "uvicorn", "torch", "transformers", "rewardfleet.services.gateway")


@pytest.mark.parametrize(
    "module",
    [
        "rewardfleet.services.client",
        "rewardfleet.services.integrations.trl",
        "rewardfleet.services.integrations.verl_reward",
    ],
)
def test_imports_without_server_dependencies(module: str) -> None:
    code = f"import json, sys\nimport {module}\nprint(json.dumps(sorted(m for m in sys.modules)))\n"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=60, check=True
    )
    loaded = set(json.loads(out.stdout))
    assert module in loaded
    offenders = sorted(
        m for m in loaded if m.split(".")[0] in HEAVY or m.startswith("rewardfleet.services.gateway")
    )
    assert offenders == [], f"{module} pulled in {offenders}"
