"""ruff (lint + format), mypy and the import contracts (import-linter: `[tool.importlinter]` in
pyproject.toml) stay clean on the repository; part of the test command, so CI enforces it."""

from __future__ import annotations

import subprocess

import pytest

from tests.support import REPO_ROOT, VENV_BIN


@pytest.mark.parametrize(
    "cmd",
    [["ruff", "check", "."], ["ruff", "format", "--check", "."], ["mypy"], ["lint-imports", "--no-cache"]],
    ids=["ruff-check", "ruff-format", "mypy", "import-contracts"],
)
def test_clean(cmd: list[str]) -> None:
    proc = subprocess.run(
        [str(VENV_BIN / cmd[0]), *cmd[1:]], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
