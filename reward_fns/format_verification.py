"""Format checks as NeMo Gym's `format_verification` server makes them: a task's `verifier` decides.

`ground_truth` (else `extra_info["verifier"]`) is the verifier, a dict with `type`:

- `regex` / `inline_prose`: the response's lines (split on "\\n") that match any of `verify_regex` (a list of
  regexes, searched anywhere in the line) are counted, each line once; 1.0 when at least
  `verify_min_matches` (default 1) lines match;
- `string_match`: 1.0 when every `expected_markers` string appears in the response and no match of the
  `patterns` regexes is a string outside `expected_markers` (a spurious marker).

Returns `{"score": 1.0 | 0.0, "match_details": {...}}` with NeMo Gym's detail keys (`matching_lines`,
`min_matches`, `passed`; or `expected`, `missing`, `spurious`, `passed`). Claims no data source.

A verifier of another type, or with malformed fields, is a typed error (`TaskFieldError`) for the sample.
Regexes are bounded in count and length (_task_text.py); one that backtracks for long is stopped by the
function's `timeout_s`. A response over 1,000,000 characters scores 0 with a reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rewardfleet.reward_fns._task_text import TaskFieldError, task_patterns, too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["compute_score"]

MAX_MARKERS = 256
MAX_SPURIOUS = 64


def _strings(name: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value) or len(value) > MAX_MARKERS:
        raise TaskFieldError(f"verifier[{name!r}] must be a list of at most {MAX_MARKERS} strings")
    return value


def _regex_lines(text: str, verifier: Mapping[str, Any]) -> tuple[float, dict[str, Any]]:
    patterns = task_patterns("verifier['verify_regex']", verifier.get("verify_regex", []))
    minimum = verifier.get("verify_min_matches", 1)
    if isinstance(minimum, bool) or not isinstance(minimum, int):
        raise TaskFieldError("verifier['verify_min_matches'] must be an integer")
    lines = sum(1 for line in text.split("\n") if any(p.search(line) for p in patterns))
    passed = lines >= minimum
    return (1.0 if passed else 0.0), {"matching_lines": lines, "min_matches": minimum, "passed": passed}


def _markers(text: str, verifier: Mapping[str, Any]) -> tuple[float, dict[str, Any]]:
    expected = _strings("expected_markers", verifier.get("expected_markers", []))
    patterns = task_patterns("verifier['patterns']", verifier.get("patterns", []))
    missing = [m for m in expected if m not in text]
    allowed = set(expected)
    spurious: list[str] = []
    for pattern in patterns:
        for found in pattern.finditer(text):
            if found.group(0) not in allowed:
                spurious.append(found.group(0))
                if len(spurious) >= MAX_SPURIOUS:  # enough to fail; the list stays bounded
                    break
    passed = not missing and not spurious
    details = {"expected": expected, "missing": missing, "spurious": spurious, "passed": passed}
    return (1.0 if passed else 0.0), details


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str)
    verifier = ground_truth if ground_truth is not None else (extra_info or {}).get("verifier")
    if not isinstance(verifier, Mapping):
        raise TaskFieldError("the verifier (ground_truth, else extra_info['verifier']) must be a dict")
    kind = verifier.get("type", "")
    if (over := too_long(text)) is not None:
        return {**over, "match_details": {"passed": False}}
    if kind in ("regex", "inline_prose"):
        score, details = _regex_lines(text, verifier)
    elif kind == "string_match":
        score, details = _markers(text, verifier)
    else:
        raise TaskFieldError(
            f"verifier['type'] must be 'regex', 'inline_prose' or 'string_match', got {kind!r}"
        )
    return {"score": score, "match_details": details}
