"""ARC-AGI grids, as NeMo Gym's `arc_agi` server grades them: the first grid of integers the response gives
in `\\boxed{[[...], ...]}` (else the first bare `[[...], ...]`), equal to the expected output grid.

`ground_truth` is the expected grid (NeMo Gym's `expected_output`, a list of lists of integers). Returns
`{"score", "predicted_output" (None when no grid parses), "extraction_successful"}`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rewardfleet.reward_fns._task_text import too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["compute_score", "parse_grid"]

_BOXED_GRID = re.compile(r"\\boxed\{(\[\s*\[[\d\s,\[\]]+\]\s*\])\}", re.S)
_GRID = re.compile(r"\[\s*\[[\d\s,\[\]]+\]\s*\]", re.S)
_SPACE = re.compile(r"\s+")


def _grid(candidate: str) -> list[list[int]] | None:
    try:
        value = json.loads(_SPACE.sub("", candidate))
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(row, list) and all(type(cell) is int for cell in row) for row in value):
        return None
    return value if value[0] else None


def parse_grid(text: str) -> list[list[int]] | None:
    """The first candidate that is a non-empty grid of integers (boxed candidates first)."""
    candidates = _BOXED_GRID.findall(text) or _GRID.findall(text)
    for candidate in candidates:
        if (grid := _grid(candidate)) is not None:
            return grid
    return None


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str)
    if not isinstance(ground_truth, list):
        raise TypeError(f"ground_truth must be a grid (a list of lists), got {type(ground_truth).__name__}")
    if (over := too_long(text)) is not None:
        return {**over, "predicted_output": None, "extraction_successful": False}
    grid = parse_grid(text.strip())
    score = 1.0 if grid is not None and grid == ground_truth else 0.0
    return {"score": score, "predicted_output": grid, "extraction_successful": grid is not None}
