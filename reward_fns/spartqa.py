"""SpartQA choose-object questions, as NeMo Gym's `spartqa` server grades them: the response's answer
(the last `Final answer:` line, else `Selected answer:`, `Answer:`, `the answer is ...`; reasoning blocks
removed) resolved to one of four labels: the two objects, `both of them`, `none of them`.

A label matches when it equals the answer (case, punctuation and a leading article ignored), when the
answer is an alias of both / none (`neither`, `both objects`, ...), or when it is the only label the answer
contains (a label inside another hit does not count): an answer naming two labels resolves to nothing.

`ground_truth` is the gold label (NeMo Gym's `target`); `extra_info["options"]` the two objects (or
`extra_info["verifier_metadata"]["options"]`). Returns `{"score", "exact" (the gold copied verbatim),
"parsed" (an answer was found), "extracted" (its first 200 characters), "predicted_label"}`.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

from rewardfleet.reward_fns._task_text import TaskFieldError, too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["compute_score", "extract_answer", "match_label"]

BOTH, NONE = "both of them", "none of them"
_BOTH = {"both", "both of them", "both objects", "both of the objects", "both of these"}
_NONE = {"none", "none of them", "none of the objects", "neither", "neither of them", "neither object",
         "no object", "dk", "do not know", "dont know"}  # fmt: skip
_PUNCT = str.maketrans("", "", string.punctuation)
_LEAD = r"(?:^|\n)\s*(?:[*_`#>\-\s]*)"
_PATTERNS = [
    re.compile(_LEAD + r"final\s+answer(?:\s+is)?\s*(?:[*_`\s])*[:\-]\s*(.+)", re.I | re.M),
    re.compile(_LEAD + r"selected\s+answer(?:\s+is)?\s*(?:[*_`\s])*[:\-]\s*(.+)", re.I | re.M),
    re.compile(_LEAD + r"answer(?:\s+is)?\s*(?:[*_`\s])*[:\-]\s*(.+)", re.I | re.M),
    re.compile(
        r"\b(?:the\s+)?(?:final\s+)?answer\s+(?:is|would\s+be|should\s+be)\s*[:\-]?\s*(.+)", re.I | re.M
    ),
    re.compile(r"\bselected\s+(?:option|answer)\s+(?:is|would\s+be)\s*[:\-]?\s*(.+)", re.I | re.M),
]
_THINK = re.compile(r"<think>.*?</think>", re.I | re.S)
_CHANNEL = re.compile(r"<\|channel\>thought\s*.*?<channel\|>", re.I | re.S)


def _norm(text: str) -> str:
    return " ".join(text.strip().lower().translate(_PUNCT).split())


def _key(text: str) -> str:
    return re.sub(r"^(?:a|an|the)\s+", "", _norm(text)).strip()


def _clean(line: str) -> str:
    line = re.sub(r"^[-*•\s]+", "", line.strip())
    line = re.sub(r"^\*+|\*+$", "", line).strip()
    line = re.sub(r"</?think>", "", line, flags=re.I).strip()
    return line.strip().strip("\"'` ")


def extract_answer(text: str) -> str:
    """The answer the response commits to (see the module docstring); "" when none."""
    text = _CHANNEL.sub("", _THINK.sub("", text)).strip()
    found = None
    for pattern in _PATTERNS:
        hits = [
            c for m in pattern.finditer(text) if (c := m.group(1).strip()) and _norm(c) != "candidate answer"
        ]
        if hits:
            found = hits[-1]
            break
    lines = [_clean(line) for line in (found if found is not None else text).splitlines() if line.strip()]
    lines = [line for line in lines if line and _norm(line) not in {"final answer", "answer"}]
    if not lines:
        return ""
    preamble = ("thinking process", "analysis", "the user wants", "we need")
    if found is None and len(lines) > 1 and _norm(lines[0]).startswith(preamble):
        return lines[-1]
    return lines[0]


def _labels(options: list[str]) -> list[str]:
    labels, seen = [], set()
    for label in [*options, BOTH, NONE]:
        key = _key(str(label))
        if key and key not in seen:
            seen.add(key)
            labels.append(str(label).strip())
    return labels


def match_label(prediction: str, labels: list[str]) -> str | None:
    key = _key(prediction)
    if not key:
        return None
    by_key = {_key(label): label for label in labels}
    if key in by_key:
        return by_key[key]
    if key in _BOTH and BOTH in by_key.values():
        return by_key[_key(BOTH)]
    if key in _NONE and NONE in by_key.values():
        return by_key[_key(NONE)]
    hits = [k for k in by_key if k and k in key]
    hits = [h for h in hits if not any(other != h and h in other for other in hits)]
    return by_key[hits[0]] if len(hits) == 1 else None


def _options(info: Mapping[str, Any]) -> list[str]:
    meta = info.get("verifier_metadata")
    options = info.get("options") or (meta.get("options") if isinstance(meta, Mapping) else None) or []
    if not isinstance(options, list) or len(options) > 16 or not all(isinstance(o, str) for o in options):
        raise TaskFieldError("extra_info['options'] must be a list of at most 16 strings")
    return options


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str)
    gold = require_str("ground_truth", ground_truth)
    options = _options(extra_info or {})
    if (over := too_long(text)) is not None:
        return {**over, "exact": False, "parsed": False, "extracted": "", "predicted_label": ""}
    prediction = extract_answer(text)
    predicted = match_label(prediction, _labels(options or [gold]))
    gold_key = _key(gold)
    correct = bool(gold_key) and predicted is not None and _key(predicted) == gold_key
    return {
        "score": 1.0 if correct else 0.0,
        "exact": correct and _key(prediction) == gold_key,
        "parsed": bool(_norm(prediction)),
        "extracted": prediction[:200],
        "predicted_label": predicted or "",
    }
