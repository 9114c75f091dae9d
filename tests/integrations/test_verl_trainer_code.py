"""verl 0.9.1's own code against the gateway (tests/integrations/verl_cases.py), in an interpreter of its own.

Why another interpreter: verl's config stack (hydra-core, omegaconf) pins antlr4-python3-runtime 4.9.*, and
the gateway's math-verify needs 4.13.2 (pyproject.toml). Both cannot be imported in one process, so .ci/setup
keeps 4.13.2 in the venv and puts 4.9.3 in `.venv/antlr4-4.9`, which only this run puts first on PYTHONPATH
(Ray's reward-loop workers inherit it).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from bench.harness.processes import REPO_ROOT

ANTLR_FOR_VERL = REPO_ROOT / ".venv" / "antlr4-4.9"


def run_verl_cases(cases: str, at_least: int = 1) -> None:
    """Run the pytest module `cases` (a path from the repo root) in an interpreter with verl's antlr4 first on
    the path, in one process (the cases share verl's Ray), and check that every case in it passed."""
    if not (ANTLR_FOR_VERL / "antlr4").is_dir():
        pytest.fail(f"no antlr4 4.9 for verl in {ANTLR_FOR_VERL}: run .ci/setup")
    pythonpath = os.pathsep.join(p for p in (str(ANTLR_FOR_VERL), os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", cases, "-q", "-n", "0", "-p", "no:cacheprovider"],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": pythonpath},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-3000:]
    # every case ran: none skipped, none deselected
    count = len(re.findall(r"^(?:async )?def test_", (REPO_ROOT / cases).read_text(), re.M))
    assert count >= at_least and re.search(rf"^{count} passed", proc.stdout, re.M), proc.stdout[-3000:]


def test_verl_cases_in_their_own_interpreter() -> None:
    run_verl_cases("tests/integrations/verl_cases.py", at_least=5)
