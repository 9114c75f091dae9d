"""RULER v2 long-context answers, as NeMo Gym's `ruler2` server grades them.

`extra_info["eval_type"]`: `ruler2` (default) scores each reference by `max(1 if it is a substring of the
response, 1 - word error rate)` (both lower-cased) and combines them by `match_type`: `all` (the mean),
`part` (the best, after removing `Document N:` blocks from the response), `2steps` (the mean, on the last
paragraph only). `multichoice` reads a letter (the last `The final answer is ...` line, else the last
`\\boxed{...}`, then its last standalone capital; else the last `Answer: X`) and compares it with the gold.

`ground_truth` is the reference list (or the gold letter; NeMo Gym's `expected_answer`). Returns `{"score",
"predicted_answer" (the response, control characters as newlines), "extracted_answer" (the letter; None for
ruler2)}`. The word error rate is quadratic in words: a response of a million characters is the bound.
"""

from __future__ import annotations

import re
from typing import Any

from rewardfleet.reward_fns._task_text import TaskFieldError, too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["compute_score", "mcq_letter", "soft_match"]

_CONTROL = re.compile(r"[\x00-\x1f]")
_DOCUMENT = re.compile(r"Document \d+:(?:.*\n)+?\n")
_FINAL = re.compile(r"The final answer is (.+)$", re.M)
_TAIL_LETTER = re.compile(r"\b[A-Z]\b(?!.*\b[A-Z]\b)", re.S)
_ANSWER = re.compile(r"(?i)[*_]{0,2}Answer[*_]{0,2}\s*:[\s*_]{0,2}\s*([A-Z])(?![a-zA-Z0-9])")
_GLYPHS = str.maketrans({"أ": " A", "ب": " B", "ج": " C", "د": " D", "অ": " A", "ব": " B", "ড": " C",
                         "ঢ": " D", "Ａ": " A", "Ｂ": " B", "Ｃ": " C", "Ｄ": " D"})  # fmt: skip
MAX_REFERENCES = 1_000


def _word_edits(a: list[str], b: list[str]) -> int:
    previous = list(range(len(b) + 1))
    for i, word in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (word != other)))
        previous = current
    return previous[-1]


def soft_match(prediction: str, reference: str) -> float:
    """`max(substring, 1 - WER)`, both lower-cased (WER of an empty reference is infinite)."""
    p, r = prediction.lower(), reference.lower()
    words = r.split()
    wer = _word_edits(p.split(), words) / len(words) if words else float("inf")
    return max(1.0 if r in p else 0.0, 1.0 - wer)


def _last_boxed(text: str) -> str | None:
    start = text.rfind("\\boxed")
    if start < 0:
        return None
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                whole = text[start : i + 1]
                return whole[len("\\boxed{") : -1] if whole.startswith("\\boxed{") else None
    return None


def mcq_letter(text: str) -> str | None:
    finals = _FINAL.findall(text)
    extracted = finals[-1] if finals else _last_boxed(text)
    letter = None
    if extracted is not None:
        extracted = extracted.translate(_GLYPHS).strip()
        if len(extracted) == 1:
            letter = extracted.upper()
        elif tail := _TAIL_LETTER.findall(extracted):
            letter = tail[-1].strip().upper()
    if letter is None and (answers := _ANSWER.findall(text)):
        letter = answers[-1].strip().upper()
    return letter


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str)
    info = extra_info or {}
    eval_type, match_type = info.get("eval_type") or "ruler2", info.get("match_type") or "all"
    result: dict[str, Any] = {"score": 0.0, "predicted_answer": _CONTROL.sub("\n", text.strip()).strip(),
                              "extracted_answer": None}  # fmt: skip
    if (over := too_long(text)) is not None:
        return {**result, **over}
    if eval_type == "multichoice":
        letter = mcq_letter(text)
        gold = "" if ground_truth is None else str(ground_truth).strip().upper()
        return {
            **result,
            "score": 1.0 if letter is not None and letter == gold else 0.0,
            "extracted_answer": letter,
        }
    if eval_type != "ruler2" or match_type not in ("all", "part", "2steps"):
        raise TaskFieldError(
            "extra_info: eval_type must be ruler2 or multichoice, match_type all, part or 2steps"
        )
    refs = [str(r) for r in ground_truth] if isinstance(ground_truth, list) else [str(ground_truth)]
    if not refs or len(refs) > MAX_REFERENCES:
        raise TaskFieldError(f"ground_truth must hold 1 to {MAX_REFERENCES} references")
    if match_type == "part":
        best = max(soft_match(_DOCUMENT.sub("", text), r) for r in refs)
        return {**result, "score": float(best)}
    scored = text.split("\n\n")[-1] if match_type == "2steps" else text
    return {**result, "score": float(sum(soft_match(scored, r) for r in refs) / len(refs))}
