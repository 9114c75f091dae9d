"""Scheduling a calendar, as NeMo Gym's `calendar` server grades it: the first JSON list of event objects in
the response is the calendar; 1 when it has exactly the expected events, none overlapping, each with the
expected duration, inside its window and meeting its constraint (`before T`, `after T`, `between T and U`,
`at T`; times as `14:30`, `2pm` or `2:30pm`).

`extra_info["exp_cal_state"]` is the expected state: `{event_id: {"duration", "min_time", "max_time",
"constraint"}}` (empty: any response without `<think>` passes). A response with `<think>` scores 0, as
does one whose events cannot be read. Returns `{"score", "reason"}` (`pass`, `think_found`, `no_json_list`,
`different_number_of_events`, `conflicting_events`, `constraint_violated`, `error_in_grading`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from rewardfleet.reward_fns._task_text import TaskFieldError, too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["compute_score", "grade"]

# the first [...] holding at least one {...}, objects without nested braces
_EVENTS = re.compile(r"\[(?:[^\[\]]|\{[^}]*\})*\{(?:[^\[\]]|\{[^}]*\})*\}(?:[^\[\]]|\{[^}]*\})*\]", re.S)
MAX_EVENTS = 1_000


def minutes(text: str) -> int:
    """Minutes after midnight of `14:30`, `2pm`, `2:30pm`, `12am` (ValueError otherwise)."""
    text = text.strip()
    half = "am" if "am" in text else "pm" if "pm" in text else None
    if half is None:
        hours, mins = map(int, text.split(":"))
        return hours * 60 + mins
    hour_text, _, minute_text = text.replace(half, "").partition(":")
    total = (int(hour_text) % 12) * 60 + (int(minute_text) if minute_text else 0)
    return total + (12 * 60 if half == "pm" else 0)


def _events(text: str) -> list[Any] | None:
    m = _EVENTS.search(text)
    if m is None:
        return None
    try:
        value = json.loads(m.group(0))
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, list) else None


def _span(event: Mapping[str, Any]) -> tuple[int, int]:
    start = minutes(event["start_time"])
    return start, start + event["duration"]


def _meets(event: Mapping[str, Any], want: Mapping[str, Any]) -> bool:
    if event["duration"] != want["duration"]:
        return False
    start, end = _span(event)
    if start < minutes(want["min_time"]) or end > minutes(want["max_time"]):
        return False
    rule = want["constraint"]
    if rule is None:
        return True
    if rule.startswith("before "):
        return end <= minutes(rule.removeprefix("before "))
    if rule.startswith("after "):
        return start >= minutes(rule.removeprefix("after "))
    if rule.startswith("between "):
        parts = rule.removeprefix("between ").split(" and ")
        if len(parts) != 2:
            raise ValueError(f"bad constraint {rule[:60]!r}")
        return start >= minutes(parts[0]) and end <= minutes(parts[1])
    if rule.startswith("at "):
        return start == minutes(rule.removeprefix("at "))
    return True


def grade(text: str, expected: Mapping[str, Any]) -> tuple[int, str]:
    if "<think>" in text:
        return 0, "think_found"
    if not expected:
        return 1, "pass"
    try:
        events = _events(text)
        if not events:
            return 0, "no_json_list"
        by_id = {str(e["event_id"]): e for e in events}
        if len(by_id) != len(expected):
            return 0, "different_number_of_events"
        for e in events:
            start, end = _span(e)
            if any(o != e and not (end <= _span(o)[0] or start >= _span(o)[1]) for o in events):
                return 0, "conflicting_events"
        if not all(_meets(by_id[event_id], want) for event_id, want in expected.items()):
            return 0, "constraint_violated"
    except (KeyError, TypeError, ValueError, AttributeError):
        return 0, "error_in_grading"
    return 1, "pass"


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any = None, extra_info: dict[str, Any] | None = None
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str)
    expected = (extra_info or {}).get("exp_cal_state")
    if not isinstance(expected, Mapping) or len(expected) > MAX_EVENTS:
        raise TaskFieldError(f"extra_info['exp_cal_state'] must be an object of at most {MAX_EVENTS} events")
    if (over := too_long(text)) is not None:
        return {**over, "reason": "response_too_long"}
    if not text:
        return {"score": 0.0, "reason": "empty_response"}
    score, reason = grade(text, expected)
    return {"score": float(score), "reason": reason}
