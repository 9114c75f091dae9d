"""NeMo Gym 0.4.0's files, read from its wheel at test time (it needs Python >= 3.12, so it is not installed):
`.ci/setup` downloads it with `pip download --no-deps --python-version 3.13` into `.venv/trainer-src/`."""

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


def read_text(path: str) -> str:
    with zipfile.ZipFile(wheel_path()) as zf:
        return zf.read(path).decode()


def jsonl(path: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in read_text(path).splitlines() if line.strip()]


def prompt_text(row: dict[str, Any]) -> str:
    raw = row["responses_create_params"].get("input")
    if isinstance(raw, str):
        return raw
    return "\n".join(str(m.get("content")) for m in raw)
