"""The judges' keywords under verl's own loader (tests/integrations/verl_judge_cases.py), in an interpreter
with verl's antlr4 4.9 first on the path, as test_verl_trainer_code.py runs verl's cases."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.integrations.test_verl_trainer_code import ANTLR_FOR_VERL
from tests.support import REPO_ROOT


def test_verl_judge_cases_in_their_own_interpreter() -> None:
    if not (ANTLR_FOR_VERL / "antlr4").is_dir():
        pytest.fail(f"no antlr4 4.9 for verl in {ANTLR_FOR_VERL}: run .ci/setup")
    pythonpath = os.pathsep.join(p for p in (str(ANTLR_FOR_VERL), os.environ.get("PYTHONPATH")) if p)
    cases = "tests/integrations/verl_judge_cases.py"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", cases, "-q", "-n", "0", "-p", "no:cacheprovider"],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": pythonpath},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-3000:]
    assert re.search(r"^3 passed", proc.stdout, re.M), proc.stdout[-3000:]  # every case ran, none skipped
