"""Format check: required tags present, well formed, in order; optional answer after them; optional regex.

Claims no data source. The default checks the common reasoning format `<think>…</think>` followed by
a non-empty answer. Returns `{"score": 1.0 | 0.0, "passed": bool, "reasons": str}`; `reasons` lists
every failed check, separated by "; " ("" when the response passes), so a wrong format is never an
unexplained 0.

Keyword options (config `reward_kwargs`), each overridable per sample by the same key in `extra_info`:

- `required_tags` (["think"]): tag names; each must appear as `<tag>…</tag>`, opened before closed;
- `unique` (True): each required tag exactly once;
- `ordered` (True): the tags appear in the listed order, one closed before the next opens;
- `answer_after_tags` (True): non-blank text follows the last closing tag;
- `allow_text_before` (True): with False, the response (stripped) must start with the first tag —
  set it to False when the chat template does not already open `<think>` in the prompt;
- `pattern` (None): a regex the whole stripped response must match (DOTALL), checked in addition;
- `pass_score` (1.0), `fail_score` (0.0).
"""

from __future__ import annotations

import re
from typing import Any

from rewardfleet.reward_fns.judging.answers import require_str
from rewardfleet.reward_fns.judging.options import sample_option

__all__ = ["check_format", "compute_score"]

_TAG_NAME = re.compile(r"[A-Za-z_][\w.-]*")


def _tag_problems(text: str, tags: list[str], unique: bool, ordered: bool) -> tuple[list[str], int]:
    """Problems with the required tags, and the end index of the last closing tag (-1 if none)."""
    problems: list[str] = []
    spans: list[tuple[int, int]] = []
    for tag in tags:
        opening, closing = f"<{tag}>", f"</{tag}>"
        opens, closes = text.count(opening), text.count(closing)
        if opens == 0 or closes == 0:
            missing = " and ".join(t for t, n in ((opening, opens), (closing, closes)) if n == 0)
            problems.append(f"missing {missing}")
            continue
        if unique and (opens > 1 or closes > 1):
            problems.append(f"{opening} appears {opens} times and {closing} {closes} times (expected once)")
        start = text.find(opening)
        end = text.find(closing, start + len(opening))
        if end < 0:
            problems.append(f"{closing} comes before {opening}")
            continue
        spans.append((start, end + len(closing)))
    if ordered and len(spans) == len(tags):
        for before in range(len(tags) - 1):
            if spans[before + 1][0] < spans[before][1]:
                problems.append(f"<{tags[before + 1]}> must come after </{tags[before]}>")
    last_end = max((end for _, end in spans), default=-1)
    return problems, last_end


def check_format(
    text: str,
    *,
    required_tags: list[str],
    unique: bool = True,
    ordered: bool = True,
    answer_after_tags: bool = True,
    allow_text_before: bool = True,
    pattern: str | None = None,
) -> list[str]:
    """Every way `text` misses the format; empty when it passes."""
    for tag in required_tags:
        if not _TAG_NAME.fullmatch(tag):
            raise ValueError(f"required_tags holds {tag!r}, not a tag name (write 'think', not '<think>')")
    stripped = text.strip()
    problems, last_end = _tag_problems(stripped, required_tags, unique, ordered)
    if required_tags and not allow_text_before and not stripped.startswith(f"<{required_tags[0]}>"):
        problems.append(f"text before <{required_tags[0]}>")
    if answer_after_tags and required_tags and last_end >= 0 and not stripped[last_end:].strip():
        problems.append("no answer after the last closing tag")
    if pattern is not None and re.fullmatch(pattern, stripped, re.DOTALL) is None:
        problems.append(f"does not match pattern {pattern!r}")
    return problems


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: dict[str, Any] | None = None,
    *,
    required_tags: list[str] | tuple[str, ...] = ("think",),
    unique: bool = True,
    ordered: bool = True,
    answer_after_tags: bool = True,
    allow_text_before: bool = True,
    pattern: str | None = None,
    pass_score: float = 1.0,
    fail_score: float = 0.0,
) -> dict[str, Any]:
    """`pass_score` when the response has the required format, else `fail_score`, with the reasons."""
    text = require_str("solution_str", solution_str)
    tags = sample_option("required_tags", required_tags, extra_info, (list, tuple))
    problems = check_format(
        text,
        required_tags=[require_str("required_tags item", tag) for tag in tags],
        unique=sample_option("unique", unique, extra_info, bool),
        ordered=sample_option("ordered", ordered, extra_info, bool),
        answer_after_tags=sample_option("answer_after_tags", answer_after_tags, extra_info, bool),
        allow_text_before=sample_option("allow_text_before", allow_text_before, extra_info, bool),
        pattern=sample_option("pattern", pattern, extra_info, (str, type(None))),
    )
    passed = not problems
    return {
        "score": float(pass_score if passed else fail_score),
        "passed": passed,
        "reasons": "; ".join(problems),
    }
