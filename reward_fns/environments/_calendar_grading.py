"""How NeMo Gym's `calendar` server grades a proposed calendar: the rules, written from its `utils.py`.

The answer's first JSON list of event objects is the calendar. It passes when it has exactly the expected
events (by `event_id`), no two of them overlap, and each has its expected duration, sits inside its
`[min_time, max_time]` window and meets its constraint (`before T`: ends by T; `after T`: starts at or
after T; `between A and B`; `at T`: starts at T). Times are `HH:MM` or `10am` / `2:15pm`. Anything the
rules cannot read (a missing key, an unparseable time) fails the answer, as upstream.

The list is found with NeMo Gym's own pattern, whose nested alternation backtracks exponentially on some
inputs; it runs on the `regex` module with a time limit (`MATCH_TIMEOUT_S`), and an answer that exhausts it
fails with the reason `json_list_search_timed_out` instead of holding a worker.
"""

from __future__ import annotations

import json
from typing import Any

MATCH_TIMEOUT_S = 0.5
_EVENT_LIST = r"\[(?:[^\[\]]|\{[^}]*\})*\{(?:[^\[\]]|\{[^}]*\})*\}(?:[^\[\]]|\{[^}]*\})*\]"


class Ungradable(Exception):
    """The answer's calendar cannot be read by the rules (NeMo Gym's `error_in_grading`)."""


def minutes(text: str) -> int:
    """Minutes after midnight of `HH:MM`, `10am` or `2:15pm`."""
    text = text.strip()
    for suffix, offset in (("am", 0), ("pm", 12 * 60)):
        if suffix in text:
            clock = text.replace(suffix, "")
            hour, minute = (int(part) for part in clock.split(":")) if ":" in clock else (int(clock), 0)
            return (0 if hour == 12 else hour * 60) + offset + minute
    hour_text, minute_text = text.split(":")
    return int(hour_text) * 60 + int(minute_text)


def first_event_list(text: str) -> list[Any] | None:
    """The first JSON list holding an object in `text`; None when there is none or it is not JSON.

    Raises TimeoutError when the search exceeds `MATCH_TIMEOUT_S`.
    """
    import regex  # the `environments` extra: a time-limited search

    found = regex.search(_EVENT_LIST, text, regex.DOTALL, timeout=MATCH_TIMEOUT_S, concurrent=True)
    if found is None:
        return None
    try:
        parsed = json.loads(found.group(0))
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, list) else None


def _span(event: dict[str, Any]) -> tuple[int, int]:
    start = minutes(event["start_time"])
    return start, start + event["duration"]


def _overlaps(events: list[Any], event: dict[str, Any]) -> bool:
    start, end = _span(event)
    for other in events:
        if other == event:  # itself, or an identical copy of it: NeMo Gym skips both
            continue
        other_start, other_end = _span(other)
        if not (end <= other_start or start >= other_end):
            return True
    return False


def _meets(event: dict[str, Any], expected: dict[str, Any]) -> bool:
    if event["duration"] != expected["duration"]:
        return False
    start, end = _span(event)
    if start < minutes(expected["min_time"]) or end > minutes(expected["max_time"]):
        return False
    constraint = expected["constraint"]
    if constraint is None:
        return True
    if constraint.startswith("before "):
        return end <= minutes(constraint.removeprefix("before "))
    if constraint.startswith("after "):
        return start >= minutes(constraint.removeprefix("after "))
    if constraint.startswith("between "):
        bounds = constraint.removeprefix("between ").split(" and ")
        if len(bounds) != 2:
            raise Ungradable(f"constraint {constraint!r} is not 'between A and B'")
        return start >= minutes(bounds[0]) and end <= minutes(bounds[1])
    if constraint.startswith("at "):
        return start == minutes(constraint.removeprefix("at "))
    return True


def grade(answer: str, expected: dict[str, dict[str, Any]]) -> tuple[float, str]:
    """(reward, reason) of an answer against the expected events, keyed by event id."""
    if "<think>" in answer:
        return 0.0, "think_found"
    if not expected:
        return 1.0, "pass"
    try:
        events = first_event_list(answer)
    except TimeoutError:
        return 0.0, "json_list_search_timed_out"
    if not events:
        return 0.0, "no_json_list"
    try:
        by_id = {str(event["event_id"]): event for event in events}
        if len(by_id) != len(expected):
            return 0.0, "different_number_of_events"
        if any(_overlaps(events, event) for event in events):
            return 0.0, "conflicting_events"
        if not all(_meets(by_id[event_id], wanted) for event_id, wanted in expected.items()):
            return 0.0, "constraint_violated"
    except (Ungradable, KeyError, TypeError, ValueError, AttributeError):
        return 0.0, "error_in_grading"
    return 1.0, "pass"
