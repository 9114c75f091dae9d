from __future__ import annotations

from typing import Any

import pytest

from rewardfleet.reward_fns import gsm8k


def score(text: str, truth: str, **kwargs: Any) -> float:
    return gsm8k.compute_score(data_source="openai/gsm8k", solution_str=text, ground_truth=truth, **kwargs)


@pytest.mark.parametrize(
    ("text", "truth", "expected"),
    [
        ("She pays 3 * 6 = 18 dollars.\n#### 18", "18", 1.0),
        ("#### 17", "18", 0.0),
        ("The answer is 18.", "18", 0.0),  # strict mode needs `#### `
        ("####18", "18", 0.0),  # ... followed by one space
        ("#### 1,000", "1000", 1.0),  # commas dropped
        ("#### -3", "-3", 1.0),
        ("#### 18\nwait, no\n#### 19", "19", 1.0),  # the last one wins
        ("#### 18\nwait, no\n#### 19", "18", 0.0),
        ("#### 18.0", "18", 0.0),  # string equality, not numeric
        ("#### $18", "18", 0.0),  # `$` is not part of the number
        ("#### 18" + " filler" * 60, "18", 0.0),  # outside the last 300 characters
        ("x" * 1000 + "#### 18", "18", 1.0),
        ("", "18", 0.0),
    ],
)
def test_strict(text: str, truth: str, expected: float) -> None:
    assert score(text, truth) == expected


@pytest.mark.parametrize(
    ("text", "truth", "expected"),
    [
        ("so the total is 18.", "18", 0.0),  # the trailing "." is part of the run "18."
        ("so the total is 18 apples", "18", 1.0),
        ("3 then 18 then .", "18", 1.0),  # a bare "." is skipped
        ("it is 1,000 dollars", "1000", 0.0),  # flexible keeps commas
        ("it is 1,000 dollars", "1,000", 1.0),
        ("no digits", "18", 0.0),
    ],
)
def test_flexible(text: str, truth: str, expected: float) -> None:
    assert score(text, truth, method="flexible") == expected


def test_scores_are_configurable_and_no_answer_is_zero() -> None:
    assert score("#### 18", "18", score=2.0) == 2.0
    assert score("#### 17", "18", format_score=0.1) == 0.1
    assert score("no answer", "18", format_score=0.1) == 0.0


def test_invalid_input_is_an_error_not_a_zero() -> None:
    with pytest.raises(TypeError, match="ground_truth"):
        gsm8k.compute_score(data_source="openai/gsm8k", solution_str="#### 18", ground_truth=18)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="method"):
        score("#### 18", "18", method="loose")


def test_claims() -> None:
    assert gsm8k.DATA_SOURCES == ("openai/gsm8k",)
