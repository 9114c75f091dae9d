from __future__ import annotations

import re
from typing import Any

import pytest

from rewardfleet.reward_fns import regex_match


def score(text: str, truth: Any, extra_info: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    return regex_match.compute_score(
        data_source="re", solution_str=text, ground_truth=truth, extra_info=extra_info, **kwargs
    )


@pytest.mark.parametrize(
    ("text", "truth", "kwargs", "expected"),
    [
        ("42", r"\d+", {}, 1.0),
        (" 42\n", r"\d+", {}, 1.0),  # stripped first
        (" 42\n", r"\d+", {"strip": False}, 0.0),
        ("the answer is 42", r"\d+", {}, 0.0),  # fullmatch by default
        ("the answer is 42", r"\d+", {"mode": "search"}, 1.0),
        ("the answer is 42", r"the", {"mode": "match"}, 1.0),
        ("the answer is 42", r"answer", {"mode": "match"}, 0.0),
        ("YES", r"yes", {}, 0.0),
        ("YES", r"yes", {"ignore_case": True}, 1.0),
        ("a\nb", r"a.b", {}, 1.0),  # dotall by default
        ("a\nb", r"a.b", {"dotall": False}, 0.0),
        ("x\n42", r"^42$", {"mode": "search", "multiline": True}, 1.0),
        ("B", [r"A", r"B"], {}, 1.0),  # any of several patterns
    ],
)
def test_scores(text: str, truth: Any, kwargs: dict[str, Any], expected: float) -> None:
    assert score(text, truth, **kwargs)["score"] == expected


def test_pattern_option_replaces_ground_truth() -> None:
    got = score("<think>x</think> 7", None, pattern=r"<think>.*</think>\s*\d+")
    assert got == {"score": 1.0, "pattern": r"<think>.*</think>\s*\d+", "match": "<think>x</think> 7"}
    assert score("7", r"\d", pattern=r"[a-z]")["score"] == 0.0


def test_extras_and_per_sample_options() -> None:
    assert score("the answer is 42", r"\d+", {"mode": "search"}) == {
        "score": 1.0,
        "pattern": r"\d+",
        "match": "42",
    }
    assert score("nope", r"\d+") == {"score": 0.0, "pattern": "", "match": ""}


def test_errors() -> None:
    with pytest.raises(re.error):
        score("x", "(")
    with pytest.raises(ValueError, match="mode"):
        score("x", "x", mode="find")
    with pytest.raises(TypeError):
        score("x", None)
