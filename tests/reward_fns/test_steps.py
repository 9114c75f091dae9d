"""reward_fns/judging/steps.py: the step split rules and the aggregates of step/turn scores."""

from __future__ import annotations

import math

import pytest

from rewardfleet.reward_fns.judging.steps import (
    AGGREGATES,
    BadStepRule,
    EmptyScores,
    NonFiniteScore,
    StepError,
    TooManySteps,
    aggregate,
    check_scores,
    split_steps,
)


@pytest.mark.parametrize(
    ("text", "rule", "steps"),
    [
        ("a\n\nb\n \n\nc\r\n\r\nd", "blank_line", ["a", "b", "c", "d"]),
        ("  one line  ", "blank_line", ["one line"]),
        ("a\nb\n\n  c  ", "line", ["a", "b", "c"]),
        ("x ки y ки", "tag:ки", ["x", "y"]),
        ("x<extra_0>y<extra_0>tail", "tag:<extra_0>", ["x", "y", "tail"]),
        ("a\n\n\nb\n\nc", "separator:\n\n", ["a", "b", "c"]),  # "\nb" stripped
        ("a;;b;; ;;", "separator:;;", ["a", "b"]),
        ("", "blank_line", []),
        (" \n\n \n", "blank_line", []),
    ],
)
def test_split_rules(text: str, rule: str, steps: list[str]) -> None:
    assert split_steps(text, rule) == steps


@pytest.mark.parametrize("rule", ["paragraph", "tag:", "separator:", "regex:.*"])
def test_unknown_or_empty_rules(rule: str) -> None:
    with pytest.raises(BadStepRule):
        split_steps("a", rule)


def test_too_many_steps_is_an_error_not_a_truncation() -> None:
    with pytest.raises(TooManySteps, match="3 steps"):
        split_steps("a\nb\nc", "line", max_steps=2)


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ("min", 0.0),
        ("max", 1.0),
        ("mean", 0.625),
        ("sum", 2.5),
        ("last", 0.5),
        ("first", 1.0),
        ("product", 0.0),
        ("first_error", 0.5),  # steps 0 and 1 pass, step 2 (0.0) is the first below 0.5: 2/4
    ],
)
def test_aggregates(how: str, expected: float) -> None:
    assert aggregate([1.0, 1.0, 0.0, 0.5], how) == pytest.approx(expected)


def test_the_gateway_config_offers_every_aggregate() -> None:
    from typing import get_args

    from rewardfleet.services.gateway.core.config import ScoreAggregate

    assert get_args(ScoreAggregate) == AGGREGATES


def test_first_error_edges() -> None:
    assert aggregate([0.9, 0.8], "first_error") == 1.0
    assert aggregate([0.1, 0.9], "first_error") == 0.0
    assert aggregate([0.9, 0.6], "first_error", threshold=0.7) == 0.5
    assert set(AGGREGATES) >= {"min", "mean", "last", "product", "first_error"}


def test_empty_nonfinite_and_bad_lists() -> None:
    with pytest.raises(EmptyScores):
        aggregate([], "min")
    with pytest.raises(NonFiniteScore):
        aggregate([1.0, math.inf], "mean")
    with pytest.raises(StepError, match="unknown aggregate"):
        aggregate([1.0], "median")
    assert check_scores((1, 0.5, 0), "s", 8) == [1.0, 0.5, 0.0]
    with pytest.raises(StepError, match=r"s\[1\] must be a number"):
        check_scores([1, True], "s", 8)
    with pytest.raises(NonFiniteScore, match=r"s\[0\] is nan"):
        check_scores([math.nan], "s", 8)
    with pytest.raises(TooManySteps):
        check_scores([0.0] * 9, "s", 8)
    with pytest.raises(StepError, match="must be a list"):
        check_scores("0.5", "s", 8)
