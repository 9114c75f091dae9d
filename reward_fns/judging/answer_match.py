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
from rewardfleet.reward_fns.judging.reading import (
    after_correction,
    committed,
    is_hedged,
    is_negated,
    is_text_hedged,
    words_to_digits,
)

Decision = Literal["match", "mismatch", "ask_number", "ask_verdict"]

# The most numbers an unmarked response may hold for the model to pick its final answer among.
MAX_NUMBER_CHOICES = 8

_FRAC_RE = re.compile(r"\\[dt]?frac\s*\{\s*(-?[\d.]+)\s*\}\s*\{\s*(-?[\d.]+)\s*\}")
# A number as written: sign, thousands commas, decimals, an optional /denominator.
_NUM_RE = re.compile(
    r"(?<![\w.])(-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?|-?\.\d+)(?:\s*/\s*(\d+(?:\.\d+)?))?"
)
_MARKERS = (
    re.compile(r"####"),
    re.compile(r"\banswer\s*(?:is|:|=)\s*:?", re.IGNORECASE),
)
_EQUALS = re.compile(r"=|\b(?:is|are|was|equals?|makes?|gives?|get|got)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[^\s\d])[.!?]\s+(?=[A-Z])|(?<=\d)[.!?]\s+(?=[A-Z])")
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


def _marked(response: str) -> tuple[str, int] | None:
    """The marked final answer (boxed, `####`, "answer is") and where its marker ends, or None."""
    boxed = _last_boxed(response)
    if boxed is not None:
        return boxed.strip(), response.rfind("\\boxed")
    for pattern in _MARKERS:
        found = list(pattern.finditer(response))
        if found:
            line = response[found[-1].end() :].strip().split("\n", 1)[0]
            # The answer ends with its sentence: "The answer is 25. Let me check: 12 + 13 = 25."
            line = _SENTENCE_END.split(line, 1)[0]
            return line.strip(), found[-1].end()
    return None


def marked_answer(response: str) -> str | None:
    """The answer the response marks as final (boxed, `####`, "answer is"), or None."""
    marked = _marked(response)
    return None if marked is None else marked[0]


def final_segment(response: str, *, needs_number: bool) -> tuple[str, bool]:
    """(the text holding the final answer, whether a marker or a self-correction names it): a correction
    ("Wait, it is 17") after the marker wins when it holds an answer; else the marked answer; else what
    follows the response's last `=` / "is" (or the whole response)."""
    marked = _marked(response)
    corrected = after_correction(response, 0 if marked is None else marked[1])
    if corrected is not None and (numbers(corrected) if needs_number else _words(corrected)):
        return _after_last_equals(corrected), True
    if marked is not None:
        return marked[0], True
    return _after_last_equals(response), False


def numbers(text: str, *, affirmed_only: bool = False) -> list[Fraction]:
    """Every number in `text`, in order (number words and `\\frac{a}{b}` included); with `affirmed_only`,
    not those the text denies ("not 17")."""
    text = _FRAC_RE.sub(r"\1/\2", words_to_digits(text))
    out = []
    for m in _NUM_RE.finditer(text):
        if affirmed_only and is_negated(text, m.start()):
            continue
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
    """The distinct numbers of `text` as written (for the model to choose from), in order of appearance; a
    number the text denies ("5 legs, not 4") is not offered."""
    text = _FRAC_RE.sub(r"\1/\2", words_to_digits(text))
    seen: list[str] = []
    for m in _NUM_RE.finditer(text):
        if is_negated(text, m.start()):
            continue
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


_POLARITY = {"yes": "yes", "true": "yes", "no": "no", "false": "no"}
_POLARITY_RE = re.compile(r"\b(yes|no|true|false)\b", re.IGNORECASE)


def decide(response: str, reference: str) -> Judgment:
    """Match or mismatch by rule, or which question to put to the model."""
    response = committed(response)
    target = reference_number(reference)
    if target is not None:
        return _decide_number(words_to_digits(response), target)
    segment, marked = final_segment(response, needs_number=False)
    answer = segment if marked else response
    ref_norm = normalize_text(reference, ignore_punctuation=True, remove_articles=True)
    if ref_norm in _POLARITY:
        found = _marked(response)
        corrected = after_correction(response, 0 if found is None else found[1])
        read = corrected or (found[0] if found is not None else response)
        return _decide_polarity(read, _POLARITY[ref_norm])
    ref_words, answer_words = _words(reference), _words(answer)
    if not ref_words:
        return Judgment("ask_verdict", answer.strip())
    if is_text_hedged(answer) or _offers_alternative(answer, ref_words):
        return Judgment("mismatch", answer.strip())
    if _all_denied(answer, ref_words):
        return Judgment("mismatch", answer.strip())  # "it is not Paris"
    if normalize_text(answer, ignore_punctuation=True, remove_articles=True) == ref_norm or (
        set(ref_words) <= set(answer_words) and len(answer_words) <= len(ref_words) + 12
    ):
        return Judgment("match", answer.strip())
    if not set(ref_words) & set(answer_words):
        return Judgment("mismatch", answer.strip())
    return Judgment("ask_verdict", answer.strip())


def _decide_number(response: str, target: Fraction) -> Judgment:
    segment, marked = final_segment(response, needs_number=True)
    if is_hedged(segment):
        return Judgment("mismatch", segment.strip())  # "4 or 5", "between 4 and 5"
    values = set(numbers(segment, affirmed_only=True))
    if len(values) == 1:
        value = next(iter(values))
        return Judgment("match" if value == target else "mismatch", segment.strip())
    if not values and numbers(segment):
        return Judgment("mismatch", segment.strip())  # every number there denied: "certainly not 17"
    if marked or not numbers(response, affirmed_only=True):
        return Judgment("mismatch", segment.strip())  # several after a marker, or no number at all
    if is_hedged(response):
        return Judgment("mismatch", "")
    if len(number_strings(response)) > MAX_NUMBER_CHOICES:
        # A response that lists many numbers and marks none would let the model's pick land on the
        # reference by chance (a policy can spray numbers): no single final answer, no match.
        return Judgment("mismatch", "")
    return Judgment("ask_number", "")


def _decide_polarity(answer: str, expected: str) -> Judgment:
    """A yes/no reference: the answer's first yes/no word (after any self-correction), never a hedge."""
    if is_text_hedged(answer):
        return Judgment("mismatch", answer.strip())
    for m in _POLARITY_RE.finditer(answer):
        if is_negated(answer, m.start()):
            continue
        return Judgment("match" if _POLARITY[m.group(1).lower()] == expected else "mismatch", answer.strip())
    return Judgment("ask_verdict", answer.strip())


def _offers_alternative(answer: str, ref_words: list[str]) -> bool:
    """ "Paris or Lyon": the reference offered next to another answer."""
    last = re.escape(ref_words[-1])
    first = re.escape(ref_words[0])
    pattern = rf"\b{last}\b\W*\s+or\s+\w|\w\W*\s+or\s+(?:maybe\s+|perhaps\s+)?{first}\b"
    return bool(re.search(pattern, answer, re.IGNORECASE))


def _all_denied(answer: str, ref_words: list[str]) -> bool:
    """Every mention of the reference's first word is denied ("not Paris", "isn't Paris")."""
    found = list(re.finditer(rf"\b{re.escape(ref_words[0])}\b", answer, re.IGNORECASE))
    return bool(found) and all(is_negated(answer, m.start()) for m in found)


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
    found = numbers(text, affirmed_only=True)
    return found[0] if len(found) == 1 else None
