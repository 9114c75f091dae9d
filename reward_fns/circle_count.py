"""Counting objects of a colour, as NeMo Gym's `circle_count` server grades it: the number in the response's
first `\\boxed{N}` against the count of the task's circles of `target_color`.

Task fields in `extra_info`: `circles` (a list of objects with a `color`), `target_color`. Returns
`{"score", "predicted_count" (None when no boxed number), "expected_count", "correct"}`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rewardfleet.reward_fns._task_text import TaskFieldError, too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["compute_score"]

MAX_CIRCLES = 100_000
_BOXED_INT = re.compile(r"\\boxed\{(\d{1,30})\}")


def _expected(info: Mapping[str, Any]) -> int:
    circles = info.get("circles", [])
    target = info.get("target_color", "")
    if not isinstance(circles, list) or len(circles) > MAX_CIRCLES:
        raise TaskFieldError(f"extra_info['circles'] must be a list of at most {MAX_CIRCLES} objects")
    if not isinstance(target, str):
        raise TaskFieldError("extra_info['target_color'] must be a string")
    count = 0
    for i, circle in enumerate(circles):
        if not isinstance(circle, Mapping) or "color" not in circle:
            raise TaskFieldError(f"extra_info['circles'][{i}] must be an object with a 'color'")
        count += circle["color"] == target
    return count


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any = None, extra_info: dict[str, Any] | None = None
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str)
    expected = _expected(extra_info or {})
    result: dict[str, Any] = {
        "score": 0.0,
        "predicted_count": None,
        "expected_count": expected,
        "correct": False,
    }
    if (over := too_long(text)) is not None:
        return {**result, **over}
    m = _BOXED_INT.search(text)
    if m is not None:
        result["predicted_count"] = int(m.group(1))
        result["correct"] = result["predicted_count"] == expected
        result["score"] = 1.0 if result["correct"] else 0.0
    return result
