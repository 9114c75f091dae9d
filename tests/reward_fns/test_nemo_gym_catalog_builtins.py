"""The NeMo Gym catalogue's rule built-ins on hostile or malformed task fields: a typed error naming the
field (never a score), and responses over the bound scored 0 with the reason; their recorded-row parity is
tests/nemo_gym/test_catalog.py."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from rewardfleet.reward_fns._task_text import MAX_RESPONSE_CHARS, TaskFieldError

BAD_FIELDS = [
    ("circle_count", None, {"circles": "red", "target_color": "red"}, "circles"),
    ("circle_count", None, {"circles": [{"radius": 1}], "target_color": "red"}, "circles"),
    ("mrcr", "abc", {"random_string_to_prepend": 7}, "random_string_to_prepend"),
    ("spartqa", "a box", {"options": {"a": 1}}, "options"),
    ("ragtruth", "yes", {}, "ground_truth"),
    ("gui_coordinate", "0.5,0.5", {"max_dist": -1}, "max_dist"),
    ("calendar_schedule", None, {"exp_cal_state": ["e1"]}, "exp_cal_state"),
    ("ruler2", ["x"], {"match_type": "nearest"}, "match_type"),
    ("solution_choice", "A", {"options": [{"A": "x"}], "grading_mode": "loose"}, "grading_mode"),
]


def _score(name: str, text: str, truth: Any, info: dict[str, Any]) -> dict[str, Any]:
    module = importlib.import_module(f"rewardfleet.reward_fns.{name}")
    return dict(
        module.compute_score(data_source="nemo_gym", solution_str=text, ground_truth=truth, extra_info=info)
    )


@pytest.mark.parametrize(("name", "truth", "info", "field"), BAD_FIELDS, ids=[c[0] for c in BAD_FIELDS])
def test_bad_task_field_is_a_typed_error_naming_it(
    name: str, truth: Any, info: dict[str, Any], field: str
) -> None:
    with pytest.raises(TaskFieldError, match=field):
        _score(name, "an answer", truth, info)


OVERLONG = [
    ("graphwalks", '["a"]', {}),
    ("imo_gradingbench", "correct", {}),
    ("math_proof_judgement", "Judgement: Yes", {}),
    ("proof_genselect", 1, {}),
    ("arc_agi", [[1]], {}),
    ("spartqa", "a box", {"options": ["a box", "a ball"]}),
    ("ragtruth", True, {}),
    ("gui_coordinate", "0.5,0.5", {}),
    ("ruler2", ["x"], {}),
    ("mrcr", "abc", {"random_string_to_prepend": ""}),
]


@pytest.mark.parametrize(("name", "truth", "info"), OVERLONG, ids=[c[0] for c in OVERLONG])
def test_overlong_response_scores_zero_with_the_reason(name: str, truth: Any, info: dict[str, Any]) -> None:
    result = _score(name, "x" * (MAX_RESPONSE_CHARS + 1), truth, info)
    assert result["score"] == 0.0
    assert result["error_type"] == "response_too_long"


def test_hostile_shapes_score_without_error() -> None:
    """Answers built to confuse the parsers: a grid nested too deep, an index that is not a number, a
    calendar whose events lack fields, a hallucination list that is not a list."""
    assert _score("arc_agi", "\\boxed{[[[1]]]}", [[1]], {})["extraction_successful"] is False
    assert (
        _score("proof_genselect", "<best_solution>" + "9" * 500 + "</best_solution>", 1, {})["score"] == 0.0
    )
    cal = _score("calendar_schedule", '[{"event_id": 1}]', None, {"exp_cal_state": {"1": {"duration": 30}}})
    assert cal == {"score": 0.0, "reason": "error_in_grading"}
    assert _score("ragtruth", '{"hallucination list": "all"}', 1, {})["pred_halu"] == 0
    assert _score("graphwalks", "Final Answer: [a, b]", "not json", {})["score"] == 0.0
