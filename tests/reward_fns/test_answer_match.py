"""The rule half of the `answer_match` judge method (reward_fns/judging/answer_match.py): which final answer
it reads, when it decides alone, and when it asks the model."""

from __future__ import annotations

from fractions import Fraction

import pytest

from bench.harness.judge_cases import answer_match_cases, judge_cases
from rewardfleet.reward_fns.judging.answer_match import (
    decide,
    marked_answer,
    number_choice_regex,
    number_strings,
    reference_number,
)
from rewardfleet.reward_fns.judging.reading import words_to_digits


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
    choices = number_strings("There are 120 minutes in 2 hours, 1.5 or -3 in other units.")
    assert choices == ["120", "2", "1.5", "-3"]
    assert number_choice_regex(choices) == r"(120|1\.5|\-3|2)"
    # A denied number is never offered: "5 legs, not 4" offers only 5.
    assert number_strings("A dog has 5 legs, not 4.") == ["5"]


def test_the_rule_settles_most_labelled_cases_and_never_misjudges_one() -> None:
    """On the labelled set, every case the rule decides alone is decided right; the rest go to the model."""
    decided = 0
    for case in judge_cases():
        judgment = decide(case.response, case.reference)
        if judgment.decision in ("match", "mismatch"):
            decided += 1
            assert (judgment.decision == "match") == case.correct, case
    assert decided >= 0.9 * len(judge_cases())


@pytest.mark.parametrize(
    ("text", "digits"),
    [
        ("thirty-seven", "37"),
        ("one hundred and five", "105"),
        ("twenty one", "21"),
        ("one thousand and twenty-four", "1024"),
        ("two thousand three hundred", "2300"),
        ("three four", "3 4"),  # not one number
        ("three and four", "3 and 4"),
        ("nineteen ninety", "19 90"),
    ],
)
def test_compound_number_words_read_as_one_number(text: str, digits: str) -> None:
    assert words_to_digits(text) == digits


@pytest.mark.parametrize(
    ("response", "reference", "decision"),
    [
        ("The result is certainly not 17.", "17", "mismatch"),
        ("It isn't 42.", "42", "mismatch"),
        ("It cannot be 7.", "7", "mismatch"),
        ("It has 5 legs, not 4.", "4", "mismatch"),  # the denied number is never the answer
        ("It has 4 legs, not 5.", "4", "match"),
        ("The answer is 42, definitely not 24.", "42", "match"),
        ("The capital of France is not Paris.", "Paris", "mismatch"),
        ("It is not Lyon; it is Paris.", "Paris", "match"),
        ("The sum is thirty-seven.", "37", "match"),
        ("That makes one hundred and five.", "105", "match"),
        ("That makes one hundred and fifteen.", "105", "mismatch"),
        ("It is either 17 or 18.", "17", "mismatch"),  # hedges without a marker
        ("Probably 16 or 17.", "17", "mismatch"),
        ("Somewhere between 16 and 18.", "17", "mismatch"),
        ("Paris or Lyon.", "Paris", "mismatch"),
        ("The answer is 15. Wait, I made an error: it is 17.", "17", "match"),  # self-corrections
        ("The answer is 15. Wait, I made an error: it is 17.", "15", "mismatch"),
        ("Yes. Wait, no: 15 = 3 * 5.", "No", "match"),
        ("The answer is 25. Let me double check: 12 + 13 = 25. Yes.", "25", "match"),
        ("No, 17 is not prime.", "Yes", "mismatch"),
        ("Yes or no, hard to say.", "No", "mismatch"),
        ("Yes and no.", "Yes", "mismatch"),
    ],
)
def test_negations_hedges_and_corrections_are_read(response: str, reference: str, decision: str) -> None:
    assert decide(response, reference).decision == decision


def test_the_rule_never_misjudges_a_case_of_the_kinds_set() -> None:
    """On tests/reward_fns/data/answer_match_cases.jsonl every case the rule decides alone is decided right,
    and the rule decides nearly all of them (the rest go to the model)."""
    cases = answer_match_cases()
    assert len(cases) >= 60
    decided = 0
    for case in cases:
        judgment = decide(case.response, case.reference)
        if judgment.decision in ("match", "mismatch"):
            decided += 1
            assert (judgment.decision == "match") == case.correct, case
    assert decided >= 0.9 * len(cases)
