"""Guards before a judge: answers that carry nothing to judge are scored without asking the model.

"One Token to Fool LLM-as-a-Judge" (Zhao et al., 2025) showed that strong judges give false positives to
answers with no content: a bare ":" or ".", a space, or a reasoning opener such as "Thought process:",
"Let's solve this problem step by step.", "Solution", "解", "かいせつ", "Respuesta". A policy trained
against a judge finds these "master keys" quickly. A guard recognises them deterministically, so the judge
is never asked:

- `empty`: nothing but whitespace, punctuation and invisible characters after Unicode normalisation (NFKC,
  format characters such as zero-width spaces and soft hyphens removed), and LaTeX or markdown wrappers with
  nothing inside (`$\\boxed{}$`, `**`, an empty `<think></think>`);
- `reasoning_opener`: only one or more reasoning openers (in several languages), with nothing after them;
- `too_long`: more than `max_answer_chars` characters (NeMo Gym caps answer length too): a judge's context
  and attention are finite, and a very long answer is a place to hide instructions to the judge.

A legitimate short answer ("4", "-1/2", "∅", "No", "x=3") never trips a guard: any letter, digit or
mathematical symbol left after the wrappers are removed is content.

`check_answer(text, settings)` returns the guard's name or None; `judge`, `rule_then_judge` and any user
function can call it (`from rewardfleet.reward_fns.judging.guards import GuardSettings, check_answer`). A
guarded result is a normal scored result (status ok) with the guard's name in `extra["guard"]`; the gateway
counts it in `rewardfleet_judge_guard_total{reward_fn,guard}` when the name is one of `GUARD_NAMES`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

GUARD_NAMES: tuple[str, ...] = ("empty", "reasoning_opener", "too_long")

DEFAULT_MAX_ANSWER_CHARS = 16_000


class GuardSettingsError(ValueError):
    """The `guards` reward_kwarg names an unknown setting or holds a value of the wrong type."""


@dataclass(frozen=True)
class GuardSettings:
    """Which guards run before the judge, and the score of a guarded answer (`judge`; `rule_then_judge`
    scores it as a flawed answer instead). `max_answer_chars=None` turns the length cap off."""

    enabled: bool = True
    empty: bool = True
    reasoning_opener: bool = True
    max_answer_chars: int | None = DEFAULT_MAX_ANSWER_CHARS
    score: float = 0.0

    @classmethod
    def coerce(cls, value: GuardSettings | Mapping[str, Any] | bool | None) -> GuardSettings:
        """Settings from the `guards` reward_kwarg: a `GuardSettings`, a mapping of its fields (YAML),
        True/None (the defaults) or False (every guard off). An unknown key or a wrong type raises, naming
        it."""
        if isinstance(value, GuardSettings):
            return value
        if value is None or value is True:
            return cls()
        if value is False:
            return cls(enabled=False)
        if not isinstance(value, Mapping):
            raise GuardSettingsError(f"guards must be a mapping or a bool, not {type(value).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(k) for k in value if k not in known)
        if unknown:
            raise GuardSettingsError(f"guards.{unknown[0]} is not a guard setting; known: {sorted(known)}")
        for name in ("enabled", "empty", "reasoning_opener"):
            if name in value and not isinstance(value[name], bool):
                raise GuardSettingsError(f"guards.{name} must be true or false, not {value[name]!r}")
        score = value.get("score", 0.0)
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise GuardSettingsError(f"guards.score must be a number, not {score!r}")
        limit = value.get("max_answer_chars", DEFAULT_MAX_ANSWER_CHARS)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise GuardSettingsError(
                f"guards.max_answer_chars must be a positive integer or null, not {limit!r}"
            )
        return cls(**dict(value))


# --- normalisation ---

# Wrappers that carry no answer by themselves: LaTeX boxes and text commands, math delimiters, think tags.
_WRAPPERS = re.compile(
    r"\\(?:boxed|fbox|text|textbf|mathrm|mathbf|displaystyle|quad|qquad)\b|\\[\[\]()]|\\[,;!]|"
    r"</?think>|</?answer>|\$",
    re.IGNORECASE,
)
# Symbols (Unicode category S*) that are formatting, not content: markdown and brace/caret noise. Other
# symbols (∅, ∞, ±, <, =...) may be an answer and are kept.
_FORMATTING_SYMBOLS = frozenset("`^~|")


def normalise(text: str) -> str:
    """NFKC, with format characters (Unicode category Cf: zero-width spaces and joiners, BOM, soft hyphen,
    bidi marks) and controls other than whitespace removed."""
    text = unicodedata.normalize("NFKC", text)
    return "".join(
        ch
        for ch in text
        if unicodedata.category(ch) != "Cf" and (ch.isspace() or unicodedata.category(ch) != "Cc")
    )


def _is_filler(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch).startswith("P") or ch in _FORMATTING_SYMBOLS


def is_content_free(text: str) -> bool:
    """True when nothing but whitespace, punctuation, formatting symbols and empty wrappers is left."""
    stripped = _WRAPPERS.sub(" ", normalise(text))
    return all(_is_filler(ch) for ch in stripped)


# --- reasoning openers ---

# Phrases that start reasoning without saying anything. Matched case-insensitively at the start of the
# normalised answer, repeatedly, each followed by optional punctuation; the answer trips the guard only when
# nothing but filler is left after them.
_OPENER_PHRASES = (
    # English: the paper's keys and their near variants.
    r"thought\s+process",
    r"thinking(?:\s+process)?",
    r"let['’]?s\s+(?:solve|think|work|go|break)(?:\s+(?:this|the|it))?(?:\s+(?:problem|question|one|through|down))?"
    r"(?:\s+(?:step\s+by\s+step|carefully))?",
    r"let\s+us\s+(?:solve|think|work)(?:\s+(?:this|the|it))?(?:\s+(?:problem|question|through))?"
    r"(?:\s+step\s+by\s+step)?",
    r"(?:we\s+need\s+to|i\s+need\s+to|i\s+will|i['’]?ll|we\s+will|we['’]?ll)\s+solve"
    r"\s+(?:this|the)\s+(?:problem|question)(?:\s+step\s+by\s+step)?",
    r"(?:to\s+solve\s+(?:this|the)\s+(?:problem|question))",
    r"step\s+by\s+step",
    r"step\s*1",
    r"(?:the\s+)?(?:final\s+)?(?:solution|answer|reasoning|explanation|analysis|response|result)(?:\s+is)?",
    r"hmm+",
    # Other languages (the paper's multilingual keys and common equivalents).
    r"解答?|解析|解题思路|思路|思考过程|答案?|分析|步骤",  # Chinese
    r"かいせつ|解説|回答|答え|考え方|解き方",  # Japanese
    r"풀이|해설|정답|답",  # Korean
    r"respuesta|soluci[oó]n|razonamiento|proceso\s+de\s+pensamiento",  # Spanish
    r"r[ée]ponse|solution|raisonnement",  # French
    r"l[öo]sung|antwort|denkprozess",  # German
    r"resposta|solu[cç][aã]o|racioc[ií]nio",  # Portuguese
    r"решение|ответ|рассуждение",  # Russian
)
_OPENER = re.compile(
    r"(?:" + "|".join(_OPENER_PHRASES) + r")(?![^\W\d_])",  # a whole word or phrase, not the start of one
    re.IGNORECASE,
)


def is_reasoning_opener_only(text: str) -> bool:
    """True when the answer is one or more reasoning openers and filler, and at least one opener."""
    rest = _WRAPPERS.sub(" ", normalise(text))
    found = False
    while True:
        start = 0
        while start < len(rest) and _is_filler(rest[start]):
            start += 1
        match = _OPENER.match(rest, start)
        if match is None:
            return found and start == len(rest)
        found = True
        rest = rest[match.end() :]


# --- the check ---


def check_answer(text: str, settings: GuardSettings | None = None) -> str | None:
    """The name of the first guard `text` trips ("too_long", "empty", "reasoning_opener"), or None."""
    settings = settings or GuardSettings()
    if not settings.enabled:
        return None
    # Length first: the other checks are linear in the text, and a huge answer need not be walked.
    if settings.max_answer_chars is not None and len(text) > settings.max_answer_chars:
        return "too_long"
    if settings.empty and is_content_free(text):
        return "empty"
    if settings.reasoning_opener and is_reasoning_opener_only(text):
        return "reasoning_opener"
    return None
