"""Geometry3K: the last `\\boxed{}` graded by `mathruler`, plus a format bonus, exactly as verl's `geo3k`.

verl 0.9.1 scores `hiyouga/geometry3k` as `(1 - format_score) * accuracy + format_score * format` with
`format_score=0.1`:

- accuracy (0 or 1): `mathruler.grader.grade_answer` of the content of the last `\\boxed{…}` (balanced
  braces, stripped; the string "None" when there is none) against `ground_truth`; with `use_boxed=False`
  the whole response is graded;
- format (0 or 1): the whole response matches `<think>…</think>…\\boxed{…}…` (across lines).

`mathruler` (the same package verl imports) does the extraction and grading.
Deviation from verl, on invalid input only: non-string arguments raise `TypeError`.
"""

from __future__ import annotations

import re
from typing import Any

from mathruler.grader import extract_boxed_content, grade_answer

from rewardfleet.reward_fns.judging.answers import require_str

DATA_SOURCES: tuple[str, ...] = ("hiyouga/geometry3k",)

_FORMAT = re.compile(r"<think>.*</think>.*\\boxed\{.*\}.*", re.DOTALL)


def format_reward(solution_str: str) -> float:
    return 1.0 if _FORMAT.fullmatch(solution_str) else 0.0


def accuracy_reward(solution_str: str, ground_truth: str, use_boxed: bool = True) -> float:
    answer = extract_boxed_content(solution_str) if use_boxed else solution_str
    return 1.0 if grade_answer(answer, ground_truth) else 0.0


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: dict[str, Any] | None = None,
    *,
    use_boxed: bool = True,
    format_score: float = 0.1,
) -> float:
    """`(1 - format_score) * accuracy + format_score * format`."""
    text = require_str("solution_str", solution_str)
    truth = require_str("ground_truth", ground_truth)
    accuracy = accuracy_reward(text, truth, use_boxed)
    return (1.0 - format_score) * accuracy + format_score * format_reward(text)
