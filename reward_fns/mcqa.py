"""Multiple choice: the answer letter the response commits to, in the formats NeMo Gym's `mcqa` server reads.

`ground_truth` is the correct letter (NeMo Gym's `expected_answer`). Task fields in `extra_info`:
`options` (a list of one-key dicts `{"A": "text"}`; their keys are the allowed letters, a null text drops
one), `grading_mode`, `template_metadata` (`{"output_regex": regex or list}`). Claims no data source.

Grading modes (keyword `grading_mode`, overridable per sample by `extra_info["grading_mode"]`):

- `strict_single_letter_boxed` (default): the first `\\boxed{...}` holding exactly one capital letter among
  non-letters (`\\boxed{B}`, `\\boxed{ (B) }`);
- `lenient_boxed`: that, else the one option whose text appears inside the first `\\boxed{...}` (lower-cased,
  whitespace collapsed, an outer `\\text{...}` removed); two matching options give no answer;
- `lenient_answer_colon`: the first `Answer: X` (any case): a single letter, or an option's exact text;
- `lenient_answer_colon_md`: `Answer: B` with markdown emphasis around the word (`**Answer:** B`);
- `gpqa` (NeMo Gym's `gpqa_diamond`): the last `\\boxed{...}`: a lone capital letter, else its last
  standalone capital letter; else the last `Answer: X` (markdown emphasis allowed). Without `options` any
  letter is allowed.

A task's `template_metadata.output_regex` is tried first: the last match of each regex (case-insensitive),
Arabic, Bengali and full-width letters read as A-D, taken as a letter or as an option's exact text.

Returns `{"score": 1.0 | 0.0, "extracted_answer": letter or None, "expected_answer": the gold letter}`: the
score is 1 only when a letter was found and equals the gold one. A blank response scores 0.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rewardfleet.reward_fns._task_text import TaskFieldError, task_patterns, too_long
from rewardfleet.reward_fns.judging.answers import require_str
from rewardfleet.reward_fns.judging.options import sample_option

__all__ = ["GRADING_MODES", "compute_score", "extract_letter"]

GRADING_MODES = (
    "strict_single_letter_boxed",
    "lenient_boxed",
    "lenient_answer_colon",
    "lenient_answer_colon_md",
    "gpqa",
)
MAX_OPTIONS = 64

# One capital letter inside \boxed{}, any non-letters around it.
_BOXED_LETTER = re.compile(r"\\boxed\{\s*[^A-Za-z]*([A-Z])[^A-Za-z]*\s*\}")
_BOXED = re.compile(r"\\boxed\{\s*(.*?)\s*\}", re.S)
_TEXT_WRAP = re.compile(r"\\text\{\s*(.*?)\s*\}", re.S)
_ANSWER_COLON = re.compile(r"answer\s*:\s*(.+)", re.I)
_GPQA_BOXED = re.compile(r"\\boxed\{([^}]*)\}", re.S)
_GPQA_LETTER = re.compile(r"\b([A-Z])\b")
_GPQA_ANSWER = re.compile(r"(?i)[*_]{0,2}Answer[*_]{0,2}\s*:[\s*_]{0,2}\s*([A-Z])(?![a-zA-Z0-9])")
_ANSWER_COLON_MD = re.compile(r"[*_]{0,2}Answer[*_]{0,2}\s*:[*_\s]{0,2}\s*([A-Z])(?![a-zA-Z0-9])", re.I)
# Letters of other scripts a model answers with, read as the Latin letter.
_FOREIGN_LETTERS = str.maketrans(
    {
        "أ": " A", "ب": " B", "ج": " C", "د": " D",
        "অ": " A", "ব": " B", "ড": " C", "ঢ": " D",
        "Ａ": " A", "Ｂ": " B", "Ｃ": " C", "Ｄ": " D",
    }
)  # fmt: skip


def _squash(text: str) -> str:
    return " ".join(text.lower().split())


def _unwrap_text(text: str) -> str:
    while (m := _TEXT_WRAP.fullmatch(text)) is not None:
        text = m.group(1)
    return text


def _options(value: Any) -> list[tuple[str, str]]:
    """`[(letter, text)]` of the task's options: single-letter keys with a string text, upper-cased."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_OPTIONS:
        raise TaskFieldError(f"extra_info['options'] must be a list of at most {MAX_OPTIONS} one-key dicts")
    out = []
    for entry in value:
        if not isinstance(entry, Mapping):
            raise TaskFieldError("extra_info['options'] entries must be dicts like {'A': 'text'}")
        for key, text in entry.items():
            if isinstance(key, str) and len(key) == 1 and key.isalpha() and isinstance(text, str):
                out.append((key.upper(), text))
    return out


