"""Clicking a point on a screen, as NeMo Gym's `gui_coordinate` server grades it: the first
`<point>(x, y)</point>` of the response (integers in thousandths of the screen, brackets allowed) against
the reference point: `(1 - distance / max_dist)²` when nearer than `max_dist`, else 0.

`ground_truth` is the reference as `"x,y"` in [0, 1] (NeMo Gym's `expected_answer`; one that does not parse
scores 0); `extra_info["max_dist"]` the radius (0.15). Returns `{"score", "extracted_x", "extracted_y",
"distance"}` (None without both points).
"""

from __future__ import annotations

import math
import re
from typing import Any

from rewardfleet.reward_fns._task_text import TaskFieldError, too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["compute_score"]

_POINT = re.compile(r"<point>\s*\[?\s*\(\s*(\d{1,9})\s*,\s*(\d{1,9})\s*\)\s*\]?\s*</point>")


def _reference(text: str) -> tuple[float, float] | None:
    parts = text.split(",")
    if len(parts) != 2:
        return None
    try:
        return float(parts[0]), float(parts[1])
    except ValueError:
        return None


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str).strip()
    gold = _reference(require_str("ground_truth", ground_truth))
    radius = (extra_info or {}).get("max_dist", 0.15)
    if (
        isinstance(radius, bool)
        or not isinstance(radius, int | float)
        or not math.isfinite(radius)
        or radius <= 0
    ):
        raise TaskFieldError("extra_info['max_dist'] must be a positive number")
    result: dict[str, Any] = {"score": 0.0, "extracted_x": None, "extracted_y": None, "distance": None}
    if (over := too_long(text)) is not None:
        return {**result, **over}
    m = _POINT.search(text)
    if gold is None or m is None:
        return result
    x, y = int(m.group(1)) / 1000.0, int(m.group(2)) / 1000.0
    distance = ((x - gold[0]) ** 2 + (y - gold[1]) ** 2) ** 0.5
    score = 0.0 if distance >= radius else (1.0 - distance / radius) ** 2
    return {"score": score, "extracted_x": x, "extracted_y": y, "distance": distance}
