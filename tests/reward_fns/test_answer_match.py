"""The rule half of the `answer_match` judge method (reward_fns/judging/answer_match.py): which final answer
it reads, when it decides alone, and when it asks the model."""

from __future__ import annotations

from fractions import Fraction

import pytest

from rewardfleet.reward_fns.judging.answer_match import (
    decide,
    marked_answer,
    number_choice_regex,
    number_strings,
    reference_number,
)
from tests.reward_fns.judge_cases import judge_cases


@pytest.mark.parametrize(
    ("response", "reference", "decision"),
    [
        ("4", "4", "match"),
        ("5", "4", "mismatch"),
        ("2 plus 2 makes four.", "4", "match"),
        ("The answer is 0.75.", "3/4", "match"),
        (r"so $\frac{3}{4}$", "0.75", "match"),
        (r"2 + 2 = \boxed{4}", "4", "match"),
        ("#### 1,000", "1000", "match"),
        ("10 - 15 = -5", "-5", "match"),
        ("x = 13 because 10 + 3 = 13.", "7", "mismatch"),
        ("The answer is 4 or 5.", "4", "mismatch"),  # a hedge after a marker is no match
        ("The answer is 4 or 5.", "5", "mismatch"),
        ("I have no idea.", "4", "mismatch"),
        ("There are 120 minutes in 2 hours.", "120", "ask_number"),
        ("Maybe 1, 2, 3, 4, 5, 6, 7, 8 or 120 minutes in 2 hours.", "120", "mismatch"),  # sprayed numbers
        ("The capital of France is Paris.", "Paris", "match"),
        ("It is Lyon.", "Paris", "mismatch"),
        ("Shakespeare wrote it.", "William Shakespeare", "ask_verdict"),
    ],
)
def test_decisions(response: str, reference: str, decision: str) -> None:
    assert decide(response, reference).decision == decision


def test_reference_numbers() -> None:
    assert reference_number("12") == 12
    assert reference_number("-1/2") == Fraction(-1, 2)
    assert reference_number(r"\frac{3}{4}") == Fraction(3, 4)
    assert reference_number("12 dollars") == 12
    for not_a_number in ("x^2 + 1", "H2O", "Paris", "(1, 2)", "1, 2"):
        assert reference_number(not_a_number) is None, not_a_number


def test_marked_answer_takes_the_last_marker() -> None:
    assert marked_answer(r"\boxed{1} then \boxed{2}") == "2"
    assert marked_answer("The answer is 3. Final answer: 4") == "4"
    assert marked_answer("no marker here") is None


def test_the_number_choice_allows_only_the_response_numbers() -> None:
    choices = number_strings("There are 120 minutes in 2 hours, not 1.5 or -3.")
    assert choices == ["120", "2", "1.5", "-3"]
    assert number_choice_regex(choices) == r"(120|1\.5|\-3|2)"


def test_the_rule_settles_most_labelled_cases_and_never_misjudges_one() -> None:
    """On the labelled set, every case the rule decides alone is decided right; the rest go to the model."""
    decided = 0
    for case in judge_cases():
        judgment = decide(case.response, case.reference)
        if judgment.decision in ("match", "mismatch"):
            decided += 1
            assert (judgment.decision == "match") == case.correct, case
    assert decided >= 0.9 * len(judge_cases())
