"""GPQA-Diamond multiple choice, as NeMo Gym's `gpqa_diamond` server grades it: `mcqa` in its `gpqa` grading
mode (the last `\\boxed{...}` letter, else the last `Answer: X`; a task's `template_metadata.output_regex`
first). Fields and result as `mcqa`'s."""

from __future__ import annotations

from typing import Any

from rewardfleet.reward_fns import mcqa

__all__ = ["compute_score"]


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    grading_mode: str = "gpqa",
) -> dict[str, Any]:
    return mcqa.compute_score(data_source, solution_str, ground_truth, extra_info, grading_mode)
