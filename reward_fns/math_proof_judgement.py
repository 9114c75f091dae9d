"""Math proof judgement, as NeMo Gym's `math_proof_judgement` server grades it: the policy judges a proof,
and its verdict is the first `Judgement: Yes` / `Judgement: No` of the response (`**Judgement**:` too, any
case; the word after it must start with yes or no).

`ground_truth` is the gold verdict in the same form (NeMo Gym's `expected_judgement`, e.g. `"Judgement:
Yes"`). Returns `{"score" (1 when both parse and agree), "extracted_judgement" ("Yes", "No" or None), "tp",
"fp", "fn", "tn"}` (a one-hot confusion cell, all 0 when either side does not parse).
"""

from __future__ import annotations

import re
from typing import Any

from rewardfleet.reward_fns._task_text import too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["compute_score", "parse_judgement"]

_PREFIX = re.compile(r"\*{0,2}Judgement\*{0,2}\s*:", re.I)


def parse_judgement(text: str) -> bool | None:
    """True for Yes, False for No, None when there is no valid verdict."""
    m = _PREFIX.search(text)
    if m is None:
        return None
    word = text[m.end() :].strip().lstrip("*").strip().lower()
    if word.startswith("yes"):
        return True
    if word.startswith("no"):
        return False
    return None


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str)
    gold = parse_judgement(require_str("ground_truth", ground_truth))
    cells = {"tp": 0.0, "fp": 0.0, "fn": 0.0, "tn": 0.0}
    if (over := too_long(text)) is not None:
        return {**over, "extracted_judgement": None, **cells}
    pred = parse_judgement(text.strip())
    if pred is not None and gold is not None:
        cells[("t" if pred == gold else "f") + ("p" if pred else "n")] = 1.0
    label = None if pred is None else ("Yes" if pred else "No")
    score = 1.0 if pred is not None and pred == gold else 0.0
    return {"score": score, "extracted_judgement": label, **cells}
