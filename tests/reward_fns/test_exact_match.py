from __future__ import annotations

from typing import Any

import pytest

from rewardfleet.reward_fns import exact_match


def score(text: str, truth: Any, extra_info: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    return exact_match.compute_score(
        data_source="qa", solution_str=text, ground_truth=truth, extra_info=extra_info, **kwargs
    )


@pytest.mark.parametrize(
    ("text", "truth", "kwargs", "expected"),
    [
        ("Paris", "Paris", {}, 1.0),
        ("  paris \n", "Paris", {}, 1.0),  # case-insensitive and stripped by default
        ("New   York", "new york", {}, 1.0),  # whitespace collapsed
        ("paris", "Paris", {"case_sensitive": True}, 0.0),
        ("Paris.", "Paris", {}, 0.0),
        ("Paris.", "Paris", {"ignore_punctuation": True}, 1.0),
        ("The Eiffel Tower", "eiffel tower", {"remove_articles": True}, 1.0),
        ("London", ["Paris", "London"], {}, 1.0),  # a list of accepted answers
        ("Rome", ["Paris", "London"], {}, 0.0),
        ("Paris is the capital", "Paris", {}, 0.0),
    ],
)
def test_scores(text: str, truth: Any, kwargs: dict[str, Any], expected: float) -> None:
    assert score(text, truth, **kwargs)["score"] == expected


def test_extras_name_the_match() -> None:
    assert score("London", ["Paris", "London"]) == {"score": 1.0, "pred": "london", "matched": "London"}
    assert score("Rome", "Paris") == {"score": 0.0, "pred": "rome", "matched": ""}


def test_answer_regex_extracts_the_last_match() -> None:
    text = "<answer>Rome</answer> no wait <answer> Paris </answer>"
    assert score(text, "Paris", answer_regex=r"<answer>(.*?)</answer>")["score"] == 1.0
    assert score("The answer is Paris", "answer is paris", answer_regex=r"answer is \w+")["score"] == 1.0
    assert score("no tags", "Paris", answer_regex=r"<answer>(.*?)</answer>") == {
        "score": 0.0,
        "pred": "",
        "matched": "",
    }


def test_extra_info_overrides_kwargs_per_sample() -> None:
    assert score("paris", "Paris", {"case_sensitive": True})["score"] == 0.0
    assert score("paris", "Paris", {"case_sensitive": False}, case_sensitive=True)["score"] == 1.0
    assert score("x", "x", {"unrelated": 1})["score"] == 1.0
    with pytest.raises(TypeError, match="case_sensitive"):
        score("paris", "Paris", {"case_sensitive": "yes"})


@pytest.mark.parametrize("truth", [[], 5, None, ["ok", 3]])
def test_bad_ground_truth_is_an_error(truth: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        score("x", truth)
