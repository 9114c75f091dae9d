from __future__ import annotations

from typing import Any

import pytest

from rewardfleet.reward_fns import math_dapo


def score(text: str, truth: str, **kwargs: Any) -> dict[str, Any]:
    return math_dapo.compute_score(data_source="math_dapo", solution_str=text, ground_truth=truth, **kwargs)


@pytest.mark.parametrize(
    ("text", "truth", "expected"),
    [
        ("Reasoning.\nAnswer: 42", "42", {"score": 1.0, "acc": True, "pred": "42"}),
        ("Answer: 41", "42", {"score": -1.0, "acc": False, "pred": "41"}),
        ("answer : 42", "42", {"score": 1.0, "acc": True, "pred": "42"}),  # case and spaces
        ("Answer: 1\nAnswer: 2", "2", {"score": 1.0, "acc": True, "pred": "2"}),  # the last line
        ("Answer: 1,000", "1000", {"score": 1.0, "acc": True, "pred": "1000"}),  # thousands commas
        ("Answer: $\\frac12$", "\\frac{1}{2}", {"score": 1.0, "acc": True, "pred": "\\frac{1}{2}"}),
        ("Answer: \\boxed{7}", "7", {"score": 1.0, "acc": True, "pred": "7"}),
        ("Answer: x = 7", "7", {"score": 1.0, "acc": True, "pred": "7"}),
        ("Answer: 5 \\text{ cm}", "5", {"score": 1.0, "acc": True, "pred": "5"}),
        ("Answer: 30 degrees", "30", {"score": 1.0, "acc": True, "pred": "30"}),
        ("Answer: \\dfrac{1}{2}", "\\frac{1}{2}", {"score": -1.0, "acc": False, "pred": "\\dfrac{1}{2}"}),
        ("Answer: 0.5", "\\frac{1}{2}", {"score": -1.0, "acc": False, "pred": "0.5"}),
        # No `Answer:` line: verl 0.9 compares the last box in the final 100 characters, raw.
        ("so \\boxed{7}", "7", {"score": 1.0, "acc": True, "pred": "7"}),
        ("so \\boxed{ 7}", "7", {"score": -1.0, "acc": False, "pred": " 7"}),
        ("\\boxed{7}" + "." * 100, "7", {"score": -1.0, "acc": False, "pred": "[INVALID]"}),
        ("nothing here", "7", {"score": -1.0, "acc": False, "pred": "[INVALID]"}),
        ("Answer: 7 apples", "7", {"score": -1.0, "acc": False, "pred": "7apples"}),  # the rest of the line
        ("Answer: 6\n" + "x" * 300 + "\nAnswer: 7", "7", {"score": 1.0, "acc": True, "pred": "7"}),
        ("Answer: 7\n" + "x" * 300, "7", {"score": -1.0, "acc": False, "pred": "[INVALID]"}),  # clipped
    ],
)
def test_scores(text: str, truth: str, expected: dict[str, Any]) -> None:
    got = score(text, truth)
    assert got == expected
    assert type(got["acc"]) is bool


def test_strict_box_verify_ignores_answer_lines() -> None:
    assert score("Answer: 7", "7", strict_box_verify=True) == {"score": -1.0, "acc": False, "pred": None}
    assert score("Answer: 8 \\boxed{7}", "7", strict_box_verify=True) == {
        "score": 1.0,
        "acc": True,
        "pred": "7",
    }


def test_boxed_fallback_off_is_verl_0_8() -> None:
    assert score("so \\boxed{7}", "7", boxed_fallback=False)["score"] == -1.0


def test_pause_tokens_index_needs_four_indices() -> None:
    with pytest.raises(ValueError, match="4 indices"):
        score("\\boxed{7}", "7", strict_box_verify=True, pause_tokens_index=[1, 2])


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("\\text{(A)}", "(A)"),
        ("\\$1,000.", "1,000."),
        ("12,345", "12345"),
        ("a=b=5", "5"),
        ("\\overline{AB}", "AB"),
        ("\\sqrt2", "\\sqrt{2}"),
        ("the answer", "theanswer"),
        ("an apple a day", "appleday"),  # verl removes "an " and "a " anywhere
    ],
)
def test_normalize(raw: str, normalised: str) -> None:
    assert math_dapo.normalize_final_answer(raw) == normalised


def test_claims_match_verl_dispatch() -> None:
    assert math_dapo.DATA_SOURCES == ("math_dapo", "math", "math_dapo_reasoning", "aime*")
