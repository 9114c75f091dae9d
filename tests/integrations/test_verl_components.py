"""verl's adapters (per-sample, coalescing, batch) put each `component_keys` reward component in its own
column, from a real gateway whose composite gives them (verl's GDPO reading them: test_verl_gdpo.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardfleet.services.integrations import verl_batch, verl_reward
from tests.support.gateway import Gateway, start_gateway

KEYS = ["exact_match", "format_check"]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    combo = {"components": [{"fn": "exact_match"}, {"fn": "format_check", "weight": 0.5}]}
    gw = start_gateway(
        Path(tmp_path_factory.mktemp("verl_components")), {"composites": {"combo": combo}}, None
    )
    try:
        yield gw
    finally:
        gw.proc.stop()


def test_every_mode_gives_the_component_columns(gateway: Gateway) -> None:
    common = {"gateway_url": gateway.url, "reward_fn": "combo", "component_keys": KEYS}
    sync = verl_reward.compute_score_sync("d", "<think>a</think> 4", "4", {}, **common)
    assert (sync["exact_match"], sync["format_check"], sync["score"]) == (0.0, 1.0, 0.5)

    async def per_sample() -> dict[str, object]:
        try:
            return await verl_batch.compute_score("d", "4", "4", {}, **common)
        finally:
            await verl_batch.aclose()

    coalesced = asyncio.run(per_sample())
    assert (coalesced["exact_match"], coalesced["format_check"]) == (1.0, 0.0)
    batch = verl_batch.compute_score_batch(["d", "d"], ["4", "<think>x</think> 4"], ["4", "5"], **common)
    assert [(row["exact_match"], row["format_check"]) for row in batch] == [(1.0, 0.0), (0.0, 1.0)]
    with pytest.raises(verl_reward.RewardFunctionFailed, match="no reward component 'absent'"):
        verl_reward.compute_score_sync("d", "4", "4", {}, **{**common, "component_keys": ["absent"]})
