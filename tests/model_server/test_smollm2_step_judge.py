"""`step_judge` on the real SmolLM2-135M-Instruct judge (the session's `smollm2` server): the constrained
verdict always parses and names an existing step. Only deterministic truths are asserted: a 135 M judge's
opinion of which step is wrong is not one of them."""

from __future__ import annotations

import asyncio
import re

import aiohttp
import pytest

from rewardfleet.reward_fns import step_judge
from tests.support.model_server import RunningServer

pytestmark = pytest.mark.timeout(900)

SAMPLES = [  # (question, reference, solution): steps separated by blank lines
    ("What is (2 + 3) * 4?", "20", "2 + 3 = 5.\n\n5 * 4 = 20.\n\nThe answer is 20."),
    ("What is (2 + 3) * 4?", "20", "2 + 3 = 6.\n\n6 * 4 = 24.\n\nThe answer is 24."),
    ("Solve x + 3 = 10.", "7", "Subtract 3 from both sides.\n\nx = 7."),
]


def test_constrained_step_verdicts_always_parse(smollm2: RunningServer) -> None:
    address = smollm2.url.removeprefix("http://")

    async def run() -> list[dict]:
        async with aiohttp.ClientSession() as session:
            calls = [
                step_judge.compute_score(
                    "math", solution, reference, {"question": question}, reward_router_address=address,
                    http_client=session, model="smollm2", max_tokens=48, reasoning_chars=60, timeout_s=600,
                )
                for question, reference, solution in SAMPLES
            ]  # fmt: skip
            return list(await asyncio.gather(*calls))  # concurrent: the server batches them

    results = asyncio.run(run())
    for (_, _, solution), r in zip(SAMPLES, results, strict=True):
        n = solution.count("\n\n") + 1
        assert r["steps"] == n and -1 <= r["first_wrong_step"] < n, r
        assert r["step_scores"] == step_judge.scores_from(r["first_wrong_step"], n)
        assert r["score"] == min(r["step_scores"])
        # the reply ends in the verdict line the grammar allows, and is read from it
        assert re.search(r"\\boxed\{(-1|[0-9])\}\s*$", r["judge_response"]), r
        assert r["judge_verdict_source"] == "boxed" and r["usage"]["completion_tokens"] <= 48
