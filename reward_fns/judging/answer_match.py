"""Reference-answer judgments decided by rule where a rule can decide (the `answer_match` judge method).

A small judge model asked "is this response's final answer the reference?" answers "correct" to nearly
everything (SmolLM2-135M: accuracy 0.50 on right vs wrong final answers). Finding the final answer and
comparing it is most of that judgment, and a rule does both reliably for numbers:

1. The response's final answer: the last `\\boxed{}`, `#### x`, or what follows the last "answer is" /
   "Answer:"; failing those, what follows the response's last `=` / "is" / "equals" / "makes" / "gives"
   (or the whole response). Number words ("four") are read as numbers.
2. A numeric reference is matched when that answer holds exactly one distinct number and it equals the
   reference (fractions, decimals, `\\frac{}{}`, thousands commas, percentages as written). Several
   distinct numbers after an explicit answer marker ("the answer is 4 or 5") are a hedge: no match. Without
   a marker the model is asked which of the response's numbers is its final answer, constrained (SGLang
   `regex`) to one of them, and the rule compares its pick; a response with more than `MAX_NUMBER_CHOICES`
   distinct numbers and no marker is no match (spraying numbers must not buy a lucky pick).
3. A text reference is matched when the answer, normalised (case, punctuation, articles), contains every
   word of the reference; an answer sharing no word with the reference is no match. Only an answer that
   shares some words but not all ("Shakespeare" for "William Shakespeare") goes to the model's verdict.

Nothing here calls a model: `judge.py` does, with the prompts built here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from rewardfleet.reward_fns.judging.answers import normalize_text

Decision = Literal["match", "mismatch", "ask_number", "ask_verdict"]

# The most numbers an unmarked response may hold for the model to pick its final answer among.
MAX_NUMBER_CHOICES = 8

_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
}  # fmt: skip
_WORD_RE = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)
_FRAC_RE = re.compile(r"\\[dt]?frac\s*\{\s*(-?[\d.]+)\s*\}\s*\{\s*(-?[\d.]+)\s*\}")
# A number as written: sign, thousands commas, decimals, an optional /denominator.
_NUM_RE = re.compile(
    r"(?<![\w.])(-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?|-?\.\d+)(?:\s*/\s*(\d+(?:\.\d+)?))?"
)
_MARKERS = (
    re.compile(r"####"),
    re.compile(r"\banswer\s*(?:is|:|=)\s*:?", re.IGNORECASE),
)
_EQUALS = re.compile(r"=|\b(?:is|equals?|makes?|gives?|get|got)\b", re.IGNORECASE)
_STOPWORDS = frozenset(
    {"a", "an", "the", "of", "is", "are", "was", "were", "it", "its", "it's", "this", "that", "in", "on",
     "at", "to", "by", "for", "and", "or", "be", "as", "with", "from"}
)  # fmt: skip


def _last_boxed(text: str) -> str | None:
    start = text.rfind("\\boxed")
    if start < 0:
        return None
    brace = text.find("{", start)
    if brace < 0:
        return None
    depth = 0
    for i in range(brace, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[brace + 1 : i]
    return None


def marked_answer(response: str) -> str | None:
    """The answer the response marks as final (boxed, `####`, "answer is"), or None."""
    boxed = _last_boxed(response)
    if boxed is not None:
        return boxed.strip()
    for pattern in _MARKERS:
        found = list(pattern.finditer(response))
        if found:
            line = response[found[-1].end() :].strip().split("\n", 1)[0]
            return line.strip()
    return None


def numbers(text: str) -> list[Fraction]:
    """Every number in `text`, in order (number words and `\\frac{a}{b}` included)."""
    text = _WORD_RE.sub(lambda m: str(_NUMBER_WORDS[m.group(1).lower()]), text)
    text = _FRAC_RE.sub(r"\1/\2", text)
    out = []
    for m in _NUM_RE.finditer(text):
        try:
            value = Fraction(m.group(1).replace(",", ""))
            if m.group(2) is not None:
                denominator = Fraction(m.group(2))
                if denominator == 0:
                    continue
                value /= denominator
        except (ValueError, ZeroDivisionError):
            continue
        out.append(value)
    return out


def number_strings(text: str) -> list[str]:
    """The distinct numbers of `text` as written (for the model to choose from), in order of appearance."""
    text = _WORD_RE.sub(lambda m: str(_NUMBER_WORDS[m.group(1).lower()]), text)
    text = _FRAC_RE.sub(r"\1/\2", text)
    seen: list[str] = []
    for m in _NUM_RE.finditer(text):
        shown = re.sub(r"\s+", "", m.group(0))
        if shown not in seen:
            seen.append(shown)
    return seen


def reference_number(reference: str) -> Fraction | None:
    """The reference as one number ("12", "-1/2", "\\frac{3}{4}", "12 dollars", "45%"), else None ("x^2 + 1",
    "H2O", "Paris", "(1, 2)")."""
    values = set(numbers(reference))
    if len(values) != 1:
        return None
    rest = _NUM_RE.sub(" ", _FRAC_RE.sub(" ", reference))
    if re.search(r"[\\^_=(){}\[\]]", rest) or len(rest.strip()) > 16:
        return None
    return next(iter(values))


def _after_last_equals(text: str) -> str:
    found = list(_EQUALS.finditer(text))
    return text[found[-1].end() :] if found else text


def _words(text: str) -> list[str]:
    norm = normalize_text(text, ignore_punctuation=True, remove_articles=True)
    return [w for w in norm.split() if w not in _STOPWORDS]


@dataclass(frozen=True)
class Judgment:
    decision: Decision
    answer: str  # the answer the rule read ("" when it found none)


def decide(response: str, reference: str) -> Judgment:
    """Match or mismatch by rule, or which question to put to the model."""
    marked = marked_answer(response)
    target = reference_number(reference)
    if target is not None:
        segment = marked if marked is not None else _after_last_equals(response)
        values = set(numbers(segment))
        if len(values) == 1:
            value = next(iter(values))
            return Judgment("match" if value == target else "mismatch", segment.strip())
        if marked is not None or not numbers(response):
            return Judgment("mismatch", segment.strip())  # a hedge, or no number at all
        if len(number_strings(response)) > MAX_NUMBER_CHOICES:
            # A response that lists many numbers and marks none would let the model's pick land on the
            # reference by chance (a policy can spray numbers): no single final answer, no match.
            return Judgment("mismatch", "")
        return Judgment("ask_number", "")
    answer = marked if marked is not None else response
    ref_words, answer_words = _words(reference), _words(answer)
    if not ref_words:
        return Judgment("ask_verdict", answer.strip())
    if normalize_text(answer, ignore_punctuation=True, remove_articles=True) == normalize_text(
        reference, ignore_punctuation=True, remove_articles=True
    ) or (set(ref_words) <= set(answer_words) and len(answer_words) <= len(ref_words) + 12):
        return Judgment("match", answer.strip())
    if not set(ref_words) & set(answer_words):
        return Judgment("mismatch", answer.strip())
    return Judgment("ask_verdict", answer.strip())


def number_choice_messages(problem: str | None, response: str) -> list[dict[str, str]]:
    """The prompt that asks the model which number is the response's final answer."""
    question = f"Question: {problem}\n" if problem else ""
    return [
        {"role": "system", "content": "You read a response and copy its final answer."},
        {
            "role": "user",
            "content": f"{question}Response: {response}\n\n"
            "Which number does the response give as its final answer? Reply with that number only.",
        },
    ]


def number_choice_regex(choices: list[str]) -> str:
    """SGLang `regex` allowing exactly one of `choices` (longest first, so none is a prefix match)."""
    ordered = sorted(choices, key=len, reverse=True)
    return "(" + "|".join(re.escape(c) for c in ordered) + ")"


def pick_value(text: str) -> Fraction | None:
    found = numbers(text)
    return found[0] if len(found) == 1 else None