def _by_text(candidate: str, options: list[tuple[str, str]]) -> str | None:
    wanted = _squash(candidate)
    for letter, text in options:
        if _squash(text) == wanted:
            return letter
    return None


def _from_template(text: str, regexes: Any, options: list[tuple[str, str]]) -> str | None:
    for pattern in task_patterns("extra_info['template_metadata']['output_regex']", regexes, re.I):
        found = pattern.findall(text)
        if not found:
            continue
        last = found[-1]
        if isinstance(last, tuple):  # several groups: the first non-empty one
            last = next((g for g in last if g), "")
        captured = last.strip().translate(_FOREIGN_LETTERS).strip().upper()
        if len(captured) == 1 and captured.isalpha():
            return captured  # a task's own regex is trusted for the letter, as NeMo Gym does
        letter = _by_text(captured, options)
        if letter is not None:
            return letter
    return None


def _gpqa_letter(text: str) -> str | None:
    boxed = _GPQA_BOXED.findall(text)
    if boxed:
        inner = boxed[-1].strip()
        if len(inner) == 1 and inner.isupper():
            return inner
        letters = _GPQA_LETTER.findall(inner)
        if letters:
            return letters[-1]
    answers = _GPQA_ANSWER.findall(text)
    return answers[-1].upper() if answers else None


def extract_letter(
    text: str, mode: str, options: list[tuple[str, str]], template_metadata: Any = None
) -> str | None:
    """The letter `text` answers with under `mode` (see the module docstring), or None."""
    allowed = {letter for letter, _ in options}
    if isinstance(template_metadata, Mapping) and "output_regex" in template_metadata:
        letter = _from_template(text, template_metadata["output_regex"], options)
        if letter is not None:
            return letter
    if mode in ("strict_single_letter_boxed", "lenient_boxed"):
        m = _BOXED_LETTER.search(text)
        if m is not None and m.group(1) in allowed:
            return m.group(1)
        if mode == "strict_single_letter_boxed":
            return None
        boxed = _BOXED.search(text)
        if boxed is None:
            return None
        inner = boxed.group(1)
        candidates = [_squash(inner), _squash(_unwrap_text(inner))]
        hits = {letter for letter, t in options if _squash(t) and any(_squash(t) in c for c in candidates)}
        return hits.pop() if len(hits) == 1 else None
    if mode == "lenient_answer_colon":
        m = _ANSWER_COLON.search(text)
        if m is None:
            return None
        candidate = _unwrap_text(m.group(1)).strip()
        if len(candidate) == 1 and candidate.isalpha() and candidate.upper() in allowed:
            return candidate.upper()
        return _by_text(candidate, options)
    if mode == "gpqa":
        letter = _gpqa_letter(text)
        return letter if letter is not None and (not allowed or letter in allowed) else None
    if mode == "lenient_answer_colon_md":
        m = _ANSWER_COLON_MD.search(text)
        if m is not None and m.group(1).upper() in allowed:
            return m.group(1).upper()
        return None
    raise TaskFieldError(f"grading_mode must be one of {', '.join(GRADING_MODES)}, got {mode!r}")


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    grading_mode: str = "strict_single_letter_boxed",
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str)
    info = extra_info or {}
    gold = ground_truth if ground_truth is not None else info.get("expected_answer")
    gold = require_str("ground_truth", "" if gold is None else gold).strip().upper()
    mode = grading_mode if info.get("grading_mode") is None else sample_option("grading_mode", "", info, str)
    options = _options(info.get("options"))
    result: dict[str, Any] = {"score": 0.0, "extracted_answer": None, "expected_answer": gold}
    if (over := too_long(text)) is not None:
        return {**result, **over}
    text = text.strip()
    if not text:
        return result
    letter = extract_letter(text, mode, options, info.get("template_metadata"))
    result["extracted_answer"] = letter
    result["score"] = 1.0 if letter is not None and gold and letter == gold else 0.0
    return result
