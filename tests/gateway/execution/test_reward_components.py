"""`reward_components` as a first-class result field: what a function returns under that key (bounded, typed
errors otherwise), and what composites fill in from their components."""

from __future__ import annotations

import math
from typing import Any

import pytest

from rewardfleet.services.gateway.composites.composites import make_composite
from rewardfleet.services.gateway.composites.config import CompositeSpec
from rewardfleet.services.gateway.core.registry import RewardFunction
from rewardfleet.services.gateway.execution.components import MAX_COMPONENTS, checked_components
from tests.gateway.units import async_function, sample, scorer


def returning(name: str, value: Any) -> RewardFunction:
    async def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any) -> Any:
        return value

    return async_function(name, compute_score)


def failing(name: str) -> RewardFunction:
    async def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any) -> Any:
        raise RuntimeError("down")

    return async_function(name, compute_score)


async def test_function_components_are_lifted_out_of_extra() -> None:
    fn = returning("multi", {"score": 2.0, "reward_components": {"correct": 1, "format": 1.0}, "note": "x"})
    result = await scorer().score(sample(), fn, "d")
    assert result.status == "ok" and result.score == 2.0
    assert result.reward_components == {"correct": 1.0, "format": 1.0}
    assert result.extra == {"note": "x"}  # the components are not repeated in extra
    plain = await scorer().score(sample(), returning("plain", 1.0), "d")
    assert plain.reward_components is None and "reward_components" in plain.model_dump()


@pytest.mark.parametrize(
    ("components", "needle"),
    [
        ({f"c{i}": 1.0 for i in range(MAX_COMPONENTS + 1)}, "at most 32"),
        ({"x" * 65: 1.0}, "is not 1-64 characters"),
        ({"bad name": 1.0}, "is not 1-64 characters"),
        ({"../etc": 1.0}, "is not 1-64 characters"),
        ({"": 1.0}, "is not 1-64 characters"),
        ({"nan": math.nan}, "not a finite number"),
        ({"inf": math.inf}, "not a finite number"),
        ({"text": "1.0"}, "not a number"),
        ({"flag": True}, "not a number"),
        ([["a", 1.0]], "must be a mapping"),
    ],
)
async def test_components_out_of_bounds_are_a_typed_error(components: Any, needle: str) -> None:
    fn = returning("hostile", {"score": 1.0, "reward_components": components})
    result = await scorer().score(sample(), fn, "d")
    assert result.status == "error" and result.score is None, result
    assert result.error is not None and result.error.type == "InvalidReturn"
    assert "ComponentError" in result.error.message and needle in result.error.message


def test_bounds_accept_the_edges() -> None:
    names = {("n" * 63) + str(i % 10) if i < 10 else f"a.b:c/d-{i}": float(i) for i in range(MAX_COMPONENTS)}
    assert checked_components(names) == names


def spec(**fields: Any) -> CompositeSpec:
    return CompositeSpec.model_validate(fields)


async def test_composite_fills_components_with_unweighted_scores() -> None:
    s = scorer()
    parts = [returning("accuracy", 1.0), returning("format", 0.5), returning("accuracy", 0.0)]
    combo = make_composite(
        "combo",
        spec(
            components=[{"fn": "accuracy", "weight": 2}, {"fn": "format"}, {"fn": "accuracy", "weight": 0.5}]
        ),
        None,
        parts,
        s,
    )
    result = await s.score(sample(), combo, "d")
    assert result.status == "ok" and result.score == 2.5
    assert result.reward_components == {"accuracy": 1.0, "format": 0.5, "accuracy_2": 0.0}


async def test_composite_components_under_error_policies() -> None:
    s = scorer()
    parts = [returning("a", 1.0), failing("b")]
    scored = make_composite(
        "scored",
        spec(components=[{"fn": "a"}, {"fn": "b"}], on_component_error="score", error_score=-1),
        None,
        parts,
        s,
    )
    result = await s.score(sample(), scored, "d")
    assert result.reward_components == {"a": 1.0, "b": -1.0}
    skipped = make_composite(
        "skipped", spec(components=[{"fn": "a"}, {"fn": "b"}], on_component_error="skip"), None, parts, s
    )
    assert (await s.score(sample(), skipped, "d")).reward_components == {"a": 1.0}
    failed = make_composite("failed", spec(components=[{"fn": "a"}, {"fn": "b"}]), None, parts, s)
    result = await s.score(sample(), failed, "d")
    assert result.status == "error" and result.reward_components is None


def test_composite_spec_bounds_the_component_count() -> None:
    with pytest.raises(ValueError, match="at most 32"):
        spec(components=[{"fn": f"f{i}"} for i in range(MAX_COMPONENTS + 1)])
