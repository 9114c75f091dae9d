"""`pairwise_judge` through a real gateway process against a stand-in judge whose preference is known
(bench/harness/preference_judge.py: the higher `quality=` wins), so every score is checked exactly."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.group_judges import GroupJudgeFleet


def _texts(qualities: list[int]) -> list[str]:
    return [f"My answer, quality={q}." for q in qualities]


def _calls(fleet: GroupJudgeFleet, before: int) -> list[dict[str, Any]]:
    return fleet.judge.log()[before:]


def test_all_pairs_with_swap_scores_win_rates_exactly(fleet: GroupJudgeFleet) -> None:
    before = len(fleet.judge.log())
    answers = fleet.group("pairwise_judge", "all", _texts([3, 1, 4, 2]))
    assert [a["status"] for a in answers] == ["ok"] * 4, answers
    assert [a["score"] for a in answers] == pytest.approx([2 / 3, 0.0, 1.0, 1 / 3])
    best = answers[2]["extra"]
    assert (best["wins"], best["losses"], best["ties"], best["comparisons"]) == (3, 0, 0, 6)
    summary = best["group_judge"]
    assert summary["judge_calls"] == 12 and summary["swap_disagreement_rate"] == 0.0
    calls = _calls(fleet, before)
    assert len(calls) == 12 and {c["regex"] for c in calls} == {"(A|B|tie)"}
    assert answers[0]["extra"]["group"]["fn"] == "pairwise_judge"


def test_circular_and_no_swap_call_counts(fleet: GroupJudgeFleet) -> None:
    answers = fleet.group("pj_circular", "circ", _texts([1, 2, 3, 4]))
    # pairs (0,1) (1,2) (2,3) (3,0): member 0 loses both, 3 wins both, 1 and 2 win one each
    assert [a["score"] for a in answers] == pytest.approx([0.0, 0.5, 0.5, 1.0])
    assert answers[0]["extra"]["group_judge"]["judge_calls"] == 8
    plain = fleet.group("pj_noswap", "noswap", _texts([2, 1, 3]))
    assert [a["score"] for a in plain] == pytest.approx([0.5, 0.0, 1.0])
    summary = plain[0]["extra"]["group_judge"]
    assert summary["judge_calls"] == 3 and summary["swap_disagreement_rate"] is None


def test_bradley_terry_orders_as_the_preference(fleet: GroupJudgeFleet) -> None:
    qualities = [5, 2, 8, 1, 7]
    answers = fleet.group("pj_bt", "bt", _texts(qualities))
    scores = [a["score"] for a in answers]
    assert sorted(range(5), key=lambda i: scores[i]) == sorted(range(5), key=lambda i: qualities[i])
    assert min(scores) == 0.0 and max(scores) == 1.0


def test_swiss_mode_finds_the_best_and_worst_in_fewer_calls(fleet: GroupJudgeFleet) -> None:
    qualities = [4, 7, 1, 6, 3, 8, 2, 5]
    answers = fleet.group("pj_swiss", "swiss", _texts(qualities))
    summary = answers[0]["extra"]["group_judge"]
    assert summary["judge_calls"] == 3 * 4 * 2  # 3 rounds of 4 pairs, both orders (all_pairs: 56)
    assert answers[5]["score"] == 1.0 and answers[2]["score"] == 0.0
    assert all(a["extra"]["comparisons"] == 6 for a in answers)


def test_a_judge_with_position_bias_makes_every_pair_a_tie(fleet: GroupJudgeFleet) -> None:
    answers = fleet.group("pj_biased", "biased", _texts([1, 2, 3]))
    assert [a["score"] for a in answers] == [0.5, 0.5, 0.5]
    assert answers[0]["extra"]["group_judge"]["swap_disagreement_rate"] == 1.0
    assert answers[0]["extra"]["ties"] == 2 and answers[0]["extra"]["swap_disagreements"] == 2
    metrics = httpx.get(f"{fleet.gateway.url}/metrics", timeout=10).text
    assert (
        'rewardfleet_group_judge_swapped_pairs_total{group_fn="pj_biased",verdicts="disagree"} 3.0' in metrics
    )
    assert 'rewardfleet_group_judge_swapped_pairs_total{group_fn="pj_biased",verdicts="agree"} 0.0' in metrics


def test_a_guarded_member_loses_every_pair_without_a_judge_call(fleet: GroupJudgeFleet) -> None:
    before = len(fleet.judge.log())
    answers = fleet.group("pairwise_judge", "guard", [*_texts([1, 2, 3]), "   "])
    guarded = answers[3]
    assert guarded["score"] == 0.0 and guarded["extra"]["guard"] == "empty"
    assert guarded["extra"]["comparisons"] == 0 and guarded["extra"]["losses"] == 3
    assert [a["score"] for a in answers[:3]] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert len(_calls(fleet, before)) == 6  # 3 judged pairs, both orders


def test_a_member_whose_judge_calls_all_fail_gets_a_typed_error_alone(fleet: GroupJudgeFleet) -> None:
    answers = fleet.group("pairwise_judge", "fail", [*_texts([1, 3, 2]), "FAIL quality=9"])
    failed = answers[3]
    assert failed["status"] == "error" and failed["score"] is None
    assert failed["error"]["type"] == "GroupJudgeError" and "all 3" in failed["error"]["message"]
    assert failed["extra"]["failed_comparisons"] == 3
    # the others are scored on the pairs among themselves, as a group of three
    assert [a["status"] for a in answers[:3]] == ["ok"] * 3
    assert [a["score"] for a in answers[:3]] == pytest.approx([0.0, 1.0, 0.5])
    assert answers[0]["extra"]["failed_comparisons"] == 1


def test_a_retried_member_does_not_run_the_group_again(fleet: GroupJudgeFleet) -> None:
    before = len(fleet.judge.log())
    answers = fleet.group("pairwise_judge", "retry", _texts([2, 1]))
    again = fleet.post({
        "data_source": "test/group_judge", "reward_fn": "exact_match", "solution_str": _texts([2])[0],
        "ground_truth": "x", "group_id": "retry", "group_size": 2, "group_index": 0,
        "group_fn": "pairwise_judge",
    })  # fmt: skip
    assert again["score"] == answers[0]["score"] == 1.0
    assert len(_calls(fleet, before)) == 2


def test_a_group_with_a_member_missing_is_judged_over_the_members_present(fleet: GroupJudgeFleet) -> None:
    before = len(fleet.judge.log())
    answers = fleet.group("pairwise_judge", "missing", _texts([1, 2]), group_size=3)
    assert [a["status"] for a in answers] == ["ok"] * 2
    assert [a["score"] for a in answers] == [0.0, 1.0]  # one pair, the two present
    assert all(a["extra"]["group_partial"] and a["extra"]["members_missing"] == [2] for a in answers)
    assert len(_calls(fleet, before)) == 2  # both orders of the one pair


def test_a_bad_setting_fails_every_member_naming_it(fleet: GroupJudgeFleet) -> None:
    answers = fleet.group("pj_bad_mode", "badmode", _texts([1, 2]))
    assert [a["error"]["type"] for a in answers] == ["GroupFunctionError"] * 2
    assert "knockout" in answers[0]["error"]["message"]
