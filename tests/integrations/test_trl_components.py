"""One TRL reward function per reward component, against a real gateway whose composite gives the components:
each function returns its component, and the functions share one scoring of each batch."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rewardfleet.services.integrations.trl_components import make_component_reward_funcs
from tests.support.gateway import Gateway, start_gateway


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    config = {
        "workers": 1,
        "composites": {
            "combo": {"components": [{"fn": "exact_match"}, {"fn": "format_check", "weight": 0.5}]},
        },
    }
    gw = start_gateway(Path(tmp_path_factory.mktemp("trl_components")), config, None)
    try:
        yield gw
    finally:
        gw.proc.stop()


def calls(gw: Gateway, fn: str) -> float:
    text = httpx.get(f"{gw.url}/metrics", timeout=10).text
    found = re.search(
        rf'^rewardfleet_reward_fn_outcomes_total{{outcome="ok",reward_fn="{fn}"}} (\S+)$', text, re.M
    )
    return float(found.group(1)) if found else 0.0


def test_each_function_returns_its_component_from_one_scoring(gateway: Gateway) -> None:
    accuracy, fmt = make_component_reward_funcs(
        ["exact_match", "format_check"], gateway.url, reward_fn="combo"
    )
    assert (accuracy.__name__, fmt.__name__) == ("exact_match", "format_check")
    prompts = ["q1", "q2", "q3"]
    completions = ["<think>x</think> 4", "4", "<think>y</think> 5"]
    columns = {"ground_truth": ["<think>x</think> 4", "4", "4"]}

    async def step() -> tuple[list[float | None], list[float | None]]:
        try:
            return await asyncio.gather(  # TRL gathers async reward functions
                accuracy(prompts=prompts, completions=completions, **columns),
                fmt(prompts=prompts, completions=completions, **columns),
            )
        finally:
            await accuracy.aclose()  # type: ignore[attr-defined]

    before = calls(gateway, "combo")
    got_accuracy, got_format = asyncio.run(step())
    assert got_accuracy == [1.0, 1.0, 0.0]
    assert got_format == [1.0, 0.0, 1.0]
    assert calls(gateway, "combo") - before == 3  # one scoring of the batch for both functions


def test_a_missing_component_is_none(gateway: Gateway, caplog: pytest.LogCaptureFixture) -> None:
    (nothing,) = make_component_reward_funcs(["absent"], gateway.url, reward_fn="combo")

    async def step() -> list[float | None]:
        try:
            return await nothing(prompts=["q"], completions=["a"], ground_truth=["a"])
        finally:
            await nothing.aclose()  # type: ignore[attr-defined]

    assert asyncio.run(step()) == [None]
    assert "component 'absent' unavailable" in caplog.text
    with pytest.raises(ValueError, match="distinct"):
        make_component_reward_funcs(["a", "a"], gateway.url)
