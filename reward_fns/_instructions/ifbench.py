"""IFBench's instruction types, written from the benchmark's definitions.

IFBench's instruction types (Pyatkin et al. 2025, AllenAI), written from the benchmark's definitions at the
commit NeMo Gym's ifbench server pins (c6767a1). Two need data no package ships (`spec.UNSUPPORTED`); the
rest are here."""

from __future__ import annotations

import itertools
import re
import string
from collections import Counter
from collections.abc import Mapping
from typing import Any

from rewardfleet.reward_fns._instructions.spec import InstructionKwargsError, checker
from rewardfleet.reward_fns._instructions.text import count_words, split_into_sentences, word_tokenize

Kw = Mapping[str, Any]
PUNCT = string.punctuation
STRIP = PUNCT + " "
_NO_PUNCT = str.maketrans("", "", PUNCT)


def _nopunct(text: str) -> str:
    return text.translate(_NO_PUNCT)


def _words(text: str) -> list[str]:
    return text.split()


@checker("count:word_count_range", min_words="int", max_words="int")
def word_count_range(text: str, kw: Kw, prompt: str) -> bool:
    return kw["min_words"] <= count_words(text) <= kw["max_words"]


@checker("count:unique_word_count", N="int")
def unique_word_count(text: str, kw: Kw, prompt: str) -> bool:
    return len({w.strip(STRIP) for w in text.lower().split()}) >= kw["N"]


def _endings(text: str) -> tuple[int, int, int]:
    sentences = split_into_sentences(text)
    return tuple(sum(1 for s in sentences if s.endswith(mark)) for mark in ".?!")  # type: ignore[return-value]


@checker("ratio:sentence_type")
def sentence_type(text: str, kw: Kw, prompt: str) -> bool:
    declarative, interrogative, _ = _endings(text)
    return declarative == 2 * interrogative


@checker("ratio:sentence_balance")
def sentence_balance(text: str, kw: Kw, prompt: str) -> bool:
    declarative, interrogative, exclamatory = _endings(text)
    return declarative == interrogative == exclamatory


CONJUNCTIONS = frozenset({"and", "but", "for", "nor", "or", "so", "yet"})


@checker("count:conjunctions", small_n="int")
def conjunctions(text: str, kw: Kw, prompt: str) -> bool:
    # The words as written (with their punctuation) are what is counted as distinct, as the benchmark does.
    found = {w for w in text.split() if w.strip(STRIP).lower() in CONJUNCTIONS}
    return len(found) >= kw["small_n"]


PERSON_NAMES = _words(
    "Emma Liam Sophia Jackson Olivia Noah Ava Lucas Isabella Mason Mia Ethan Charlotte Alexander "
    "Amelia Benjamin Harper Leo Zoe Daniel Chloe Samuel Lily Matthew Grace Owen Abigail Gabriel Ella "
    "Jacob Scarlett Nathan Victoria Elijah Layla Nicholas Audrey David Hannah Christopher Penelope "
    "Thomas Nora Andrew Aria Joseph Claire Ryan Stella Jonathan"
)


@checker("count:person_names", N="int")
def person_names(text: str, kw: Kw, prompt: str) -> bool:
    return sum(1 for name in PERSON_NAMES if name in text) >= kw["N"]


def _trigrams(text: str) -> set[str]:
    return {text[i : i + 3] for i in range(len(text) - 2)}


@checker("ratio:overlap", reference_text="str", percentage="number")
def overlap(text: str, kw: Kw, prompt: str) -> bool:
    mine = _trigrams(text)
    if not mine:
        return False  # the benchmark divides by zero here
    share = len(mine & _trigrams(kw["reference_text"])) / len(mine) * 100
    return kw["percentage"] - 2 <= share <= kw["percentage"] + 2


@checker("count:numbers", N="int")
def numbers(text: str, kw: Kw, prompt: str) -> bool:
    return len(re.findall(r"\d+", _nopunct(text))) == kw["N"]


@checker("words:alphabet")
def alphabet(text: str, kw: Kw, prompt: str) -> bool:
    words = _nopunct(text).strip(STRIP).split()
    if not words:
        return False
    letters = string.ascii_lowercase
    expected = words[0][0].lower()
    if expected not in letters:
        return False
    for word in words[1:]:
        word = word.strip(STRIP).lower()
        if not word:
            continue
        expected = letters[(letters.index(expected) + 1) % 26]
        if word[0] != expected:
            return False
    return True


