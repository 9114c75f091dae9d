"""A choice letter in a `<solution>` block, as NeMo Gym's `swerl_llm_judge` server grades it (the policy
judges which candidate patch is right): 1 when the letter is one of the gold letters.

`ground_truth` is the gold letter or a list of them (NeMo Gym's `expected_answer`; entries that are not
one letter are ignored). `extra_info`: `options` (one-key dicts `{"A": ...}`: the first key of each is an
allowed letter; without options no letter is allowed, as there), `grading_mode` (`lenient`, default: the
first standalone letter of the last `<solution>` block; `strict`: the first `<solution>` block holding
only a letter, brackets allowed). A letter not allowed is no answer. Returns `{"score", "extracted_answer",
"expected_answer" (the allowed gold letter, or the list of them when not exactly one)}`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rewardfleet.reward_fns._task_text import TaskFieldError, too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["compute_score"]

MAX_OPTIONS = 64
_BLOCK = re.compile(r"<solution>\s*(.*?)\s*</solution>", re.S | re.I)
_STRICT = re.compile(r"<solution>\s*\[?([A-Za-z])\]?\s*</solution>", re.M)


def _allowed(options: Any) -> set[str]:
    if options is None:
        return set()
    if not isinstance(options, list) or len(options) > MAX_OPTIONS:
        raise TaskFieldError(f"extra_info['options'] must be a list of at most {MAX_OPTIONS} one-key dicts")
    letters = set()
    for entry in options:
        if not isinstance(entry, Mapping):
            raise TaskFieldError("extra_info['options'] entries must be dicts like {'A': 'text'}")
        first = next(iter(entry), None)
        if isinstance(first, str) and len(first) == 1 and first.isalpha():
            letters.add(first.upper())
    return letters


def _golds(ground_truth: Any) -> list[str]:
    raw = [ground_truth] if isinstance(ground_truth, str) else ground_truth
    if not isinstance(raw, list | tuple):
        return []
    out: list[str] = []
    for item in raw:
        if isinstance(item, str) and len(s := item.strip().upper()) == 1 and s.isalpha() and s not in out:
            out.append(s)
    return out


def _lenient(text: str, allowed: set[str]) -> str | None:
    blocks = list(_BLOCK.finditer(text))
    content = blocks[-1].group(1).strip() if blocks else ""
    for i, ch in enumerate(content):
        if not ch.isalpha():
            continue
        left = content[i - 1] if i > 0 else ""
        right = content[i + 1] if i + 1 < len(content) else ""
        if not left.isalpha() and not right.isalpha():
            return ch.upper() if ch.upper() in allowed else None
    return None


def _strict(text: str, allowed: set[str]) -> str | None:
    m = _STRICT.search(text)
    return m.group(1).upper() if m is not None and m.group(1).upper() in allowed else None


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str).strip()
    info = extra_info or {}
    allowed = _allowed(info.get("options"))
    mode = info.get("grading_mode") or "lenient"
    if mode not in ("lenient", "strict"):
        raise TaskFieldError(f"extra_info['grading_mode'] must be lenient or strict, got {str(mode)[:40]!r}")
    golds = [g for g in _golds(ground_truth) if not allowed or g in allowed]
    expected: str | list[str] = golds[0] if len(golds) == 1 else golds
    if (over := too_long(text)) is not None:
        return {**over, "extracted_answer": None, "expected_answer": expected}
    choice = _lenient(text, allowed) if mode == "lenient" else _strict(text, allowed)
    score = 1.0 if choice is not None and choice in golds else 0.0
    return {"score": score, "extracted_answer": choice, "expected_answer": expected}
