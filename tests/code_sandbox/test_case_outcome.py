"""The host side of one case: its verdict comes only from what the host observes of the process (the bytes on
its stdout, capped at `max_output_bytes` with memory bounded; its exit status; the host's deadline). The
sandboxed command is swapped for a plain process that misbehaves, to exercise exactly that reading code."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from rewardfleet.reward_fns._sandbox.bubblewrap import BubblewrapRun
from rewardfleet.reward_fns._sandbox.settings import SandboxSettings

JOB = {"solution": "", "fn_name": None, "timeout_s": 0.5, "input": "1"}


class _Scripted(BubblewrapRun):
    def __init__(self, script: str) -> None:
        super().__init__(SandboxSettings(max_output_bytes=1024), slot=900)
        self._script = script

    def command(self) -> list[str]:
        # Says it started, as the runner does before it loads the program.
        return [sys.executable, "-I", "-c", "import os; os.write(1, b'\\x06'); " + self._script]


@pytest.mark.parametrize(
    ("script", "call_based", "outcome"),
    [
        ("import sys; sys.stdout.write('x' * 50_000_000)", False, {"verdict": "output_limit"}),
        ("import sys; sys.stdin.read(); print('not json')", True, {"verdict": "error"}),
        ("import sys; sys.stdin.read(); print('{\"i\": 7}')", True, {"verdict": "ok", "output": {"i": 7}}),
        ("import sys; sys.stdin.read(); print('anything')", False, {"verdict": "ok", "output": "anything\n"}),
        ("import os; os._exit(3)", False, {"verdict": "compile_error"}),
        ("import os; os._exit(1)", False, {"verdict": "error"}),
        ("import os; print('right'); os._exit(7)", False, {"verdict": "error"}),
        ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", False, {"verdict": "crashed"}),
        ("import os, signal; os.kill(os.getpid(), signal.SIGALRM)", False, {"verdict": "timeout"}),
        ("import time; time.sleep(30)", False, {"verdict": "timeout"}),  # a program past its case timeout
    ],
)
async def test_a_case_is_judged_from_outside(script: str, call_based: bool, outcome: dict[str, Any]) -> None:
    run = _Scripted(script)
    try:
        assert await run.run_case(JOB, call_based, 1.5) == outcome
    finally:
        await run.close()


async def test_a_sandbox_that_never_started_is_a_typed_error() -> None:
    class _NoStart(BubblewrapRun):
        def command(self) -> list[str]:
            script = "import sys; sys.stderr.write('bwrap: no namespaces'); exit(1)"
            return [sys.executable, "-I", "-c", script]

    from rewardfleet.reward_fns._sandbox.errors import SandboxUnavailable

    run = _NoStart(SandboxSettings(), slot=900)
    with pytest.raises(SandboxUnavailable, match="no namespaces"):
        await run.run_case(JOB, False, 1.5)