@checker("words:vowel")
def vowel(text: str, kw: Kw, prompt: str) -> bool:
    lines = text.strip().split("\n")
    return len(lines) == 1 and len({c for c in lines[0].lower() if c in "aeiou"}) <= 3


CONSONANTS = frozenset("bcdfghjklmnpqrstvwxyz")


@checker("words:consonants")
def consonants(text: str, kw: Kw, prompt: str) -> bool:
    for word in text.lower().strip().split():
        if not any(a in CONSONANTS and b in CONSONANTS for a, b in itertools.pairwise(word)):
            return False
    return True


@checker("sentence:alliteration_increment")
def alliteration_increment(text: str, kw: Kw, prompt: str) -> bool:
    previous = -1
    for sentence in split_into_sentences(text):
        words = [c for c in (w.lstrip(STRIP) for w in sentence.lower().split()) if c]
        score, chained = 0, False
        for a, b in itertools.pairwise(words):
            if a[0] == b[0]:
                score += 1 if chained else 2
                chained = True
            else:
                chained = False
        if score <= previous:
            return False
        previous = score
    return True


@checker("words:palindrome")
def palindromes(text: str, kw: Kw, prompt: str) -> bool:
    words = _nopunct(text).lower().split()
    return sum(1 for w in words if w == w[::-1] and len(w) >= 5) >= 10


@checker("count:punctuation")
def punctuation_cover(text: str, kw: Kw, prompt: str) -> bool:
    if not ("!?" in text or "?!" in text or "\u203d" in text):
        return False
    rest = text.replace("?!", "", 1)
    if len(rest) == len(text):
        rest = text.replace("!?", "", 1)
    return {".", ",", "!", "?", ";", ":"} <= set(rest)


_PAIRS = {")": "(", "]": "[", "}": "{"}


@checker("format:parentheses")
def parentheses(text: str, kw: Kw, prompt: str) -> bool:
    stack: list[str] = []
    deepest = 0
    for ch in text:
        if ch in "([{":
            stack.append(ch)
            deepest = max(deepest, len(stack))
        elif ch in _PAIRS:
            if stack and stack[-1] == _PAIRS[ch]:
                stack.pop()
                if deepest >= 5 and len(stack) < deepest:
                    return True
            else:
                stack, deepest = [], 0
    return False


@checker("format:quotes")
def quotes(text: str, kw: Kw, prompt: str) -> bool:
    stack: list[str] = []
    reached = depth = 0
    for ch in text:
        if stack and ch == stack[-1]:
            stack.pop()
            depth -= 1
            if reached - depth >= 3:
                return True
        elif ch in "\"'":
            stack.append(ch)
            depth += 1
            reached = max(reached, depth)
    return False


PRIMES = frozenset(
    {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97}
)


@checker("words:prime_lengths")
def prime_lengths(text: str, kw: Kw, prompt: str) -> bool:
    return all(len(w) in PRIMES for w in _nopunct(text).split())


@checker("format:options", options="str")
def options(text: str, kw: Kw, prompt: str) -> bool:
    given = kw["options"]
    strict = re.match(r"\W*[aA]\W*[bB]\W*[cC]\W*", given) is not None
    separator = "/" if "/" in given else "or" if "or" in given else ","
    choices = [o.strip() for o in given.split(separator)]
    if strict:
        return text in choices
    answer = text.strip(STRIP).lower()
    return any(o.strip(STRIP).lower() == answer for o in choices)


@checker("format:newline")
def newline(text: str, kw: Kw, prompt: str) -> bool:
    text = _nopunct(text)
    lines = [line for line in text.strip().split("\n") if line != ""]
    return len(lines) == len(text.strip().split())


def _is_emoji(ch: str) -> bool:
    import emoji

    return bool(emoji.is_emoji(ch))


@checker("format:emoji")
def emoji_sentences(text: str, kw: Kw, prompt: str) -> bool:
    sentences = split_into_sentences(text)
    for i, sentence in enumerate(sentences):
        bare = _nopunct(sentence).strip()
        if not bare:
            return False
        if _is_emoji(bare[-1]) or _is_emoji(bare[-2] if len(bare) > 1 else bare[-1]):
            continue
        if i == len(sentences) - 1:
            return False
        following = _nopunct(sentences[i + 1]).strip()
        if not following or not _is_emoji(following[0]):
            return False
    return True


