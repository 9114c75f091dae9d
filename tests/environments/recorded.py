"""NeMo Gym's recorded counter rollouts (`resources_servers/example_session_state_mgmt/data/`), read at test
time: from NeMo Gym 0.4.0's wheel (.ci/setup downloads it), else from the GitHub mirror at the pinned commit
(the two hold the same bytes). Nothing of them is committed here."""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.reward_fns.nemo_gym_rows import wheel_path

MIRROR = Path("/work/.mirror/NVIDIA-NeMo+Gym/repo")
PINNED = "07d6b0d07b22fcf530b4c211dae2ee23100428e4"
DATA = "resources_servers/example_session_state_mgmt/data"


def _read(name: str) -> str:
    try:
        with zipfile.ZipFile(wheel_path()) as zf:
            return zf.read(f"{DATA}/{name}").decode()
    except (FileNotFoundError, KeyError):
        pass
    if not MIRROR.is_dir():
        pytest.skip(f"neither NeMo Gym 0.4.0's wheel (.ci/setup) nor the mirror {MIRROR} holds {DATA}/{name}")
    shown = subprocess.run(
        ["git", "-C", str(MIRROR), "show", f"{PINNED}:{DATA}/{name}"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    return shown.stdout.decode()


def _rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _read(name).splitlines() if line.strip()]


def _prompt(row: dict[str, Any]) -> str:
    return str(row["responses_create_params"]["input"][0]["content"])


def counter_rollouts() -> list[dict[str, Any]]:
    """Each recorded rollout with the task it ran (`initial_count`, `expected_count`: the rollouts file keeps
    only the request and response, so the task comes from example.jsonl, matched by the prompt)."""
    tasks = {_prompt(row): row for row in _rows("example.jsonl")}
    out = []
    for rollout in _rows("example_rollouts.jsonl"):
        task = tasks[_prompt(rollout)]
        out.append(
            {**rollout, "initial_count": task["initial_count"], "expected_count": task["expected_count"]}
        )
    return out
