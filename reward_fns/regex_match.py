"""Regex match: the response matches a pattern taken from `ground_truth` or from the `pattern` option.

Claims no data source.

- The patterns are the `pattern` option when it is set (then `ground_truth` is ignored), else
  `ground_truth`: one pattern or a list of patterns, any of which may match.
- `mode`: "fullmatch" (default: the whole response, after `strip`, must match), "search" (anywhere)
  or "match" (at the start).
- `ignore_case` (False), `dotall` (True: `.` also matches newlines), `multiline` (False),
  `strip` (True: surrounding whitespace is removed from the response first).

Every option may be set in config `reward_kwargs` and overridden per sample by the same key in
`extra_info`. An invalid pattern raises `re.error` (an error result, not a 0).

Returns `{"score": 1.0 | 0.0, "pattern": the pattern that matched or "", "match": the matched text
or ""}`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from rewardfleet.reward_fns.judging.answers import accepted_answers, require_str
from rewardfleet.reward_fns.judging.options import sample_option

__all__ = ["compute_score"]

Mode = Literal["fullmatch", "search", "match"]
_MODES = ("fullmatch", "search", "match")


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str | list[str] | None,
    extra_info: dict[str, Any] | None = None,
    *,
    pattern: str | list[str] | None = None,
    mode: Mode = "fullmatch",
    ignore_case: bool = False,
    dotall: bool = True,
    multiline: bool = False,
    strip: bool = True,
) -> dict[str, Any]:
    """1.0 when any of the patterns matches the response in the chosen mode, else 0.0."""
    text = require_str("solution_str", solution_str)
    pattern = sample_option("pattern", pattern, extra_info, (str, list, type(None)))
    patterns = accepted_answers(pattern if pattern is not None else ground_truth)
    mode = sample_option("mode", mode, extra_info, str)
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
    flags = 0
    if sample_option("ignore_case", ignore_case, extra_info, bool):
        flags |= re.IGNORECASE
    if sample_option("dotall", dotall, extra_info, bool):
        flags |= re.DOTALL
    if sample_option("multiline", multiline, extra_info, bool):
        flags |= re.MULTILINE
    if sample_option("strip", strip, extra_info, bool):
        text = text.strip()
    for source in patterns:
        compiled = re.compile(source, flags)
        found = getattr(compiled, mode)(text)
        if found is not None:
            return {"score": 1.0, "pattern": source, "match": found.group(0)}
    return {"score": 0.0, "pattern": "", "match": ""}
