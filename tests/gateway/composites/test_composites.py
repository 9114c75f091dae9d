"""Composites in-process over the real `Scorer`: weights, the gate, the error policies, and that components
are scored with the request itself (every field), not a copy rebuilt from verl's four arguments."""

from __future__ import annotations

from typing import Any

from rewardfleet.services.gateway.composites.composites import make_composite, synthetic_function
from rewardfleet.services.gateway.composites.config import CompositeSpec
from rewardfleet.services.gateway.config import FunctionConfig
from rewardfleet.services.gateway.core.registry import RewardFunction
from rewardfleet.services.gateway.schemas import ScoreRequest
from tests.gateway.units import async_function, sample, scorer


def constant(name: str, score: float) -> RewardFunction:
    async def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any) -> float:
        return score

    return async_function(name, compute_score)


def failing(name: str) -> RewardFunction:
    async def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any) -> float:
        raise RuntimeError("judge down")

    return async_function(name, compute_score)


def spec(**fields: Any) -> CompositeSpec:
    return CompositeSpec.model_validate(fields)


async def test_weighted_sum_reports_each_component() -> None:
    s = scorer()
    parts = [constant("a", 1.0), constant("b", 0.5)]
    combo = make_composite(
        "combo", spec(components=[{"fn": "a", "weight": 0.25}, {"fn": "b", "weight": 2}]), None, parts, s
    )
    result = await s.score(sample(uid=1), combo, "d")
    assert result.status == "ok" and result.score == 0.25 * 1.0 + 2 * 0.5
    assert [(c["fn"], c["score"], c["weight"]) for c in result.extra["components"]] == [
        ("a", 1.0, 0.25),
        ("b", 0.5, 2.0),
    ]


async def test_components_get_the_real_request() -> None:
    seen: list[ScoreRequest] = []

    async def probe(request: ScoreRequest, label: str, config: FunctionConfig) -> float:
        seen.append(request)
        return 1.0

    component = synthetic_function("probe", probe, "test", "v1", 5.0, [])
    s = scorer()
    combo = make_composite("combo", spec(components=[{"fn": "probe"}]), None, [component], s)
    request = sample(uid="u1", reward_fn="combo", group_id="g", group_size=2, group_index=1, prompt="p")
    assert (await s.score(request, combo, "d")).score == 1.0
    (got,) = seen
    assert got is request  # reward_fn, group_id, group_size, group_index, prompt, uid: all of it


async def test_closed_gate_skips_the_components() -> None:
    s = scorer()
    combo = make_composite(
        "combo",
        spec(components=[{"fn": "a"}], gate={"fn": "g", "min_score": 0.5}, gate_closed_score=-1.0),
        constant("g", 0.0),
        [failing("a")],
        s,
    )
    result = await s.score(sample(), combo, "d")
    assert result.score == -1.0 and result.extra["gate"]["open"] is False and result.extra["components"] == []


async def test_error_policies() -> None:
    s = scorer()
    parts = [constant("a", 1.0), failing("b")]
    components = [{"fn": "a", "weight": 1}, {"fn": "b", "weight": 1}]
    strict = make_composite("strict", spec(components=components), None, parts, s)
    failed = await s.score(sample(), strict, "d")
    assert failed.status == "error" and failed.error is not None
    assert failed.error.type == "CompositeComponentFailed" and len(failed.extra["components"]) == 2
    skip = make_composite("skip", spec(components=components, on_component_error="skip"), None, parts, s)
    assert (await s.score(sample(), skip, "d")).score == 2.0  # renormalised onto the full weight
    score = make_composite(
        "score", spec(components=components, on_component_error="score", error_score=-1), None, parts, s
    )
    assert (await s.score(sample(), score, "d")).score == 0.0
