"""IFEval's 25 instruction types, written from the benchmark's definitions.

IFEval's 25 instruction types (Zhou et al. 2023, google-research `instruction_following_eval`): the same
tests on the same counts, written from the benchmark's definitions."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from rewardfleet.reward_fns._instructions.spec import InstructionKwargsError, checker
from rewardfleet.reward_fns._instructions.text import (
    compare,
    count_sentences,
    count_words,
    detect_language,
    word_tokenize,
)

Kw = Mapping[str, Any]
CONSTRAINED_OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


@checker("keywords:existence", keywords="strs")
def keywords_existence(text: str, kw: Kw, prompt: str) -> bool:
    return all(re.search(k, text, flags=re.IGNORECASE) for k in kw["keywords"])


@checker("keywords:frequency", keyword="str", frequency="int", relation="relation")
def keywords_frequency(text: str, kw: Kw, prompt: str) -> bool:
    found = len(re.findall(kw["keyword"].strip(), text, flags=re.IGNORECASE))
    return compare(found, kw["relation"], kw["frequency"])


@checker("keywords:forbidden_words", forbidden_words="strs")
def forbidden_words(text: str, kw: Kw, prompt: str) -> bool:
    return not any(re.search(r"\b" + w + r"\b", text, flags=re.IGNORECASE) for w in kw["forbidden_words"])


@checker("keywords:letter_frequency", letter="str", let_frequency="int", let_relation="relation")
def letter_frequency(text: str, kw: Kw, prompt: str) -> bool:
    letter = kw["letter"].strip().lower()
    if len(letter) != 1 or not "a" <= letter <= "z":
        raise InstructionKwargsError(f"kwargs.letter must be one ASCII letter, got {letter[:8]!r}")
    return compare(text.lower().count(letter), kw["let_relation"], kw["let_frequency"])


@checker("language:response_language", language="str")
def response_language(text: str, kw: Kw, prompt: str) -> bool:
    found = detect_language(text)
    return found is None or found == kw["language"]  # IFEval counts "cannot tell" as followed


@checker("length_constraints:number_sentences", num_sentences="int", relation="relation")
def number_sentences(text: str, kw: Kw, prompt: str) -> bool:
    return compare(count_sentences(text), kw["relation"], kw["num_sentences"])


@checker("length_constraints:number_paragraphs", num_paragraphs="int")
def number_paragraphs(text: str, kw: Kw, prompt: str) -> bool:
    parts = re.split(r"\s?\*\*\*\s?", text)
    count = len(parts)
    for i, part in enumerate(parts):
        if not part.strip():
            if i in (0, len(parts) - 1):
                count -= 1
            else:
                return False  # an empty paragraph between two dividers
    return count == kw["num_paragraphs"]


@checker("length_constraints:number_words", num_words="int", relation="relation")
def number_words(text: str, kw: Kw, prompt: str) -> bool:
    return compare(count_words(text), kw["relation"], kw["num_words"])


@checker(
    "length_constraints:nth_paragraph_first_word", num_paragraphs="int", nth_paragraph="int", first_word="str"
)
def nth_paragraph_first_word(text: str, kw: Kw, prompt: str) -> bool:
    nth = kw["nth_paragraph"]
    if not 1 <= nth <= kw["num_paragraphs"]:
        # IFEval draws a random paragraph instead: a coin toss is no reward.
        raise InstructionKwargsError("kwargs.nth_paragraph must be between 1 and num_paragraphs")
    parts = re.split(r"\n\n", text)
    count = sum(1 for p in parts if p.strip())
    if nth > count:
        return False
    paragraph = parts[nth - 1].strip()
    if not paragraph:
        return False
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    first = ""
    for ch in word:
        if ch in ".,?!'\"":
            break
        first += ch.lower()
    return count == kw["num_paragraphs"] and first == kw["first_word"].lower()


@checker("detectable_content:number_placeholders", num_placeholders="int")
def number_placeholders(text: str, kw: Kw, prompt: str) -> bool:
    return len(re.findall(r"\[.*?\]", text)) >= kw["num_placeholders"]


@checker("detectable_content:postscript", postscript_marker="str")
def postscript(text: str, kw: Kw, prompt: str) -> bool:
    marker = kw["postscript_marker"].strip()
    if marker == "P.P.S":
        pattern = r"\s*p\.\s?p\.\s?s.*$"
    elif marker == "P.S.":
        pattern = r"\s*p\.\s?s\..*$"
    else:
        pattern = r"\s*" + marker.lower() + r".*$"
    return bool(re.findall(pattern, text.lower(), flags=re.MULTILINE))


@checker("detectable_format:number_bullet_lists", num_bullets="int")
def number_bullet_lists(text: str, kw: Kw, prompt: str) -> bool:
    stars = re.findall(r"^\s*\*[^\*].*$", text, flags=re.MULTILINE)
    dashes = re.findall(r"^\s*-.*$", text, flags=re.MULTILINE)
    return len(stars) + len(dashes) == kw["num_bullets"]


@checker("detectable_format:constrained_response")
def constrained_response(text: str, kw: Kw, prompt: str) -> bool:
    text = text.strip()
    return any(option in text for option in CONSTRAINED_OPTIONS)


@checker("detectable_format:number_highlighted_sections", num_highlights="int")
def number_highlighted_sections(text: str, kw: Kw, prompt: str) -> bool:
    single = [h for h in re.findall(r"\*[^\n\*]*\*", text) if h.strip("*").strip()]
    double = [
        h for h in re.findall(r"\*\*[^\n\*]*\*\*", text) if h.removeprefix("**").removesuffix("**").strip()
    ]
    return len(single) + len(double) >= kw["num_highlights"]


@checker("detectable_format:multiple_sections", section_spliter="str", num_sections="int")
def multiple_sections(text: str, kw: Kw, prompt: str) -> bool:
    sections = re.split(r"\s?" + kw["section_spliter"].strip() + r"\s?\d+\s?", text)
    return len(sections) - 1 >= kw["num_sections"]


@checker("detectable_format:json_format")
def json_format(text: str, kw: Kw, prompt: str) -> bool:
    text = text.strip()
    for fence in ("```json", "```Json", "```JSON", "```"):
        text = text.removeprefix(fence)
    text = text.removesuffix("```").strip()
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


@checker("detectable_format:title")
def title(text: str, kw: Kw, prompt: str) -> bool:
    return any(t.lstrip("<").rstrip(">").strip() for t in re.findall(r"<<[^\n]+>>", text))


@checker("combination:two_responses")
def two_responses(text: str, kw: Kw, prompt: str) -> bool:
    parts = text.split("******")
    kept = []
    for i, part in enumerate(parts):
        if part.strip():
            kept.append(part)
        elif i not in (0, len(parts) - 1):
            return False
    return len(kept) == 2 and kept[0].strip() != kept[1].strip()


@checker("combination:repeat_prompt", prompt_to_repeat="str")
def repeat_prompt(text: str, kw: Kw, prompt: str) -> bool:
    return text.strip().lower().startswith(kw["prompt_to_repeat"].strip().lower())


@checker("startend:end_checker", end_phrase="str")
def end_checker(text: str, kw: Kw, prompt: str) -> bool:
    return text.strip().strip('"').lower().endswith(kw["end_phrase"].strip().lower())


@checker("change_case:capital_word_frequency", capital_frequency="int", capital_relation="relation")
def capital_word_frequency(text: str, kw: Kw, prompt: str) -> bool:
    capitals = sum(1 for word in word_tokenize(text) if word.isupper())
    return compare(capitals, kw["capital_relation"], kw["capital_frequency"])


@checker("change_case:english_capital")
def english_capital(text: str, kw: Kw, prompt: str) -> bool:
    language = detect_language(text)
    return text.isupper() and language in (None, "en")


@checker("change_case:english_lowercase")
def english_lowercase(text: str, kw: Kw, prompt: str) -> bool:
    language = detect_language(text)
    return text.islower() and language in (None, "en")


@checker("punctuation:no_comma")
def no_comma(text: str, kw: Kw, prompt: str) -> bool:
    return "," not in text


@checker("startend:quotation")
def quotation(text: str, kw: Kw, prompt: str) -> bool:
    text = text.strip()
    return len(text) > 1 and text[0] == '"' and text[-1] == '"'
