from __future__ import annotations

import pytest

from rewardfleet.reward_fns import math as math_fn


def score(text: str, truth: str) -> float:
    return math_fn.compute_score(data_source="lighteval/MATH", solution_str=text, ground_truth=truth)


@pytest.mark.parametrize(
    ("text", "truth", "expected"),
    [
        ("so $\\boxed{42}$.", "42", 1.0),
        ("so $\\boxed{41}$.", "42", 0.0),
        ("no box, the answer is 42", "42", 0.0),
        ("\\boxed{1} and then \\boxed{2}", "2", 1.0),  # the last box counts
        ("\\boxed{1} and then \\boxed{2}", "1", 0.0),
        ("\\boxed{\\frac{\\sqrt{3}}{2}}", "\\frac{\\sqrt{3}}{2}", 1.0),  # nested braces
        ("\\boxed{\\dfrac{1}{2}}", "\\frac{1}{2}", 1.0),
        ("\\boxed{\\tfrac12}", "\\frac{1}{2}", 1.0),
        ("\\boxed{0.5}", "\\frac{1}{2}", 1.0),
        ("\\boxed{1/2}", "\\frac{1}{2}", 1.0),
        ("\\boxed{.5}", "0.5", 1.0),
        ("\\boxed{\\left( 1, 2 \\right)}", "(1,2)", 1.0),
        ("\\boxed{10\\%}", "10", 1.0),
        ("\\boxed{90^\\circ}", "90", 1.0),
        ("\\boxed{5 \\text{ cm}}", "5", 1.0),
        ("\\boxed{x = 5}", "5", 1.0),
        ("\\boxed{\\sqrt2}", "\\sqrt{2}", 1.0),
        ("\\boxed{1,000}", "1000", 0.0),  # commas are not removed by verl's `math`
        ("\\boxed{-3}", "-3", 1.0),
        ("\\boxed{\\$18}", "18", 1.0),
        ("\\boxed 7$ and more", "7", 1.0),  # `\boxed ` with a space, up to the next `$`
        ("\\fbox{7}", "7", 0.0),  # found, but verl only unboxes `\boxed`
        ("\\boxed{7", "7", 0.0),  # unclosed
        ("\\boxed{1 \\text{ m}\\text{ s}}", "1 \\text{ m}\\text{ s}", 1.0),  # malformed: raw equality
    ],
)
def test_scores(text: str, truth: str, expected: float) -> None:
    assert score(text, truth) == expected


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("\\dfrac{1}{2}", "\\frac{1}{2}"),
        ("\\frac12", "\\frac{1}{2}"),
        ("\\frac1{72}", "\\frac{1}{72}"),
        ("3/4", "\\frac{3}{4}"),
        ("03/4", "03/4"),
        ("k = 7", "7"),
        ("\\left[ 0, 1 \\right)", "[0,1)"),
        ("\\sqrt3 x", "\\sqrt{3}x"),
        ("", ""),
    ],
)
def test_normalize(raw: str, normalised: str) -> None:
    assert math_fn.normalize(raw) == normalised


def test_non_string_ground_truth_is_an_error() -> None:
    with pytest.raises(TypeError, match="ground_truth"):
        math_fn.compute_score(data_source="lighteval/MATH", solution_str="\\boxed{1}", ground_truth=None)  # type: ignore[arg-type]


def test_claims() -> None:
    assert math_fn.DATA_SOURCES == (
        "lighteval/MATH",
        "DigitalLearningGmbH/MATH-lighteval",
        "HuggingFaceH4/MATH-500",
    )
