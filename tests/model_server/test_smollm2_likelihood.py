"""The `likelihood` built-in on real weights (SmolLM2-135M-Instruct on the CPU model server): after the same
reasoning, the right reference is more likely than a wrong one on most of a small labelled set
(`tests/reward_fns/data/likelihood_cases.jsonl`; `bench/likelihood_ranking.py` prints the rates)."""

from __future__ import annotations

import pytest

from bench.likelihood_ranking import ranking, smollm2_tokenizer
from tests.support.model_server import RunningServer

pytestmark = pytest.mark.timeout(900)


async def test_the_right_reference_ranks_above_a_wrong_one(smollm2: RunningServer) -> None:
    rate, right, wrong, _ = await ranking(
        smollm2.url.removeprefix("http://"), smollm2_tokenizer(), "mean_prob", "none"
    )
    assert rate >= 0.75, (rate, right, wrong)
    assert right > wrong
