"""OpenAI GraphWalks, as NeMo Gym's `graphwalks` server grades it: the node list of
`Final Answer: [n1, n2, ...]` on the response's last non-empty line, scored by F1 against the reference set.

`ground_truth` is the reference: a JSON list of node names (NeMo Gym's `expected_answer`, read as it reads
it: `set(json.loads(...))`, the empty set when that fails). Both sets empty is 1; no `Final Answer` line
is 0 with `parse_failed`. Returns `{"score", "f1", "parse_failed", "predicted_nodes"}` (the nodes as
written, in order).
"""

from __future__ import annotations

import json
import re
from typing import Any

from rewardfleet.reward_fns._task_text import too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["compute_score", "parse_nodes"]

_FINAL = re.compile(r"Final Answer:\s*\[(.*)\]")


def parse_nodes(text: str) -> tuple[list[str], bool]:
    """`(nodes, parse_failed)` of the last non-empty line's `Final Answer: [...]`."""
    lines = [line for line in text.strip().split("\n") if line.strip()]
    m = _FINAL.search(lines[-1]) if lines else None
    if m is None:
        return [], True
    return [item.strip() for item in m.group(1).split(",") if item.strip()], False


def _reference(ground_truth: str) -> set[Any]:
    try:
        return set(json.loads(ground_truth))
    except (ValueError, TypeError, RecursionError):
        return set()


def _f1(predicted: set[Any], expected: set[Any]) -> float:
    if not predicted and not expected:
        return 1.0
    hits = len(predicted & expected)
    if hits == 0:
        return 0.0
    precision, recall = hits / len(predicted), hits / len(expected)
    return 2 * precision * recall / (precision + recall)


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str)
    expected = _reference(require_str("ground_truth", ground_truth))
    if (over := too_long(text)) is not None:
        return {**over, "f1": 0.0, "parse_failed": True, "predicted_nodes": []}
    nodes, failed = parse_nodes(text)
    f1 = 0.0 if failed else _f1(set(nodes), expected)
    return {"score": f1, "f1": f1, "parse_failed": failed, "predicted_nodes": nodes}
