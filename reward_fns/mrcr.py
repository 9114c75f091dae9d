"""OpenAI MRCR (multi-round coreference), as NeMo Gym's `mrcr` server grades it: 0 unless the response
starts with the task's `random_string_to_prepend`; else difflib's ratio of the response and the reference,
the prefix removed from both.

`ground_truth` is the reference (NeMo Gym's `expected_answer`); `extra_info["random_string_to_prepend"]`
the prefix. Returns `{"score", "prefix_matched", "seq_match_ratio"}`. difflib is quadratic: texts over
`max_chars` (50,000 by default) score 0 with a reason.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Any

from rewardfleet.reward_fns._task_text import TaskFieldError, too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["compute_score"]


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    max_chars: int = 50_000,
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str).strip()
    reference = require_str("ground_truth", ground_truth)
    prefix = (extra_info or {}).get("random_string_to_prepend")
    if not isinstance(prefix, str):
        raise TaskFieldError("extra_info['random_string_to_prepend'] must be a string")
    matched = text.startswith(prefix)
    result: dict[str, Any] = {"score": 0.0, "prefix_matched": matched, "seq_match_ratio": 0.0}
    if (over := too_long(text)) is not None:
        return {**result, **over}
    if not matched:
        return result
    if max(len(text), len(reference)) > max_chars:
        return {**result, "error_type": "response_too_long", "error_message": f"over {max_chars} chars"}
    ratio = float(SequenceMatcher(None, text.removeprefix(prefix), reference.removeprefix(prefix)).ratio())
    return {**result, "score": ratio, "seq_match_ratio": ratio}
