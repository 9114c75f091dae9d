"""The `code` built-in scores exactly as verl 0.9.1's prime_code (what `default_compute_score` runs for
codecontests/apps/codeforces/taco without a sandbox URL), on generated programs and test cases.

verl's prime_code runs the programs unsandboxed in forked children of this test process: acceptable here
only, to get the reference. Ours run in bubblewrap.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from rewardfleet.reward_fns import code
from tests.reward_fns import verl_reference
from tests.reward_fns.code_cases import cases

CASES = cases()


@pytest.fixture(scope="module")
def verl_scores() -> list[float]:
    dispatch = verl_reference.default_compute_score()
    scores = []
    for completion, truth in CASES:
        # verl mutates a dict ground truth while scoring; give it a copy.
        scores.append(dispatch("apps", completion, copy.deepcopy(truth)))
    return scores


async def _ours(completion: str, truth: Any) -> float:
    result = await code.compute_score(data_source="apps", solution_str=completion, ground_truth=truth)
    score = result["score"]
    assert type(score) is float
    return score


def test_enough_generated_cases() -> None:
    assert len(CASES) >= 45


async def test_code_matches_verl_prime_code(verl_scores: list[float]) -> None:
    ours = await asyncio.gather(*(_ours(c, t) for c, t in CASES))
    mismatches = [
        (completion, truth, expected, got)
        for (completion, truth), expected, got in zip(CASES, verl_scores, ours, strict=True)
        if expected != got
    ]
    for mismatch in mismatches:
        print(mismatch)
    assert mismatches == []
    # The cases are not trivially all-right or all-wrong.
    assert {0.0, 1.0} <= set(verl_scores) and any(0 < s < 1 for s in verl_scores)
