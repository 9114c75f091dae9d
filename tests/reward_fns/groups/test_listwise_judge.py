"""`listwise_judge` through a real gateway against the stand-in judge with a known preference, and its
permutation grammar."""

from __future__ import annotations

import itertools
import re

import pytest

from rewardfleet.reward_fns.groups.listwise_judge import parse_ranking, permutation_regex
from rewardfleet.reward_fns.judging.verdicts import VerdictParseError
from tests.support.group_judges import GroupJudgeFleet


def test_the_grammar_admits_exactly_the_permutations() -> None:
    labels = list("ABCD")
    regex = permutation_regex(labels)
    every = {">".join(p) for p in itertools.product(labels, repeat=4)}
    admitted = {text for text in every if re.fullmatch(regex, text)}
    assert admitted == {">".join(p) for p in itertools.permutations(labels)}
    assert parse_ranking("C>A>B", list("ABC")) == ["C", "A", "B"]
    with pytest.raises(VerdictParseError):
        parse_ranking("A>A>B", list("ABC"))


def test_a_ranking_of_the_whole_group_in_one_call(fleet: GroupJudgeFleet) -> None:
    before = len(fleet.judge.log())
    answers = fleet.group("listwise_judge", "lw", [f"quality={q}" for q in (2, 4, 1, 3)])
    assert [a["score"] for a in answers] == pytest.approx([1 / 3, 1.0, 0.0, 2 / 3])
    assert [a["extra"]["rank"] for a in answers] == [3, 1, 4, 2]
    assert (answers[1]["extra"]["wins"], answers[1]["extra"]["losses"]) == (3, 0)
    calls = fleet.judge.log()[before:]
    assert len(calls) == 1 and calls[0]["regex"] == permutation_regex(list("ABCD"))


def test_several_shuffles_and_a_guarded_member(fleet: GroupJudgeFleet) -> None:
    before = len(fleet.judge.log())
    answers = fleet.group("lw_shuffles", "lw3", ["quality=1", "", "quality=5", "quality=3"])
    assert answers[1]["score"] == 0.0 and answers[1]["extra"]["guard"] == "empty"
    assert [answers[i]["score"] for i in (0, 2, 3)] == pytest.approx([0.0, 1.0, 0.5])
    assert answers[0]["extra"]["comparisons"] == 3 and answers[1]["extra"]["comparisons"] == 0
    assert len(fleet.judge.log()[before:]) == 3


def test_every_call_failing_is_a_typed_error_for_each_member(fleet: GroupJudgeFleet) -> None:
    answers = fleet.group("listwise_judge", "lwfail", ["quality=1", "FAIL quality=2"])
    assert [a["status"] for a in answers] == ["error", "error"]
    assert {a["error"]["type"] for a in answers} == {"GroupJudgeError"}
