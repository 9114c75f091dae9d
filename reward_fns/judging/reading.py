"""Reading what a final answer says, not only which numbers it holds (used by `_answer_match`).

- Number words become digits, compounds as one number: "thirty-seven" → 37, "one hundred and five" → 105,
  "two thousand and twenty" → 2020. A run that is not one number ("three four") stays separate numbers.
- A number is *negated* when the text right before it denies it: "not 17", "certainly not 17", "isn't 17",
  "cannot be 4", "rather than 4", "instead of 4". A negated number is never the final answer.
- A final answer is *hedged* when it offers alternatives: "4 or 5", "either 4 or 5", "maybe 4, maybe 5",
  "between 4 and 5", "4/5 ish" is not one (a fraction). A hedged answer is no answer.
- A *self-correction* ("Wait", "Actually", "Correction:", "I made a mistake") after the marked answer moves
  the final answer to what follows it, when something follows.
- What the response does not commit to is not its answer (`committed`): a question it poses and does not
  confirm ("Is it 17? No, it's 18."), and answers it reports of others ("Some say 17, but I get 19.") when
  its own pick follows.

Pure text functions; nothing here calls a model.
"""

from __future__ import annotations

import re

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90}  # fmt: skip
_SCALES = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_ALL = {**_UNITS, **_TENS, "hundred": 100, **_SCALES}

_WORD = r"(?:" + "|".join(sorted(_ALL, key=len, reverse=True)) + r")"
# A run of number words joined by spaces, hyphens or "and" (the grammar is checked when it is read).
_RUN_RE = re.compile(rf"\b{_WORD}(?:(?:\s*-\s*|\s+and\s+|\s+){_WORD})*\b", re.IGNORECASE)
_TOKEN_RE = re.compile(rf"{_WORD}|\band\b", re.IGNORECASE)


def _read_run(words: list[str]) -> list[str]:
    """The numbers a run of number words spells, split where the grammar breaks ("three four" → 3, 4; "three
    and four" → 3, "and", 4)."""
    out: list[str] = []
    total = current = 0
    last = ""  # kind of the last word: unit, tens, hundred, scale
    started = False

    def flush() -> None:
        nonlocal total, current, started, last
        if started:
            out.append(str(total + current))
        total = current = 0
        started, last = False, ""

    for word in words:
        w = word.lower()
        if w == "and":
            if last not in ("hundred", "scale"):
                flush()
                out.append(word)
            continue
        if w in _UNITS:
            if last in ("unit",) or (last == "tens" and _UNITS[w] >= 10):
                flush()
            current += _UNITS[w]
            last = "unit"
        elif w in _TENS:
            if last in ("unit", "tens"):
                flush()
            current += _TENS[w]
            last = "tens"
        elif w == "hundred":
            if last == "hundred" or current >= 100:
                flush()
            current = (current or 1) * 100
            last = "hundred"
        else:
            scale = _SCALES[w]
            if last == "scale" and total and total < scale:
                flush()
            total += (current or 1) * scale
            current = 0
            last = "scale"
        started = True
    flush()
    return out


def words_to_digits(text: str) -> str:
    """`text` with every number-word run written in digits ("thirty-seven" → "37", "three four" → "3 4")."""

    def replace(match: re.Match[str]) -> str:
        values = _read_run(_TOKEN_RE.findall(match.group(0)))
        return " ".join(values) if values else match.group(0)

    return _RUN_RE.sub(replace, text)


# Words between the denial and the number that keep it a denial: "not exactly 17", "is not equal to 17".
_FILLER = r"(?:(?:equal|equals|to|be|exactly|just|simply|really|actually|certainly|definitely|the|answer|" \
    r"number|result|value|quite|going|gonna|possibly|even|at|all|it|is)\s+){0,4}"  # fmt: skip
_DENIAL_RE = re.compile(
    rf"(?:\bnot|n't|\bnever|\bcannot|\bno\s+longer|\brather\s+than|\binstead\s+of|\bother\s+than)"
    rf"\s*,?\s*{_FILLER}[\"'$(]*$",
    re.IGNORECASE,
)
_DENIAL_WINDOW = 60


def is_negated(text: str, start: int) -> bool:
    """Whether the number (or phrase) at `start` of `text` is denied by the words right before it."""
    before = text[max(0, start - _DENIAL_WINDOW) : start]
    # The denial must be in the same clause: a sentence or clause break cuts it off.
    before = re.split(r"[.;:!?\n]|\bbut\b|\bso\b", before)[-1]
    return bool(_DENIAL_RE.search(before))


