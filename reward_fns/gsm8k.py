"""GSM8K: the number after `####`, scored exactly as verl's `gsm8k` reward.

Only the last 300 characters of the response are searched (verl does the same for speed).

- `method="strict"` (verl's default): the last `#### <number>` wins; commas are dropped from it.
- `method="flexible"`: the last number-like run anywhere in the tail (`-?[0-9.,]+`) that is not a bare
  `.`; commas are **kept** (verl keeps them, so `1,000` does not equal `1000` in this mode).

The extracted string must equal `ground_truth` exactly (no numeric comparison, so `18.0 != 18`).
No answer found → 0.0; a wrong answer → `format_score` (0.0); right → `score` (1.0).
Deviation from verl, on invalid input only: a non-string `ground_truth` raises `TypeError` (verl
compares it to a string and silently scores it wrong).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from rewardfleet.reward_fns.judging.answers import require_str

DATA_SOURCES: tuple[str, ...] = ("openai/gsm8k",)

TAIL_CHARS = 300
_STRICT_ANSWER = re.compile(r"#### (-?[0-9.,]+)")
_NUMBER_RUN = re.compile(r"-?[0-9.,]+")


def extract_answer(solution_str: str, method: Literal["strict", "flexible"] = "strict") -> str | None:
    """The answer string verl's gsm8k would compare, or None when there is none."""
    tail = solution_str[-TAIL_CHARS:]
    if method == "strict":
        found = _STRICT_ANSWER.findall(tail)
        return found[-1].replace(",", "") if found else None
    if method == "flexible":
        runs = _NUMBER_RUN.findall(tail)
        if not runs:
            return None
        for run in reversed(runs):
            if run != ".":
                return str(run)
        # Every run was a bare ".": verl ends its search on the first one.
        return str(runs[0])
    raise ValueError(f"method must be 'strict' or 'flexible', got {method!r}")


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: dict[str, Any] | None = None,
    *,
    method: Literal["strict", "flexible"] = "strict",
    format_score: float = 0.0,
    score: float = 1.0,
) -> float:
    """1.0 (`score`) for the right answer, `format_score` for a wrong one, 0.0 for none."""
    answer = extract_answer(require_str("solution_str", solution_str), method)
    truth = require_str("ground_truth", ground_truth)
    if answer is None:
        return 0.0
    return float(score) if answer == truth else float(format_score)
