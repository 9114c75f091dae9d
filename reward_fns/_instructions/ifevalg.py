"""The IFEvalG instruction types beyond IFEval's.

The IFEvalG instruction types beyond IFEval's (AllenAI's IF-RLVR training set; NeMo Gym's
instruction_following server scores them with the `verifiable_instructions` package): the same tests,
written from those definitions. Kwargs `prompt_to_repeat` etc. come with the task."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

from rewardfleet.reward_fns._instructions.spec import checker
from rewardfleet.reward_fns._instructions.text import compare, split_into_sentences, word_tokenize

Kw = Mapping[str, Any]


def _same(a: str, b: str) -> bool:
    return a.strip().lower() == b.strip().lower()


@checker("copy:repeat_phrase", phrase="str", small_n="int")
def repeat_phrase(text: str, kw: Kw, prompt: str) -> bool:
    reference = kw["phrase"].strip().split()
    if not reference:
        return False
    found = re.findall(rf"{reference[0]} .*? {reference[-1]}", text)
    if len(found) != kw["small_n"]:
        return False
    differences = 0
    for phrase in found:
        words = phrase.split()
        if len(words) != len(reference):
            return False
        differences = 0
        for mine, theirs in zip(words, reference, strict=True):
            if mine != theirs:
                differences += 1
                if differences > 1:
                    return False
    # As the reference checker: the verdict rests on the last phrase found changing exactly one word.
    return differences == 1


@checker("copy:copy", prompt_to_repeat="str")
def copy(text: str, kw: Kw, prompt: str) -> bool:
    return _same(text, kw["prompt_to_repeat"])


@checker("copy:copying_simple", prompt_to_repeat="str")
def copying_simple(text: str, kw: Kw, prompt: str) -> bool:
    return _same(text, kw["prompt_to_repeat"])


@checker("copy:copying_multiple", prompt_to_repeat="str", N="int")
def copying_multiple(text: str, kw: Kw, prompt: str) -> bool:
    parts = text.split("******")
    return len(parts) == kw["N"] and all(_same(p, kw["prompt_to_repeat"]) for p in parts)


@checker("new:copy_span_idx", prompt_to_repeat="str", n_start="int", n_end="int")
def copy_span_idx(text: str, kw: Kw, prompt: str) -> bool:
    return _same(text, kw["prompt_to_repeat"][kw["n_start"] : kw["n_end"]])


@checker("detectable_format:sentence_hyphens")
def sentence_hyphens(text: str, kw: Kw, prompt: str) -> bool:
    expected = split_into_sentences(text.replace("-", " "))
    for sentence, gold in zip(text.split("-"), expected, strict=False):
        if sentence.strip() != sentence or sentence != gold:
            return False
    return True


@checker("keywords:no_adjacent_consecutive")
def no_adjacent_consecutive(text: str, kw: Kw, prompt: str) -> bool:
    words = text.split()
    for a, b in itertools.pairwise(words):
        first, second = a[0].lower(), b[0].lower()
        if len(first) != 1 or len(second) != 1 or ord(second) - ord(first) == 1:
            return False
    return True


@checker("detectable_format:square_brackets")
def square_brackets(text: str, kw: Kw, prompt: str) -> bool:
    return all(w.startswith("[") and w.endswith("]") for w in text.split())


@checker("keywords:word_once", keyword="str")
def word_once(text: str, kw: Kw, prompt: str) -> bool:
    return len(re.findall(kw["keyword"].strip(), text, flags=re.IGNORECASE)) == 1


@checker("keywords:word_count_different_numbers", keyword="str", frequency="int", relation="relation")
def word_count_different_numbers(text: str, kw: Kw, prompt: str) -> bool:
    found = len(re.findall(kw["keyword"].strip(), text, flags=re.IGNORECASE))
    return compare(found, kw["relation"], kw["frequency"])


@checker("keywords:exclude_word_harder", keyword="str")
def exclude_word_harder(text: str, kw: Kw, prompt: str) -> bool:
    return " " + kw["keyword"].strip() + " " not in text


def _two_paragraphs(parts: list[str]) -> bool:
    count = len(parts)
    for i, part in enumerate(parts):
        if not part.strip():
            if i in (0, len(parts) - 1):
                count -= 1
            else:
                return False
    return count == 2


@checker("paragraphs:paragraphs")
def paragraphs(text: str, kw: Kw, prompt: str) -> bool:
    return _two_paragraphs(re.split(r"\s?\*\*\*\s?", text))


@checker("paragraphs:paragraphs2")
def paragraphs2(text: str, kw: Kw, prompt: str) -> bool:
    return _two_paragraphs(re.split(r"\n\n", text))


@checker("first_word:first_word_sent", first_word="str")
def first_word_sent(text: str, kw: Kw, prompt: str) -> bool:
    expected = kw["first_word"].strip().lower()
    for sentence in split_into_sentences(text):
        if not sentence.strip() or sentence.split()[0].strip().lower() != expected:
            return False
    return True


@checker("first_word:first_word_answer", first_word="str")
def first_word_answer(text: str, kw: Kw, prompt: str) -> bool:
    words = text.split()
    return bool(words) and words[0].strip().lower() == kw["first_word"].strip().lower()


def _bare(word: str) -> str:
    return re.sub(r"[^\w\s]", "", word.strip()).lower()


@checker("last_word:last_word_sent", last_word="str")
def last_word_sent(text: str, kw: Kw, prompt: str) -> bool:
    expected = kw["last_word"].strip().lower()
    for sentence in split_into_sentences(text):
        if not sentence.strip() or _bare(sentence.split()[-1]) != expected:
            return False
    return True


@checker("last_word:last_word_answer", last_word="str")
def last_word_answer(text: str, kw: Kw, prompt: str) -> bool:
    words = text.split()
    return bool(words) and _bare(words[-1]) == kw["last_word"].strip().lower()


@checker("detectable_format:bigram_wrapping")
def bigram_wrapping(text: str, kw: Kw, prompt: str) -> bool:
    words = text.split()
    return all(words[i].startswith("<<") and words[i + 1].endswith(">>") for i in range(0, len(words) - 1, 2))


@checker("punctuation:punctuation_dot")
def punctuation_dot(text: str, kw: Kw, prompt: str) -> bool:
    return "." not in text


@checker("punctuation:punctuation_exclamation")
def punctuation_exclamation(text: str, kw: Kw, prompt: str) -> bool:
    return "!" not in text


@checker("count:lowercase_counting", N="int")
def lowercase_counting(text: str, kw: Kw, prompt: str) -> bool:
    return len(re.findall(r"\b[a-z]+\b", text)) <= kw["N"]


@checker("letters:letter_counting", N="int", relation="relation")
def letter_counting(text: str, kw: Kw, prompt: str) -> bool:
    return compare(len(re.findall(r"[a-zA-Z]", text)), kw["relation"], kw["N"])


@checker("letters:letter_counting2", letter="str", let_frequency="int", let_relation="relation")
def letter_counting2(text: str, kw: Kw, prompt: str) -> bool:
    from rewardfleet.reward_fns._instructions.ifeval import letter_frequency

    return letter_frequency(text, kw, prompt)


@checker("count:counting_composition", n_sent="int", n_words="int")
def counting_composition(text: str, kw: Kw, prompt: str) -> bool:
    parts = re.split(r"\s?\*\*\*\s?", text)
    count = len(parts)
    for i, part in enumerate(parts):
        if not part.strip():
            if i in (0, len(parts) - 1):
                count -= 1
            else:
                return False
        sentences = split_into_sentences(part)
        if len(sentences) != kw["n_sent"]:
            return False
        if any(len(word_tokenize(s)) != kw["n_words"] for s in sentences):
            return False
    return count == 3


@checker("count:count_unique")
def count_unique(text: str, kw: Kw, prompt: str) -> bool:
    words = word_tokenize(text)
    return len(words) == len(set(words))


@checker("count:count_increment_word", keyword1="str", keyword2="str")
def count_increment_word(text: str, kw: Kw, prompt: str) -> bool:
    first = len(re.findall(kw["keyword1"].strip(), text, flags=re.IGNORECASE))
    second = len(re.findall(kw["keyword2"].strip(), text, flags=re.IGNORECASE))
    return first == 1 and second == 2


@checker("keywords:palindrome")
def palindrome(text: str, kw: Kw, prompt: str) -> bool:
    return any(word == word[::-1] for word in text.split())


@checker("keywords:keyword_specific_position", keyword="str", n="int", m="int")
def keyword_specific_position(text: str, kw: Kw, prompt: str) -> bool:
    sentences = split_into_sentences(text)
    n, m = kw["n"], kw["m"]
    if n < 1 or m < 1 or len(sentences) < n:
        return False
    words = word_tokenize(sentences[n - 1])
    return len(words) >= m and words[m - 1] == kw["keyword"].strip()


@checker("keywords:start_end")
def start_end(text: str, kw: Kw, prompt: str) -> bool:
    words = word_tokenize(text)
    return len(words) >= 2 and words[0].lower() == words[-1].lower()