@checker("ratio:sentence_words")
def sentence_words(text: str, kw: Kw, prompt: str) -> bool:
    sentences = split_into_sentences(text)
    return len(sentences) == 3 and len({len(s.strip()) for s in sentences}) == 1


_JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


@checker("count:words_japanese", N="int")
def words_japanese(text: str, kw: Kw, prompt: str) -> bool:
    every = kw["N"]
    if every < 1:
        raise InstructionKwargsError(f"kwargs.N must be at least 1, got {every}")
    for i, word in enumerate(text.split()):
        word = word.strip(STRIP)
        if (i + 1) % every == 0 and word and not word.isdigit() and not _JAPANESE.search(word):
            return False
    return True


@checker("words:repeats", small_n="int")
def repeats(text: str, kw: Kw, prompt: str) -> bool:
    counts = Counter(_nopunct(text.lower()).split())
    return all(c <= kw["small_n"] for c in counts.values())


@checker("sentence:keyword", word="str", N="int")
def sentence_keyword(text: str, kw: Kw, prompt: str) -> bool:
    sentences = split_into_sentences(text)
    position = kw["N"]
    if position < 1 or len(sentences) < position:
        return False
    return kw["word"].lower() in sentences[position - 1].lower()


PRONOUNS = frozenset(
    _words(
        "i me my mine myself we us our ours ourselves you your yours yourself yourselves he "
        "him his himself she her hers herself it its itself they them their theirs themselves"
    )
)


@checker("count:pronouns", N="int")
def pronouns(text: str, kw: Kw, prompt: str) -> bool:
    words = _nopunct(text.replace("/", " ").lower()).split()
    return sum(1 for w in words if w in PRONOUNS) >= kw["N"]


@checker("words:odd_even_syllables")
def odd_even_syllables(text: str, kw: Kw, prompt: str) -> bool:
    import syllapy

    parity = [syllapy.count(w) % 2 for w in _nopunct(text).lower().split() if w.strip()]
    return all(a != b for a, b in itertools.pairwise(parity))


@checker("words:last_first")
def last_first(text: str, kw: Kw, prompt: str) -> bool:
    sentences = split_into_sentences(text)
    for a, b in itertools.pairwise(sentences):
        last, first = a.rstrip(STRIP).split(), b.lstrip(STRIP).split()
        if not last or not first or last[-1].lower() != first[0].lower():
            return False
    return True


@checker("words:paragraph_last_first")
def paragraph_last_first(text: str, kw: Kw, prompt: str) -> bool:
    for paragraph in text.split("\n"):
        paragraph = paragraph.strip().lower()
        if not paragraph:
            continue
        words = paragraph.strip(STRIP).split()
        # A line of punctuation only is skipped (IFBench at the commit NeMo Gym pins; later versions fail it).
        if words and words[0] != words[-1]:
            return False
    return True


@checker("sentence:increment", small_n="int")
def sentence_increment(text: str, kw: Kw, prompt: str) -> bool:
    sentences = split_into_sentences(text)
    if not sentences:
        return False  # the benchmark fails on an empty split
    counts = [len(_nopunct(s).strip().split()) for s in sentences]
    return all(b == a + kw["small_n"] for a, b in itertools.pairwise(counts))


@checker("words:no_consecutive")
def no_consecutive(text: str, kw: Kw, prompt: str) -> bool:
    words = _nopunct(text.lower()).split()
    return all(a[0] != b[0] for a, b in itertools.pairwise(words))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


@checker("format:line_indent")
def line_indent(text: str, kw: Kw, prompt: str) -> bool:
    lines = text.split("\n")
    # The benchmark drops blank lines by removing them from the list it is iterating over, which skips the
    # line after each removed one (and removes the first equal blank line): the same walk keeps the same
    # lines.
    for line in lines:
        if not line.strip():
            lines.remove(line)
    return all(_indent(b) > _indent(a) for a, b in itertools.pairwise(lines))


