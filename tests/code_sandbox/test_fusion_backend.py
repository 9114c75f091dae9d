"""The Sandbox Fusion backend: verl's request shape (checked against the `sandbox-fusion` client's models
and verl's own sandbox_fusion source), the same scores as the bubblewrap backend on the same cases, and typed
errors for the service's failures."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rewardfleet.reward_fns import code
from rewardfleet.reward_fns._sandbox.errors import SandboxFusionError
from rewardfleet.reward_fns._sandbox.settings import SandboxSettings
from tests.code_sandbox.fusion_standin import serving
from tests.reward_fns import verl_reference
from tests.reward_fns.code_cases import cases

CASES = cases()[::2]
FAST = {"case_timeout_s": 2.0, "retry_case_timeout_s": 2.0, "slots": 2}


async def _score(completion: str, truth: Any, **kwargs: Any) -> float:
    result = await code.compute_score(
        data_source="apps", solution_str=completion, ground_truth=truth, **kwargs
    )
    return float(result["score"])


async def test_same_scores_on_both_backends() -> None:
    async with serving(SandboxSettings()) as (url, requests, _):
        local = await asyncio.gather(*(_score(c, t, sandbox=FAST) for c, t in CASES))
        remote = await asyncio.gather(*(_score(c, t, sandbox=FAST, sandbox_fusion_url=url) for c, t in CASES))
    assert remote == local
    assert {0.0, 1.0} <= set(local)
    # Our requests carry exactly the keys verl's sandbox_fusion client sends.
    verl_source = (verl_reference.reward_score_dir() / "sandbox_fusion" / "utils.py").read_text()
    for key in requests[0]:
        assert f'"{key}"' in verl_source, key
    assert requests[0]["language"] == "python" and requests[0]["memory_limit_MB"] == 1024


@pytest.mark.parametrize(
    ("fault", "error"),
    [({"http_status": 500}, SandboxFusionError), ({"sandbox_error": True}, SandboxFusionError)],
)
async def test_service_failures_are_typed(fault: dict[str, Any], error: type[Exception]) -> None:
    async with serving(SandboxSettings(), fault) as (url, _, _):
        with pytest.raises(error):
            await _score("print(1)", {"inputs": ["1"], "outputs": ["1"]}, sandbox_fusion_url=url)


async def test_run_timeout_is_a_timeout_verdict() -> None:
    async with serving(SandboxSettings()) as (url, requests, _):
        # The runner's own timer is longer than the run_timeout we ask for (what is left of the sample).
        result = await code.compute_score(
            data_source="apps",
            solution_str="while True: pass",
            ground_truth={"inputs": ["1"], "outputs": ["1"]},
            sandbox_fusion_url=url,
            sandbox={"case_timeout_s": 30, "sample_timeout_s": 2.0},
        )
    assert result == {"score": 0.0, "all_passed": False, "verdicts": ["timeout"]}
    assert requests[0]["run_timeout"] <= 2.0


async def test_unreachable_service_is_typed() -> None:
    async with serving(SandboxSettings()) as (url, _, _):
        pass  # closed: nothing listens there any more
    with pytest.raises(SandboxFusionError, match="unreachable"):
        await _score("print(1)", {"inputs": ["1"], "outputs": ["1"]}, sandbox_fusion_url=url)
