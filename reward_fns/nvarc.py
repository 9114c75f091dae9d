"""ARC-AGI grids answered directly, as NeMo Gym's `nvarc` server grades them in its transductive mode.

The response (`<think>...</think>` blocks removed) is read as a grid: the inside of `\\boxed{...}` (from
the first `\\boxed{` to the last `}`) when there is one, else the whole text; every character that is
neither a word character nor whitespace is dropped, then each line's whitespace-separated tokens that are a
single digit 0-9 form a row (other tokens are dropped; lines left empty are skipped). A grid whose rows
differ in length, or no row at all, is no extraction. The score is 1 when the grid equals the expected one.

`ground_truth` is the expected grid (NeMo Gym's `expected_output`: a list of rows of integers).
`extra_info["agent_mode"]` `inductive` (the response is a `transform()` program NeMo Gym runs) is refused
with a `TaskFieldError`: running programs is not mapped here. Returns `{"score", "predicted_output" (None
when no grid was read), "extraction_successful", "exact_match"}`. The gateway's response text joins an
answer's text parts without a separator (NeMo Gym's nvarc joins them with a newline): the same for
one-part answers, which is what its rows hold.
"""

from __future__ import annotations

import re
from typing import Any

from rewardfleet.reward_fns._task_text import TaskFieldError, too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["compute_score", "parse_grid"]

_THINK = re.compile(r"<think>.*?</think>", re.S)
_BOXED = re.compile(r"\\boxed\{(.+)\}", re.S)
_NEITHER_WORD_NOR_SPACE = re.compile(r"[^\s\w]")
_CELLS = frozenset("0123456789")
MAX_GRID_CELLS = 1_000_000


def parse_grid(text: str) -> list[list[int]] | None:
    """The grid the response states, or None."""
    text = _THINK.sub("", text).strip()
    if (boxed := _BOXED.search(text)) is not None:
        text = boxed.group(1)
    text = _NEITHER_WORD_NOR_SPACE.sub("", text)
    rows = [row for line in text.split("\n") if (row := [int(t) for t in line.split() if t in _CELLS])]
    if not rows or any(len(row) != len(rows[0]) for row in rows):
        return None
    return rows


def _expected(ground_truth: Any) -> list[list[int]]:
    grid = ground_truth
    ok = isinstance(grid, list) and all(
        isinstance(row, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in row)
        for row in grid
    )
    if not ok:
        raise TaskFieldError("ground_truth (expected_output) must be a list of rows of integers")
    if sum(len(row) for row in grid) > MAX_GRID_CELLS:
        raise TaskFieldError(f"ground_truth (expected_output) has over {MAX_GRID_CELLS} cells")
    return grid


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str)
    expected = _expected(ground_truth)
    mode = (extra_info or {}).get("agent_mode") or "transductive"
    if mode != "transductive":
        raise TaskFieldError(
            f"extra_info.agent_mode {str(mode)[:40]!r}: only transductive is scored here (inductive runs the"
            " response's transform() program, which this function does not)"
        )
    if (over := too_long(text)) is not None:
        return {**over, "predicted_output": None, "extraction_successful": False, "exact_match": False}
    grid = parse_grid(text)
    match = grid is not None and grid == expected
    return {
        "score": 1.0 if match else 0.0,
        "predicted_output": grid,
        "extraction_successful": grid is not None,
        "exact_match": match,
    }
