"""NeMo Gym 0.4.0's recorded rows, read at test time from its wheel in `.venv/trainer-src/` (.ci/setup
downloads it; nothing of it is committed): `resources_servers/<server>/data/example_rollouts.jsonl`."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path
from typing import Any

VERSION = "0.4.0"
WHEEL_DIR = Path(sys.prefix) / "trainer-src"


def wheel_path() -> Path:
    found = sorted(WHEEL_DIR.glob(f"nemo_gym-{VERSION}-*.whl"))
    if not found:
        raise FileNotFoundError(
            f"no NeMo Gym {VERSION} wheel in {WHEEL_DIR}: run .ci/setup (pip download --no-deps "
            f"nemo-gym=={VERSION} --python-version 3.13 --only-binary=:all: -d {WHEEL_DIR})"
        )
    return found[0]


def rollouts(server: str) -> list[dict[str, Any]]:
    """Every recorded row of one resources server's example rollouts."""
    with zipfile.ZipFile(wheel_path()) as zf:
        text = zf.read(f"resources_servers/{server}/data/example_rollouts.jsonl").decode()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def output_text(row: dict[str, Any]) -> str:
    """What NeMo Gym's instruction_following / ifbench servers check: the last output item's first text."""
    output = row["response"]["output"]
    content = output[-1].get("content") if output else None
    return content[0]["text"] if content else ""