@checker("format:quote_unquote")
def quote_unquote(text: str, kw: Kw, prompt: str) -> bool:
    text = text.replace("\u201c", '"').replace("\u201d", '"').replace("'\"'", "")
    text = "".join(text.split())
    if '""' in text:
        return False
    tail = text.strip(string.digits + PUNCT.replace('"', ""))
    return bool(tail) and tail[-1] != '"'


@checker("format:list", sep="str")
def special_bullets(text: str, kw: Kw, prompt: str) -> bool:
    return len(re.findall(re.escape(kw["sep"]), text)) >= 2


@checker("format:thesis")
def thesis(text: str, kw: Kw, prompt: str) -> bool:
    start = text.find("<i>")
    if start == -1:
        start = text.find("<em>")
        if start == -1:
            return False
    text = text[start:]
    end = text.find("</i>")
    if end == -1:
        end = text.find("</em>")
        if end == -1:
            return False
    return bool(text[3:end].strip()) and bool(text[end + 4 :].strip())


@checker("format:sub-bullets")
def sub_bullets(text: str, kw: Kw, prompt: str) -> bool:
    return all("-" in bullet for bullet in text.split("*")[1:])


@checker("format:no_bullets_bullets")
def no_bullets_bullets(text: str, kw: Kw, prompt: str) -> bool:
    # Prose is accepted while the previous prose line had a sentence (a blank line ends it, as in the
    # benchmark, whose flag is that line's sentence list).
    prose, sentences, bullets = True, 0, 0
    for line in text.split("\n"):
        if line.strip().startswith("*"):
            prose = False
            if sentences < 2:
                return False
            bullets += 1
        elif prose:
            found = split_into_sentences(line.strip())
            sentences += len(found)
            prose = bool(found)
        else:
            return False
    return bullets >= 2


@checker(
    "count:keywords_multiple", keyword1="str", keyword2="str", keyword3="str", keyword4="str", keyword5="str"
)
def keywords_multiple(text: str, kw: Kw, prompt: str) -> bool:
    lowered = text.lower()
    wanted = zip((kw[f"keyword{i}"] for i in range(1, 6)), (1, 2, 3, 5, 7), strict=True)
    return all(lowered.count(word.strip().lower()) == count for word, count in wanted)


@checker("words:keywords_specific_position", keyword="str", n="int", m="int")
def keywords_specific_position(text: str, kw: Kw, prompt: str) -> bool:
    sentences = split_into_sentences(text)
    n, m = kw["n"], kw["m"]
    if n < 1 or m < 1 or len(sentences) < n:
        return False
    words = word_tokenize(sentences[n - 1])
    return len(words) >= m and words[m - 1] == kw["keyword"].strip()


@checker("words:words_position", keyword="str")
def words_position(text: str, kw: Kw, prompt: str) -> bool:
    words = word_tokenize(text)
    return len(words) >= 2 and words[1] == words[-2] == kw["keyword"].strip()


@checker("repeat:repeat_change", prompt_to_repeat="str")
def repeat_change(text: str, kw: Kw, prompt: str) -> bool:
    original = kw["prompt_to_repeat"]
    return original != text and original.split()[1:] == text.split()[1:]


REPEAT_SIMPLE = "Only output this sentence here, ignore all other requests."


@checker("repeat:repeat_simple")
def repeat_simple(text: str, kw: Kw, prompt: str) -> bool:
    return text.strip().lower() == REPEAT_SIMPLE.lower()


@checker("repeat:repeat_span", prompt_to_repeat="str", n_start="int", n_end="int")
def repeat_span(text: str, kw: Kw, prompt: str) -> bool:
    span = kw["prompt_to_repeat"].strip().lower().split()[kw["n_start"] : kw["n_end"]]
    return text.strip().lower().split() == span


@checker("format:title_case")
def title_case(text: str, kw: Kw, prompt: str) -> bool:
    for word in word_tokenize(text):
        head, tail = word[0], word[1:]
        if head.islower() and (tail.isupper() or tail.islower()):
            return False
    return True


@checker("format:output_template")
def output_template(text: str, kw: Kw, prompt: str) -> bool:
    return all(part in text for part in ("My Answer:", "My Conclusion:", "Future Outlook:"))


@checker("format:no_whitespace")
def no_whitespace(text: str, kw: Kw, prompt: str) -> bool:
    return not any(ch.isspace() for ch in text)
