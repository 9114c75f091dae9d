"""Short-answer QA (HotpotQA), as NeMo Gym's `hotpotqa_qa` server grades it.

The answer is the `answer` of the last JSON object that has one, looked for first in ```json fences, then
among the brace-balanced spans of the response; without one, the whole response (stripped). It is scored
against the reference (`ground_truth`, NeMo Gym's `expected_answer`) four ways:

- `answer_em` / `answer_f1`: SQuAD's exact match and token F1 (case, punctuation, articles and spacing
  ignored; when either side is yes / no / noanswer, both must be equal);
- `is_correct`: some surface form of the reference (without its article, quotes or parenthesis, number word
  <-> digits, without thousands commas, trailing punctuation or abbreviation dots, hyphens as spaces,
  `&` <-> `and`) is a substring of the answer (both lower-cased, Unicode spaces, dashes and quotes made
  ASCII);
- `is_correct_strict`, the score: as `is_correct`, but a form of at most 4 characters must stand as a word,
  and in an answer over 80 characters the form's first occurrence must start by character 40.

References over 40 characters, or that look like multi-word proper names, are flagged `gt_should_remove`
(with `gt_remove_reason`): NeMo Gym's filtered metrics leave them out. Returns `{"score",
"extracted_answer" (None when empty), "answer_em", "answer_f1", "is_correct", "is_correct_strict",
"gt_should_remove", "gt_remove_reason"}`.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from typing import Any

from rewardfleet.reward_fns._task_text import TaskFieldError, too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["compute_score", "extract_answer", "reference_forms"]

_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.S)
_PUNCT = str.maketrans("", "", string.punctuation)
_ARTICLE = re.compile(r"\b(?:a|an|the)\b")
_SPECIAL = ("yes", "no", "noanswer")
_ASCII = str.maketrans(
    {**dict.fromkeys("\u202f\xa0\u2009\u200a\u2002\u2003", " "),
     **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015", "-"),
     "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}
)  # fmt: skip
_ARTICLES = ("the ", "a ", "an ")
_ORDINALS = {"first": "1st", "second": "2nd", "third": "3rd", "fourth": "4th", "fifth": "5th",
             "nineteenth": "19th", "twentieth": "20th", "twenty-first": "21st"}  # fmt: skip
_CARDINALS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
              "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
              "twenty"]  # fmt: skip
_WORD_TO_DIGITS = {**{w: str(i) for i, w in enumerate(_CARDINALS, 1)}, **_ORDINALS}
_DIGITS_TO_WORD = {d: w for w, d in _WORD_TO_DIGITS.items()}
_NAME_STOPWORDS = frozenset(["the", "a", "an", "of", "in", "on", "at", "for", "and", "or", "to", "by", "is",
                             "was", "are", "were", "be", "been", "with", "from", "that", "this", "it", "its",
                             "his", "her", "my", "our", "their", "no", "not", "but", "if", "as", "into",
                             "about", "than", "then"])  # fmt: skip
_THOUSANDS = re.compile(r"(\d),(\d{3})")
_LONE_DOT = re.compile(r"(?<!\d)\.(?!\d)")
MAX_REFERENCE_CHARS = 40
MAX_GROUND_TRUTH_CHARS = 10_000


def _squad(text: str) -> str:
    return " ".join(_ARTICLE.sub(" ", text.lower().translate(_PUNCT)).split())


def _f1(predicted: str, reference: str) -> float:
    p, r = _squad(predicted), _squad(reference)
    if (p in _SPECIAL or r in _SPECIAL) and p != r:
        return 0.0
    overlap = sum((Counter(p.split()) & Counter(r.split())).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(p.split()), overlap / len(r.split())
    return 2 * precision * recall / (precision + recall)


def _answer_of(candidate: str) -> str | None:
    try:
        value = json.loads(candidate)
    except (ValueError, RecursionError):
        return None
    return str(value["answer"]) if isinstance(value, dict) and "answer" in value else None


def _balanced_spans(text: str) -> list[str]:
    """Each `{...}` span, left to right, braces counted (strings not special); an unclosed one ends it."""
    spans, start = [], text.find("{")
    while start >= 0:
        depth = 0
        for end in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                spans.append(text[start : end + 1])
                break
        else:
            break
        start = text.find("{", end + 1)
    return spans


def extract_answer(response: str) -> str:
    text = response.strip()
    for candidates in ([m.group(1) for m in _FENCED.finditer(text)], _balanced_spans(text)):
        for candidate in reversed(candidates):
            if (found := _answer_of(candidate)) is not None:
                return found
    return text


def _without_article(text: str) -> str | None:
    lowered = text.lower()
    return next((text[len(a) :] for a in _ARTICLES if lowered.startswith(a)), None)


def reference_forms(reference: str) -> list[str]:
    """The surface forms of a reference that count as it, sorted."""
    forms = {reference}
    if (bare := _without_article(reference)) is not None:
        forms.add(bare)
    unquoted = reference.translate(str.maketrans("", "", '"\u201c\u201d')).strip()
    if unquoted and unquoted != reference:
        forms.add(unquoted)
    if "(" in reference:
        outside = " ".join(re.sub(r"\s*\([^)]*\)\s*", " ", reference).split())
        if outside and outside != reference:
            forms.add(outside)
        forms.update(
            inner.strip() for inner in re.findall(r"\(([^)]+)\)", reference) if len(inner.strip()) > 1
        )
    key = reference.lower().strip()
    for table in (_WORD_TO_DIGITS, _DIGITS_TO_WORD):
        if key in table:
            forms.add(table[key])
    plain = reference
    while _THOUSANDS.search(plain):
        plain = _THOUSANDS.sub(r"\1\2", plain)
    if plain != reference:
        forms.add(plain)
    if reference and reference[-1] in ".,;:!?":
        forms.add(reference[:-1].rstrip())
    if "." in reference:
        undotted = _LONE_DOT.sub("", reference)
        if len(undotted) > 1 and undotted != reference:
            forms.add(undotted)
    if "-" in reference and not reference.startswith("-"):
        spaced = " ".join(reference.replace("-", " ").split())
        if spaced != reference:
            forms.add(spaced)
    if " & " in reference:
        forms.add(reference.replace(" & ", " and "))
    if (at := reference.lower().find(" and ")) >= 0:
        forms.add(f"{reference[:at]} & {reference[at + 5 :]}")
    forms |= {bare for f in list(forms) if (bare := _without_article(f)) is not None}
    kept = {" ".join(f.split()) for f in forms}
    whole = reference.strip()
    return sorted(f for f in kept if f and (len(f) >= 3 or f == whole or f.isdigit()))


def _plain(text: str) -> str:
    return re.sub(" {2,}", " ", text.lower().translate(_ASCII)).strip()


def _strict_hit(form: str, answer: str) -> bool:
    if not form or form not in answer:
        return False
    if len(form) <= 4 and not re.search(rf"(?<!\w){re.escape(form)}(?!\w)", answer):
        return False
    return len(answer) <= 80 or answer.find(form) <= 40


def _flagged(reference: str) -> str:
    """Why a reference is unreliable for substring matching ('' when it is not)."""
    if len(reference) > MAX_REFERENCE_CHARS:
        return "gt_too_long"
    words = reference.strip().rstrip(".").split()
    names = [w for w in words if w[0].isupper() and w.lower() not in _NAME_STOPWORDS]
    if len(words) in (3, 4) and len(names) == len(words):
        return "multi_word_name"
    if len(words) in (5, 6) and len(names) >= 3:
        return "multi_word_name"
    return ""


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str)
    reference = require_str("ground_truth", ground_truth)
    if len(reference) > MAX_GROUND_TRUTH_CHARS:
        raise TaskFieldError(f"ground_truth is {len(reference)} characters; at most {MAX_GROUND_TRUTH_CHARS}")
    reason = _flagged(reference)
    flags = {"gt_should_remove": bool(reason), "gt_remove_reason": reason}
    if (over := too_long(text)) is not None:
        zeros = dict.fromkeys(("answer_em", "answer_f1", "is_correct", "is_correct_strict"), 0.0)
        return {**over, "extracted_answer": None, **zeros, **flags}
    answer = extract_answer(text) if text else ""
    forms = [_plain(f) for f in reference_forms(reference)]
    plain = _plain(answer)
    strict = float(any(_strict_hit(f, plain) for f in forms))
    return {
        "score": strict,
        "extracted_answer": answer or None,
        "answer_em": float(_squad(answer) == _squad(reference)),
        "answer_f1": _f1(answer, reference),
        "is_correct": float(any(f in plain for f in forms)),
        "is_correct_strict": strict,
        **flags,
    }
