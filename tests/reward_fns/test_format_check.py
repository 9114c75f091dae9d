from __future__ import annotations

from typing import Any

import pytest

from rewardfleet.reward_fns import format_check


def check(text: str, extra_info: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    return format_check.compute_score(
        data_source="fmt", solution_str=text, ground_truth=None, extra_info=extra_info, **kwargs
    )


def test_default_think_then_answer() -> None:
    assert check("<think>reasoning</think>\nThe answer is 4.") == {
        "score": 1.0,
        "passed": True,
        "reasons": "",
    }


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("The answer is 4.", "missing <think> and </think>"),
        ("<think>reasoning, never closed. The answer is 4.", "missing </think>"),
        ("<think>reasoning</think>   ", "no answer after the last closing tag"),
        ("</think>x<think> 4", "</think> comes before <think>"),
        (
            "<think>a</think><think>b</think> 4",
            "<think> appears 2 times and </think> 2 times (expected once)",
        ),
    ],
)
def test_failures_say_why(text: str, reason: str) -> None:
    got = check(text)
    assert got["score"] == 0.0
    assert got["passed"] is False
    assert got["reasons"] == reason


def test_several_tags_in_order() -> None:
    tags = ["think", "answer"]
    good = "<think>r</think> <answer>4</answer>"
    assert check(good, required_tags=tags, answer_after_tags=False)["passed"] is True
    swapped = "<answer>4</answer> <think>r</think>"
    got = check(swapped, required_tags=tags, answer_after_tags=False)
    assert got["reasons"] == "<answer> must come after </think>"
    assert check(swapped, required_tags=tags, answer_after_tags=False, ordered=False)["passed"] is True
    both = check("nothing", required_tags=tags, answer_after_tags=False)["reasons"]
    assert both == "missing <think> and </think>; missing <answer> and </answer>"


def test_text_before_and_pattern() -> None:
    assert check("hi <think>r</think> 4", allow_text_before=False)["reasons"] == "text before <think>"
    assert check("<think>r</think> 4", allow_text_before=False)["passed"] is True
    got = check("<think>r</think> four", pattern=r"<think>.*</think>\s*\d+")
    assert got["reasons"] == "does not match pattern '<think>.*</think>\\\\s*\\\\d+'"
    assert check("<think>r</think> 4", pattern=r"<think>.*</think>\s*\d+")["passed"] is True


def test_scores_and_per_sample_options() -> None:
    assert check("no tags", fail_score=-1.0)["score"] == -1.0
    assert check("<think>r</think> 4", pass_score=0.5)["score"] == 0.5
    assert check("<answer>4</answer>", {"required_tags": ["answer"], "answer_after_tags": False})["passed"]
    assert check("anything", required_tags=[])["passed"] is True


def test_bad_tag_names_are_errors() -> None:
    with pytest.raises(ValueError, match="not a tag name"):
        check("<think></think>", required_tags=["<think>"])
