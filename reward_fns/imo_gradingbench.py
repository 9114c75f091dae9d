"""IMO-GradingBench, as NeMo Gym's `imo_gradingbench` server grades it: the policy grades a proof, and its
grade is the response's last word (markdown and punctuation stripped, lower-cased) when that is one of
`correct` (7), `almost` (6), `partial` (1), `incorrect` (0).

`ground_truth` is the gold grade (NeMo Gym's `expected_answer`; any other word scores 0). Returns `{"score"
(1 when the grades are equal), "extracted_grade", "binary_match" (both high, correct/almost, or both low),
"score_diff" (|points - gold points|, None without both grades)}`.
"""

from __future__ import annotations

import re
from typing import Any

from rewardfleet.reward_fns._task_text import too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["POINTS", "compute_score", "last_word_grade"]

POINTS = {"correct": 7, "almost": 6, "partial": 1, "incorrect": 0}
_HIGH = {"correct", "almost"}
_PUNCT = re.compile(r"[*_`.,;:!?()[\]{}]+")


def last_word_grade(text: str) -> str | None:
    words = text.split()
    grade = _PUNCT.sub("", words[-1]).lower() if words else ""
    return grade if grade in POINTS else None


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str)
    gold = require_str("ground_truth", ground_truth or "").strip().lower()
    gold_grade = gold if gold in POINTS else None
    result: dict[str, Any] = {
        "score": 0.0,
        "extracted_grade": None,
        "binary_match": False,
        "score_diff": None,
    }
    if (over := too_long(text)) is not None:
        return {**result, **over}
    grade = last_word_grade(text)
    result["extracted_grade"] = grade
    if grade is not None and gold_grade is not None:
        result["score"] = 1.0 if grade == gold_grade else 0.0
        result["binary_match"] = (grade in _HIGH) == (gold_grade in _HIGH)
        result["score_diff"] = float(abs(POINTS[grade] - POINTS[gold_grade]))
    return result
