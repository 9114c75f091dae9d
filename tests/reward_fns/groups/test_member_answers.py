"""What a group function may return per member (groups/scorer.py `member_answer`), and the pure parts of
the pairwise judge (`_pairwise.py`)."""

from __future__ import annotations

from typing import Any

import pytest

from rewardfleet.reward_fns.groups._pairwise import (
    bradley_terry,
    combine,
    min_max,
    scheduled_pairs,
    swiss_pairing,
)
from rewardfleet.reward_fns.groups.pairwise_judge import parse_pair_verdict
from rewardfleet.reward_fns.judging.verdicts import VerdictParseError
from rewardfleet.services.gateway.errors import InvalidReturn
from rewardfleet.services.gateway.groups.scorer import member_answer


def test_a_member_answer_is_a_number_or_a_dict() -> None:
    assert member_answer(0.25, 0).score == 0.25 and member_answer(None, 0).score is None
    full = member_answer({"score": 1, "extra": {"wins": 2}}, 0)
    assert (full.score, full.extra, full.error) == (1.0, {"wins": 2}, None)
    failed = member_answer({"score": 0.3, "error": {"type": "GroupJudgeError", "message": "m"}}, 1)
    assert failed.score is None and failed.error is not None and failed.error.type == "GroupJudgeError"


@pytest.mark.parametrize(
    "bad",
    [{"score": 1, "bonus": 2}, {"score": 1, "extra": [1]}, {"error": "boom"}, {"score": "high"}],
)
def test_a_bad_member_answer_is_refused(bad: Any) -> None:
    with pytest.raises(InvalidReturn):
        member_answer(bad, 0)


def test_pairs_per_mode() -> None:
    assert len(scheduled_pairs("all_pairs", list(range(8)))) == 28
    assert scheduled_pairs("circular", [0, 1, 2]) == [(0, 1), (1, 2), (2, 0)]
    assert scheduled_pairs("circular", [0, 1]) == [(0, 1)]
    first = swiss_pairing(range(8), {}, set())
    assert first == [(0, 1), (2, 3), (4, 5), (6, 7)]
    second = swiss_pairing(range(8), {0: 1.0, 2: 1.0, 4: 1.0, 6: 1.0}, set(first))
    assert (0, 2) in second and not set(second) & set(first)


def test_swapped_verdicts_and_bradley_terry() -> None:
    assert combine("first", "first") == ("first", False)
    assert combine("first", "second") == ("tie", True)
    assert combine("tie", None) == ("tie", False)
    strengths = bradley_terry(3, [(0, 1, "first"), (1, 2, "first"), (0, 2, "first")])
    assert strengths[0] > strengths[1] > strengths[2]
    assert min_max({0: 2.0, 1: 1.0, 2: 0.0}) == {0: 1.0, 1: 0.5, 2: 0.0}
    assert min_max({0: 1.0, 1: 1.0}) == {0: 0.5, 1: 0.5}


def test_pair_verdicts() -> None:
    assert [parse_pair_verdict(t) for t in ("A", " b ", "tie", "Verdict: [[A]]")] == [
        "first", "second", "tie", "first",
    ]  # fmt: skip
    with pytest.raises(VerdictParseError):
        parse_pair_verdict("A is better than B")
