"""The embedded default fleet's `judge` on real weights (SmolLM2-135M-Instruct, CPU model server) carries
signal: on a fixed subset of the labelled reference-answer judgments it is right at least 80% of the time,
including the cases where the model itself is asked (which number is the final answer; free text the rule
cannot settle). `bench/judge_accuracy.py` measures the whole set and the cost; this is the correctness check.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
import yaml

from bench.harness.judge_cases import JudgeCase, judge_cases, small_subset
from bench.harness.processes import REPO_ROOT
from rewardfleet.reward_fns import judge
from rewardfleet.reward_fns.judging.answer_match import decide
from tests.support.model_server import RunningServer

pytestmark = pytest.mark.timeout(900)


def _default_judge_kwargs() -> dict[str, Any]:
    config = yaml.safe_load((REPO_ROOT / "services" / "fleet" / "default.yaml").read_text())
    return dict(config["gateway"]["functions"]["judge"]["reward_kwargs"])


def _cases() -> list[JudgeCase]:
    """The 12-case subset plus every labelled case the rule hands to the model."""
    asked = [c for c in judge_cases() if decide(c.response, c.reference).decision.startswith("ask")]
    return small_subset() + asked


async def test_the_default_judge_is_right_on_at_least_80_percent(smollm2: RunningServer) -> None:
    kwargs = {**_default_judge_kwargs(), "timeout_s": 600}
    address = smollm2.url.removeprefix("http://")
    cases = _cases()
    right, sources = 0, []
    async with aiohttp.ClientSession() as session:
        for case in cases:
            result = await judge.compute_score(
                "x", case.response, case.reference, {"question": case.problem},
                router_addresses={"judge": address}, http_client=session, **kwargs,
            )  # fmt: skip
            right += (result["score"] >= 0.5) == case.correct
            sources.append(result["judge_verdict_source"])
    assert any(s != "rule" for s in sources)  # the model was asked, not only the rule
    assert right / len(cases) >= 0.8, f"{right}/{len(cases)} right; sources {sources}"
