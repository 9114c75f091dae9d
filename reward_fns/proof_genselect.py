"""Proof selection, as NeMo Gym's `proof_genselect` server grades it: the policy picks the better of two
proofs, and its pick is the integer between `<best_solution>` and `</best_solution>` after the last
`</think>`; 1 when it is the task's `correct_index`.

`ground_truth` is the correct index (1 or 2; NeMo Gym's `correct_index`). With `assert_think_end` a
response without `</think>` picks nothing. Returns `{"score", "selected_index" (None when nothing valid was
picked), "reason" (why not: `missing_think_end`, `missing_best_solution_tag`,
`invalid_best_solution_value`, `best_solution_out_of_range`)}`.
"""

from __future__ import annotations

from typing import Any

from rewardfleet.reward_fns._task_text import too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["compute_score", "selected_index"]


def selected_index(text: str, assert_think_end: bool = False) -> tuple[int | None, str | None]:
    """`(index, None)` of the pick, or `(None, reason)`."""
    if assert_think_end and "</think>" not in text:
        return None, "missing_think_end"
    text = text.split("</think>")[-1].strip()
    if "<best_solution>" not in text or "</best_solution>" not in text:
        return None, "missing_best_solution_tag"
    raw = text.split("<best_solution>", 1)[1].split("</best_solution>", 1)[0].strip()
    if len(raw) > 100:
        return None, "invalid_best_solution_value"
    try:
        index = int(raw)
    except ValueError:
        return None, "invalid_best_solution_value"
    if index not in (1, 2):
        return None, "best_solution_out_of_range"
    return index, None


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    assert_think_end: bool = False,
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str)
    if isinstance(ground_truth, bool) or not isinstance(ground_truth, int):
        raise TypeError(f"ground_truth must be an integer index, got {type(ground_truth).__name__}")
    if (over := too_long(text)) is not None:
        return {**over, "selected_index": None, "reason": "response_too_long"}
    if not text:
        return {"score": 0.0, "selected_index": None, "reason": "empty_response"}
    index, reason = selected_index(text, assert_think_end)
    return {"score": 1.0 if index == ground_truth else 0.0, "selected_index": index, "reason": reason}
