"""Bounds shared by the task-checking built-ins (mcqa, json_schema, format_verification, equivalence_rule).

The response is the policy's and hostile; task fields (options, schemas, regexes) come with the sample and
are bounded too. A response over `MAX_RESPONSE_CHARS` scores 0 with a reason (the policy made it so); a task
field over its bound is a `TaskFieldError` (the sample's data is unusable: a typed error, never a score).
Regexes a task supplies are compiled here, length-bounded; what still backtracks for long is stopped by the
function's `timeout_s` (sync built-ins run in worker processes that are killed and replaced).
"""

from __future__ import annotations

import re
from typing import Any

MAX_RESPONSE_CHARS = 1_000_000
MAX_PATTERN_CHARS = 2_000
MAX_PATTERNS = 64


class TaskFieldError(ValueError):
    """A task field of the sample is missing, of the wrong type or over its bound; the message names it."""


def task_patterns(name: str, value: Any, flags: int = 0) -> list[re.Pattern[str]]:
    """`value` (a regex or a list of them) compiled, bounded in count and length."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(p, str) for p in items):
        raise TaskFieldError(f"{name} must be a regex string or a list of them")
    if len(items) > MAX_PATTERNS:
        raise TaskFieldError(f"{name} has {len(items)} patterns; at most {MAX_PATTERNS}")
    compiled = []
    for i, pattern in enumerate(items):
        if len(pattern) > MAX_PATTERN_CHARS:
            raise TaskFieldError(f"{name}[{i}] is {len(pattern)} characters; at most {MAX_PATTERN_CHARS}")
        try:
            compiled.append(re.compile(pattern, flags))
        except (re.error, RecursionError, OverflowError) as exc:
            raise TaskFieldError(f"{name}[{i}] is not a valid regex: {exc}") from None
    return compiled


def too_long(text: str) -> dict[str, Any] | None:
    """The zero result for a response over `MAX_RESPONSE_CHARS`, else None."""
    if len(text) <= MAX_RESPONSE_CHARS:
        return None
    return {
        "score": 0.0,
        "error_type": "response_too_long",
        "error_message": f"over {MAX_RESPONSE_CHARS} chars",
    }