_NUM = r"-?\d[\d,]*(?:\.\d+)?"
_HEDGE_RE = re.compile(
    rf"(?:{_NUM}\s*(?:,\s*)?(?:or|or\s+maybe|or\s+perhaps|or\s+possibly|and/or)\s+(?:maybe\s+|perhaps\s+)?{_NUM}"
    rf"|\bbetween\s+{_NUM}\s+and\s+{_NUM}"
    rf"|\b(?:maybe|perhaps|possibly)\s+{_NUM}\s*[,;]\s*(?:or\s+)?(?:maybe|perhaps|possibly)\s+{_NUM})",
    re.IGNORECASE,
)
_WORD_HEDGE_RE = re.compile(
    r"\b(?:yes\s+(?:or|and)\s+no|no\s+(?:or|and)\s+yes|either\b.*\bor\b|maybe\b.*\bmaybe\b|not\s+sure|unsure|"
    r"I\s+(?:don't|do\s+not)\s+know|can't\s+(?:tell|decide)|cannot\s+(?:tell|decide))",
    re.IGNORECASE,
)


def is_hedged(segment: str) -> bool:
    """Whether a final-answer segment (number words already in digits) offers alternatives."""
    return bool(_HEDGE_RE.search(segment))


def is_text_hedged(segment: str) -> bool:
    """Whether a free-text answer offers alternatives or disclaims knowing ("Paris or Lyon" is caught by
    the caller, which sees two candidate answers; this reads the explicit forms)."""
    return bool(_WORD_HEDGE_RE.search(segment))


_CORRECTION_RE = re.compile(
    r"\b(?:wait|actually|correction|on\s+second\s+thought|I\s+made\s+a\s+mistake|sorry|let\s+me\s+correct|"
    r"scratch\s+that|I\s+mean)\b\s*[,:!.-]*",
    re.IGNORECASE,
)


def after_correction(text: str, after: int) -> str | None:
    """What follows the last self-correction cue at or after index `after`, or None."""
    found = [m for m in _CORRECTION_RE.finditer(text) if m.start() >= after]
    if not found:
        return None
    rest = text[found[-1].end() :].strip()
    return rest or None


# Pieces of a response: sentences (ended by . ! ? ; or a line break) and the clauses a contrast starts.
_PIECE_SPLIT_RE = re.compile(
    r"(?<=[.!?;])\s+|\n+|,?\s+(?=(?:but|however|whereas|while|yet)\b)|,\s+(?=I\b)", re.IGNORECASE
)
_AFFIRM_RE = re.compile(
    r"^\W*(?:yes|yep|yeah|right|correct|exactly|indeed|true|that\s+is\s+it)\b", re.IGNORECASE
)
# Who an answer is reported of (never "I" or "we"), and the verbs that report it.
_WHO = (
    r"(?:some(?:one|body)?|many|most|several|others?|people|everyone|everybody|they|he|she|friends?|"
    r"classmates?|colleagues?|students?|teachers?|users?|books?|textbooks?|forums?|websites?|sites?|"
    r"sources?|experts?|commenters?|persons?|keys?|posts?|wikipedia|google|articles?|papers?)"
)
_REPORT = (
    r"(?:says?|said|claims?|claimed|thinks?|thought|believes?|believed|answered|answers|suggests?|"
    r"suggested|argues?|argued|guess(?:es|ed)?|reports?|reported|states?|stated|insists?|insisted|"
    r"wrote|writes|write|gets?|got|put|puts|picks?|picked|chose|choose|chooses)"
)
_REPORTED_RE = re.compile(
    rf"^\W*(?:(?:and|however|also)\W+)?(?:according\s+to\b|(?:[\w'-]+\s+){{0,4}}?{_WHO}\b"
    rf"[^.!?;]{{0,60}}?\b{_REPORT}\b)",
    re.IGNORECASE,
)


def _is_reported(piece: str) -> bool:
    return bool(_REPORTED_RE.match(piece))


def committed(text: str) -> str:
    """`text` without what it does not commit to: a question followed by anything but a confirmation, and an
    answer reported of others ("some say", "my friend thinks", "according to") when the response's own words
    follow. The text unchanged when nothing would be left."""
    pieces = [p for p in _PIECE_SPLIT_RE.split(text) if p and p.strip()]
    if len(pieces) < 2:
        return text
    kept = []
    for i, piece in enumerate(pieces):
        later = pieces[i + 1 :]
        if not later:
            kept.append(piece)
        elif piece.rstrip().endswith("?"):
            if _AFFIRM_RE.match(later[0]):
                kept.append(piece)
        elif not _is_reported(piece) or all(_is_reported(p) for p in later):
            kept.append(piece)
    return " ".join(kept) if kept else text
