"""Answer-extraction helpers shared by the built-in reward functions.

Nothing here scores anything; the helpers find answers in model output and normalise text.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

__all__ = [
    "accepted_answers",
    "balanced_braces_end",
    "last_braced_command",
    "normalize_text",
    "require_str",
]


def balanced_braces_end(text: str, start: int) -> int | None:
    """Index of the `}` that closes the first brace group opened at or after `start`.

    Depth is counted from `start`; the scan stops at the first `}` that brings it back to zero
    (a stray `}` before any `{` drives the depth negative and is never a match). `None` when the
    group never closes.
    """
    depth = 0
    for index in range(start, len(text)):
        char = text[index]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
    return None


def last_braced_command(text: str, command: str) -> str | None:
    """The last occurrence of `command` (e.g. ``\\boxed{``) through its balanced closing brace."""
    start = text.rfind(command)
    if start < 0:
        return None
    end = balanced_braces_end(text, start)
    return None if end is None else text[start : end + 1]


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_WHITESPACE = re.compile(r"\s+")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_text(
    text: str,
    *,
    case_sensitive: bool = False,
    strip: bool = True,
    collapse_whitespace: bool = True,
    ignore_punctuation: bool = False,
    remove_articles: bool = False,
) -> str:
    """Normalise free text for string comparison. Each step is opt-in/out so callers stay explicit."""
    if not case_sensitive:
        text = text.casefold()
    if ignore_punctuation:
        text = text.translate(_PUNCTUATION)
    if remove_articles:
        # Articles are matched case-insensitively only after case folding; with case_sensitive=True
        # only lowercase articles are removed.
        text = _ARTICLES.sub(" ", text)
    if collapse_whitespace:
        text = _WHITESPACE.sub(" ", text)
    if strip:
        text = text.strip()
    return text


def accepted_answers(ground_truth: object) -> list[str]:
    """`ground_truth` as a non-empty list of strings (one string, or a list/tuple of strings)."""
    if isinstance(ground_truth, str):
        return [ground_truth]
    if isinstance(ground_truth, Sequence) and not isinstance(ground_truth, bytes | bytearray):
        answers = list(ground_truth)
        if not answers:
            raise ValueError("ground_truth is an empty list: at least one accepted answer is needed")
        for answer in answers:
            if not isinstance(answer, str):
                raise TypeError(f"ground_truth list items must be strings, got {type(answer).__name__}")
        return answers
    raise TypeError(f"ground_truth must be a string or a list of strings, got {type(ground_truth).__name__}")


def require_str(name: str, value: object) -> str:
    """`value` if it is a string; a clear TypeError otherwise (verl would silently score 0 here)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    return value
