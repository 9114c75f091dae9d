"""Rule-based equivalence with a reference answer, as NeMo Gym's `equivalence_rule` server grades it.

Both texts are normalised (stripped, lower-cased, whitespace runs collapsed to one space), then compared by
`grading_rule` (keyword, overridable per sample by `extra_info["grading_rule"]`):

- `exact` (default): 1.0 when equal, else 0.0 (what the `exact_match` built-in does with its defaults, kept
  here so a NeMo Gym task maps to one function);
- `seq_match`: difflib's `SequenceMatcher` ratio, in [0, 1];
- `weighted_seq_match`: 0.85 × that ratio + 0.15 × the ratio of the response's first characters against the
  reference's first 10, clipped to [0, 1].

`ground_truth` is the reference (NeMo Gym's `expected_answer`). Returns `{"score", "equivalence_score"}`.
difflib is quadratic: texts over `max_chars` (10,000 by default) score 0 with a reason under the two
similarity rules rather than tie up a worker.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import Any

from rewardfleet.reward_fns._task_text import TaskFieldError, too_long
from rewardfleet.reward_fns.judging.answers import require_str
from rewardfleet.reward_fns.judging.options import sample_option

__all__ = ["RULES", "compute_score", "grade"]

RULES = ("exact", "seq_match", "weighted_seq_match")
_SPACES = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACES.sub(" ", text.strip().lower())


def _ratio(a: str, b: str) -> float:
    return float(SequenceMatcher(None, a, b).ratio())


def grade(response: str, reference: str, rule: str) -> float:
    got, want = _norm(response), _norm(reference)
    if rule == "exact":
        return 1.0 if got == want else 0.0
    if rule == "seq_match":
        return _ratio(got, want)
    if rule == "weighted_seq_match":
        head = want[:10]
        return max(0.0, min(1.0, 0.85 * _ratio(got, want) + 0.15 * _ratio(got[: len(head)], head)))
    raise TaskFieldError(f"grading_rule must be one of {', '.join(RULES)}, got {rule!r}")


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    grading_rule: str = "exact",
    max_chars: int = 10_000,
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str)
    reference = require_str("ground_truth", ground_truth)
    rule = sample_option("grading_rule", grading_rule, extra_info, str)
    if (over := too_long(text)) is not None:
        return {**over, "equivalence_score": 0.0}
    if rule != "exact" and max(len(text), len(reference)) > max_chars:
        return {"score": 0.0, "equivalence_score": 0.0, "error_type": "response_too_long"}
    score = grade(text, reference, rule)
    return {"score": score, "equivalence_score": score}
