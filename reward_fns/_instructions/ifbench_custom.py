"""IFBench's `custom:*` instruction types (fixed tasks).

IFBench's `custom:*` instruction types (fixed tasks: CSV tables, sorted lists, reversed text, quizzes),
written from the benchmark's definitions. They take no kwargs of their own and ignore any given."""

from __future__ import annotations

import csv
import io
import itertools
import re
import string
import unicodedata
from collections.abc import Mapping
from typing import Any

from rewardfleet.reward_fns._instructions.spec import checker
from rewardfleet.reward_fns._instructions.text import split_into_sentences

Kw = Mapping[str, Any]
STRIP = string.punctuation + " "
_NO_PUNCT = str.maketrans("", "", string.punctuation)


def _nopunct(text: str) -> str:
    return text.translate(_NO_PUNCT)


def _words(text: str) -> list[str]:
    return text.split()


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ASCII", "ignore").decode("ASCII")


@checker("custom:multiples", lenient=True)
def multiples(text: str, kw: Kw, prompt: str) -> bool:
    return re.findall(r"\d+", text.replace(",", ", ")) == [str(i) for i in range(14, 51, 7)]


@checker("custom:mcq_count_length", lenient=True)
def mcq_count_length(text: str, kw: Kw, prompt: str) -> bool:
    if text[text.find("Question") :] != text:
        return False
    questions = re.split(r"\n*(?:Question \d+[\.|\):;]?\s*)", text)
    if questions[0] == "":
        questions = questions[1:]
    questions = [q.strip() for q in questions if q.strip()]
    if len(questions) != 4:
        return False
    lengths = []
    for question in questions:
        stem, choices, in_choices = "", 0, False
        for line in question.split("\n"):
            if re.match(r"^[A-Ea-e][\.|\)]\s*\w+", line.strip()):
                choices += 1
                in_choices = True
            elif not in_choices:
                stem += " " + line.strip()
        if choices != 5:
            return False
        lengths.append(len(stem.strip()))
    return all(a < b for a, b in itertools.pairwise(lengths))


@checker("custom:reverse_newline", lenient=True)
def reverse_newline(text: str, kw: Kw, prompt: str) -> bool:
    lines = [line.strip(STRIP) for line in text.split("\n") if line.strip(STRIP)]
    start = next((i for i, line in enumerate(lines) if "Zimbabwe" in line), None)
    if start is None or len(lines) - start < 52:
        return False
    tail = [_ascii(line) for line in lines[start:]]
    return tail == sorted(tail, reverse=True)


@checker("custom:word_reverse", lenient=True)
def word_reverse(text: str, kw: Kw, prompt: str) -> bool:
    text = " ".join(_nopunct(text.lower().strip()).split()[::-1])
    return "bald eagle" in text and text in split_into_sentences(text)


@checker("custom:character_reverse", lenient=True)
def character_reverse(text: str, kw: Kw, prompt: str) -> bool:
    return "elgae dlab" in text.lower()


@checker("custom:sentence_alphabet", lenient=True)
def sentence_alphabet(text: str, kw: Kw, prompt: str) -> bool:
    sentences = split_into_sentences(text)
    if len(sentences) != 26:
        return False
    for i, sentence in enumerate(sentences):
        words = sentence.lstrip().split()
        if not words or words[0].lower()[0] != chr(97 + i):
            return False
    return True


CAPITALS = _words(
    "Reykjavik Helsinki Oslo Tallinn Stockholm Riga Moscow Copenhagen Vilnius Minsk Dublin Berlin "
    "Amsterdam Warsaw London Brussels Prague Luxembourg Paris Vienna Bratislava Budapest Vaduz "
    "Chisinau Bern Ljubljana Zagreb"
)


@checker("custom:european_capitals_sort", lenient=True)
def european_capitals_sort(text: str, kw: Kw, prompt: str) -> bool:
    given = [c.strip() for c in _ascii(text).split(",") if c.strip()]
    return given == CAPITALS


def _csv(text: str, delimiter: str = ",") -> list[list[str]]:
    return list(csv.reader(io.StringIO(text), delimiter=delimiter))


@checker("custom:csv_city", lenient=True)
def csv_city(text: str, kw: Kw, prompt: str) -> bool:
    rows = _csv(text)
    return (
        len(rows) == 8
        and rows[0] == ["ID", "Country", "City", "Year", "Count"]
        and all(len(r) == 5 for r in rows[1:])
    )


_PRODUCT_HEADER = (
    r'^(ProductID|"ProductID"),[ \t]*(Category|"Category"),[ \t]*(Brand|"Brand"),[ \t]*(Price|"Price"),'
    r'[ \t]*(Stock|"Stock")$'
)


@checker("custom:csv_special_character", lenient=True)
def csv_special_character(text: str, kw: Kw, prompt: str) -> bool:
    if not re.match(_PRODUCT_HEADER, text.split("\n")[0].strip()):
        return False
    rows = _csv(text.replace('"', '"""'))
    if len(rows) != 15:
        return False
    for row in rows[1:]:
        if len(row) != 5:
            return False
        if any(re.match(r'".*[^\d\w\s].*"', field) for field in row):
            return True
    return False


_STUDENT_HEADER = (
    r'^(StudentID|"StudentID")\t *(Subject|"Subject")\t *(Grade|"Grade")\t *(Semester|"Semester")\t *'
    r'(Score|"Score")$'
)


@checker("custom:csv_quotes", lenient=True)
def csv_quotes(text: str, kw: Kw, prompt: str) -> bool:
    if not re.match(_STUDENT_HEADER, text.split("\n")[0].strip()):
        return False
    rows = _csv(text.replace('"', '"""'), delimiter="\t")
    if len(rows) != 4:
        return False
    for row in rows:
        if len(row) != 5:
            return False
        for field in row:
            field = field.strip()
            if not field or field[0] != '"' or field[-1] != '"':
                return False
    return True


_DAYS = {1: 31, 3: 31, 5: 31, 7: 31, 8: 31, 10: 31, 12: 31, 4: 30, 6: 30, 9: 30, 11: 30, 2: 29}


@checker("custom:date_format_list", lenient=True)
def date_format_list(text: str, kw: Kw, prompt: str) -> bool:
    for date in text.strip().split(","):
        date = date.strip()
        if not re.match(r"^\d{4}-\d{2}-\d{2}$", date):
            return False
        year, month, day = (int(p) for p in date.split("-"))
        if not 1769 <= year <= 1821 or month > 12 or day > _DAYS.get(month, 99):
            return False
    return True
