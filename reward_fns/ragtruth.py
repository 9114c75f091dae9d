"""RAGTruth hallucination detection, as NeMo Gym's `ragtruth` server grades it: the response is a JSON object
`{"hallucination list": [...]}` (reasoning in `<think>` blocks and a markdown fence removed first); a
non-empty list says "hallucinated", and 1 when that agrees with the gold label.

`ground_truth` is the gold label (NeMo Gym's `is_halu`: true / false or 1 / 0). `think_tag` names the
reasoning tag stripped (`think`). Returns `{"score", "is_halu", "pred_halu", "parse_fail"` (each 0 or 1),
`"extracted"` (the list as JSON, at most 500 characters; "" when there is none)}`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rewardfleet.reward_fns._task_text import TaskFieldError, too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["compute_score", "parse_response"]

_WHOLE_FENCE = re.compile(r"^```(?:json)?\s*\r?\n?(.*)\r?\n?```\s*$", re.S | re.I)
_INNER_FENCE = re.compile(r"```(?:json)?\s*\r?\n?(.*?)```", re.S | re.I)


def _strip_reasoning(text: str, tag: str) -> str:
    t = re.escape(tag)
    text = re.sub(rf"<{t}>.*?</{t}>", "", text, flags=re.S | re.I)
    text = re.sub(rf".*</{t}>\s*", "", text, flags=re.S | re.I)  # a closing tag alone: all before it goes
    return re.sub(rf"<{t}>\s*", "", text, flags=re.I).strip()


def _strip_fence(text: str) -> str:
    if "```" not in text:
        return text
    s = text.strip()
    if (whole := _WHOLE_FENCE.match(s)) is not None:
        return whole.group(1).strip()
    inner = _INNER_FENCE.search(s)
    return inner.group(1).strip() if inner is not None and inner.group(1).strip() else s


def parse_response(text: str, think_tag: str = "think") -> dict[str, Any] | None:
    """The response's JSON object, or None when it is not one."""
    cleaned = _strip_fence(_strip_reasoning(text, think_tag)) if text else ""
    if not cleaned:
        return None
    try:
        value = json.loads(cleaned)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    think_tag: str = "think",
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str)
    if not isinstance(ground_truth, bool | int) or ground_truth not in (0, 1):
        raise TaskFieldError("ground_truth (is_halu) must be true / false or 1 / 0")
    gold = int(bool(ground_truth))
    if (over := too_long(text)) is not None:
        return {**over, "is_halu": gold, "pred_halu": 0, "parse_fail": 1, "extracted": ""}
    parsed = parse_response(text, think_tag)
    listed = parsed.get("hallucination list") if parsed is not None else None
    pred = int(isinstance(listed, list) and len(listed) > 0)
    extracted = json.dumps(listed, ensure_ascii=False)[:500] if isinstance(listed, list) else ""
    return {
        "score": 1.0 if pred == gold else 0.0,
        "is_halu": gold,
        "pred_halu": pred,
        "parse_fail": int(parsed is None),
        "extracted": extracted,
    }
