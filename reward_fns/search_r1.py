"""Search-R1 QA: exact match of the last `<answer>…</answer>`, scored exactly as verl's `searchR1_*` sources.

verl 0.9.1's `default_compute_score` scores `searchR1_nq`, `searchR1_triviaqa`, `searchR1_popqa`,
`searchR1_hotpotqa`, `searchR1_2wikimultihopqa`, `searchR1_musique` and `searchR1_bamboogle` with
`search_r1_like_qa_em.compute_score` (strict exact match):

- the answer is the text of the last `<answer>…</answer>` (across lines), stripped; none → 0.0;
- answer and every accepted answer are normalised (lower-cased, ASCII punctuation dropped, the words
  a/an/the dropped, whitespace collapsed); equal to any → `score` (1.0), but a quarter of it when the
  response holds more than 10 `<answer>` or `</answer>` tags; otherwise `format_score` (0.0).

`ground_truth` is `{"target": answer or [answers]}` as in Search-R1's data. Deviation from verl, on invalid
input only: a ground truth without string answers raises `TypeError`/`ValueError` (verl raises or scores 0).
"""

from __future__ import annotations

import re
import string
from typing import Any

from rewardfleet.reward_fns.judging.answers import accepted_answers, require_str

DATA_SOURCES: tuple[str, ...] = (
    *("searchR1_nq", "searchR1_triviaqa", "searchR1_popqa", "searchR1_hotpotqa"),
    *("searchR1_2wikimultihopqa", "searchR1_musique", "searchR1_bamboogle"),
)

MAX_TAGS = 10
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Search-R1's normalisation (SQuAD style), in its order: lower, punctuation, articles, whitespace."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def extract_answer(solution_str: str) -> str | None:
    found = _ANSWER.findall(solution_str)
    return found[-1].strip() if found else None


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    *,
    format_score: float = 0.0,
    score: float = 1.0,
) -> float:
    """`score` for an exact match (a quarter of it past 10 answer tags), `format_score` else, 0.0 if none."""
    text = require_str("solution_str", solution_str)
    if not isinstance(ground_truth, dict) or "target" not in ground_truth:
        raise TypeError(
            f"ground_truth must be {{'target': answer or [answers]}}, got {type(ground_truth).__name__}"
        )
    targets = accepted_answers(ground_truth["target"])
    answer = extract_answer(text)
    if answer is None:
        return 0.0
    normalized = normalize_answer(answer)
    if not any(normalize_answer(target) == normalized for target in targets):
        return float(format_score)
    if text.count("<answer>") > MAX_TAGS or text.count("</answer>") > MAX_TAGS:
        return float(score) / 4
    return float(score)
