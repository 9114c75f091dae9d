"""PRIME math: the answer found by PRIME's rules, graded twice, scored exactly as verl's `numina_*` sources.

verl 0.9.1's `default_compute_score` scores `numina_aops_forum`, `numina_synthetic_math`, `numina_amc_aime`,
`numina_synthetic_amc`, `numina_cn_k12` and `numina_olympiads` with `prime_math.compute_score`: 1.0 when the
extracted answer is right, else 0.0.

Extraction (on the whole response): the text after the last "answer:" / "answer is" / "answers are"
(case-insensitive), before a last "is answer" / "is the answer" / "are (the) answers"; then the content
of the last `\\boxed{…}` (or `\\fbox{…}`) if any; then the part before the last ". "; then the text after
the last "be ", "is ", "are ", "=", ": ", "get " (or those words followed by a newline).
Grading: `rewardfleet.reward_fns._prime_math_grade.grade_answer`, then
`rewardfleet.reward_fns._prime_math_equal.math_equal` (twice, with π = `math.pi` and 3.14, when either side
mentions `\\pi`).

Returns `{"score", "acc", "pred"}`; verl reports only the score (its tuple's first element).
Deviations from verl: non-string arguments raise `TypeError` (verl `str()`s them); verl `eval`s answers
that mention `\\pi` and matrix answers, executing whatever the model wrote — here only arithmetic on
number literals is evaluated and only plain `Matrix(...)` answers are parsed, which gives verl's result for
every answer that is mathematics.
"""

from __future__ import annotations

import math
from typing import Any

from rewardfleet.reward_fns._prime_math_equal import math_equal
from rewardfleet.reward_fns._prime_math_grade import grade_answer
from rewardfleet.reward_fns.judging.answers import require_str

DATA_SOURCES: tuple[str, ...] = (
    *("numina_aops_forum", "numina_synthetic_math", "numina_amc_aime", "numina_synthetic_amc"),
    *("numina_cn_k12", "numina_olympiads"),
)

_AFTER = ("answer:", "answer is", "answers are")
_BEFORE = ("is answer", "is the answer", "are answers", "are the answers")
_LAST_AFTER = ("be ", "is ", "are ", "=", ": ", "get ", "be\n", "is\n", "are\n", ":\n", "get\n")


def last_boxed_content(text: str) -> str | None:
    """The stripped content of the last `\\boxed{…}` (else `\\fbox{…}`), braces balanced; None if open."""
    start = text.rfind("\\boxed")
    if start < 0:
        start = text.rfind("\\fbox")
        if start < 0:
            return None
    depth, left = 0, None
    for index in range(start, len(text)):
        if text[index] == "{":
            depth += 1
            if left is None:
                left = index
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return None if left is None else text[left + 1 : index].strip()
    return None


def _cut(response: str, marker: str, keep_after: bool) -> str | None:
    index = response.lower().rfind(marker)
    if index == -1:
        return None
    cut = response[index + len(marker) :] if keep_after else response[:index]
    cut = cut.strip()
    return cut[:-2] if cut.endswith("\n") else cut  # never true after strip(); kept as PRIME has it


def extract_answer(response: str) -> tuple[bool, str]:
    """(whether an answer was marked and holds a digit, the extracted answer)."""
    matched = False
    for markers, keep_after in ((_AFTER, True), (_BEFORE, False)):
        for marker in markers:
            cut = _cut(response, marker, keep_after)
            if cut is not None:
                matched, response = True, cut
    boxed = last_boxed_content(response)
    if boxed:
        matched, response = True, boxed
    if ". " in response:
        response = response[: response.lower().rfind(". ")].strip()
    for marker in _LAST_AFTER:
        cut = _cut(response, marker, True)
        if cut is not None:
            matched, response = True, cut
    return matched and any(c.isdigit() for c in response), response


def is_correct(answer: str, truth: str) -> bool:
    if grade_answer(answer, truth):
        return True
    try:
        if "\\pi" in answer or "\\pi" in truth:
            return any([math_equal(answer, truth, pi=pi) for pi in (math.pi, 3.14)])
        return math_equal(answer, truth)
    except Exception:  # verl: any failure in math_equal makes the answer wrong
        return False


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`{"score": 1.0 | 0.0, "acc": bool, "pred": the extracted answer}`."""
    text = require_str("solution_str", solution_str)
    truth = require_str("ground_truth", ground_truth)
    _, answer = extract_answer(text)
    correct = is_correct(answer, truth)
    return {"score": 1.0 if correct else 0.0, "acc": correct, "pred": answer}
