"""Exact match: the response (or an extracted part of it) equals one of the accepted answers.

`ground_truth` is one string or a list of accepted strings. Both sides are normalised the same way
before comparing. Claims no data source.

Keyword options (config `reward_kwargs`), each overridable per sample by the same key in
`extra_info`:

- `case_sensitive` (False), `strip` (True), `collapse_whitespace` (True),
  `ignore_punctuation` (False), `remove_articles` (False: drop "a", "an", "the" like SQuAD EM);
- `answer_regex` (None): when set, the answer is taken from the response first — the last match's
  group 1 (or the whole match if the pattern has no group). No match scores 0 with `pred` "".

Returns `{"score": 1.0 | 0.0, "pred": the normalised answer, "matched": the accepted answer it
equalled, or ""}`.
"""

from __future__ import annotations

import re
from typing import Any

from rewardfleet.reward_fns.judging.answers import accepted_answers, normalize_text, require_str
from rewardfleet.reward_fns.judging.options import sample_option

__all__ = ["compute_score", "extract"]


def extract(text: str, answer_regex: str | None) -> str | None:
    """The part of `text` to compare: all of it, or the last `answer_regex` match (group 1 if any)."""
    if answer_regex is None:
        return text
    pattern = re.compile(answer_regex, re.DOTALL)
    matches = list(pattern.finditer(text))
    if not matches:
        return None
    last = matches[-1]
    return last.group(1) if pattern.groups else last.group(0)


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str | list[str],
    extra_info: dict[str, Any] | None = None,
    *,
    case_sensitive: bool = False,
    strip: bool = True,
    collapse_whitespace: bool = True,
    ignore_punctuation: bool = False,
    remove_articles: bool = False,
    answer_regex: str | None = None,
) -> dict[str, Any]:
    """1.0 when the normalised answer equals a normalised accepted answer, else 0.0."""
    text = require_str("solution_str", solution_str)
    answers = accepted_answers(ground_truth)
    options = {
        "case_sensitive": sample_option("case_sensitive", case_sensitive, extra_info, bool),
        "strip": sample_option("strip", strip, extra_info, bool),
        "collapse_whitespace": sample_option("collapse_whitespace", collapse_whitespace, extra_info, bool),
        "ignore_punctuation": sample_option("ignore_punctuation", ignore_punctuation, extra_info, bool),
        "remove_articles": sample_option("remove_articles", remove_articles, extra_info, bool),
    }
    answer = extract(text, sample_option("answer_regex", answer_regex, extra_info, (str, type(None))))
    if answer is None:
        return {"score": 0.0, "pred": "", "matched": ""}
    pred = normalize_text(answer, **options)
    for accepted in answers:
        if normalize_text(accepted, **options) == pred:
            return {"score": 1.0, "pred": pred, "matched": accepted}
    return {"score": 0.0, "pred": pred, "matched": ""}
