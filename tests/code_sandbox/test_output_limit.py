"""The gateway side reads a sandbox's stdout line by line with a bound: a flood (which the harness itself
never writes, and the program cannot reach) ends in SandboxOutputTooLarge, with memory bounded, and a
harness that dies or writes garbage is SandboxCrashed. The sandboxed command is swapped for a plain
process that misbehaves, to exercise exactly that reading code."""

from __future__ import annotations

import sys

import pytest

from rewardfleet.reward_fns._sandbox.bubblewrap import BubblewrapRun
from rewardfleet.reward_fns._sandbox.errors import SandboxCrashed, SandboxOutputTooLarge
from rewardfleet.reward_fns._sandbox.settings import SandboxSettings

JOB = {"solution": "", "fn_name": None, "inputs": ["1"]}


class _Scripted(BubblewrapRun):
    def __init__(self, script: str) -> None:
        super().__init__(SandboxSettings(max_output_bytes=1024), JOB, slot=900)
        self._script = script

    def command(self) -> list[str]:
        return [sys.executable, "-I", "-c", self._script]


@pytest.mark.parametrize(
    ("script", "error", "match"),
    [
        ("import sys; sys.stdout.write('x' * 50_000_000)", SandboxOutputTooLarge, "over"),
        ("import sys; sys.stdin.readline(); print('not json')", SandboxCrashed, "not JSON"),
        ("import sys; sys.stdin.readline(); print('[1]')", SandboxCrashed, "wrote"),
        ("import os; os._exit(3)", SandboxCrashed, "exit status 3"),
    ],
)
async def test_misbehaving_sandbox_output_is_typed(script: str, error: type[Exception], match: str) -> None:
    run = _Scripted(script)
    try:
        with pytest.raises(error, match=match):
            await run.first_pass()
    finally:
        await run.close()
