"""Steps of a response and the aggregate of per-step (or per-turn) scores.

Split rules (`split_steps(text, rule)`); a rule is a string:

- `"blank_line"` (the default): steps are separated by one or more blank lines (`"\\n\\n"`, also with spaces
  or `\\r` on the blank line) — how ProcessBench and PRM800K-style solutions are laid out;
- `"line"`: every non-blank line is a step;
- `"tag:<TAG>"`: every `<TAG>` ends a step (Math-Shepherd's `"ки"`, Qwen2.5-Math-PRM's `"<extra_0>"`); text
  after the last tag is one more step when it is not blank;
- `"separator:<SEP>"`: the literal string `<SEP>` separates steps (`"separator:\\n\\n"` splits on exactly two
  newlines, never on three).

Every step is stripped of surrounding whitespace and blank steps are dropped, so a response of only
whitespace has no steps (`[]`). A response longer than `max_steps` steps raises `TooManySteps`: the caller
decides what that means for the sample (a typed error, never a silent truncation).

Aggregates (`aggregate(scores, how)`), giving one score from a list of floats:

- `"min"` — the weakest step (the usual PRM choice); `"max"`; `"mean"`; `"sum"`; `"last"`; `"first"`;
- `"product"` — the product (each score a probability the step is right: the chance all are);
- `"first_error"` — the fraction of steps before the first one that scores below `threshold` (0.5 by
  default): 1.0 when every step passes, 0.0 when the first fails, 2/5 when the third of five fails.

An empty list has no aggregate (`EmptyScores`): a trajectory with no steps is not silently worth 0 or 1.
Non-finite values (NaN, inf) are refused (`NonFiniteScore`) wherever they come from.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Literal, get_args

DEFAULT_STEP_RULE = "blank_line"
DEFAULT_MAX_STEPS = 256

Aggregate = Literal["min", "max", "mean", "sum", "last", "first", "product", "first_error"]
AGGREGATES: tuple[str, ...] = get_args(Aggregate)

_BLANK_LINE = re.compile(r"\r?\n[ \t\r]*\n")  # linear: no nested quantifiers


class StepError(ValueError):
    """Base of the errors this module raises; `type(exc).__name__` is the error type a sample reports."""


class BadStepRule(StepError):
    pass


class TooManySteps(StepError):
    pass


class EmptyScores(StepError):
    pass


class NonFiniteScore(StepError):
    pass


def check_rule(rule: str) -> str:
    """`rule` unchanged when it is a valid split rule (see the module docstring), else `BadStepRule`."""
    if not isinstance(rule, str):
        raise BadStepRule(f"a step rule is a string, got {type(rule).__name__}")
    if rule in ("blank_line", "line"):
        return rule
    kind, sep, arg = rule.partition(":")
    if sep and kind in ("tag", "separator"):
        if not arg:
            raise BadStepRule(f"step rule {rule!r}: '{kind}:' needs a non-empty string after the colon")
        return rule
    raise BadStepRule(
        f"unknown step rule {rule!r}: use 'blank_line', 'line', 'tag:<TAG>' or 'separator:<SEP>'"
    )


def split_steps(
    text: str, rule: str = DEFAULT_STEP_RULE, max_steps: int | None = DEFAULT_MAX_STEPS
) -> list[str]:
    """The steps of `text` under `rule`, stripped, blanks dropped; `TooManySteps` past `max_steps`."""
    if not isinstance(text, str):
        raise TypeError(f"split_steps needs a string, got {type(text).__name__}")
    check_rule(rule)
    if rule == "blank_line":
        pieces = _BLANK_LINE.split(text)
    elif rule == "line":
        pieces = text.splitlines()
    else:
        arg = rule.partition(":")[2]
        pieces = text.split(arg)  # "tag:" — text after the last tag is a step too when not blank
    steps = [p.strip() for p in pieces if p.strip()]
    if max_steps is not None and len(steps) > max_steps:
        raise TooManySteps(
            f"the response has {len(steps)} steps under rule {rule!r}, over max_steps={max_steps}"
        )
    return steps


def check_scores(values: object, what: str, max_len: int) -> list[float]:
    """`values` as a list of finite floats (bools refused), at most `max_len` long; else a `StepError` naming
    `what` (e.g. "step_scores")."""
    if not isinstance(values, (list, tuple)):
        raise StepError(f"{what} must be a list of numbers, got {type(values).__name__}")
    if len(values) > max_len:
        raise TooManySteps(f"{what} has {len(values)} values, over the limit of {max_len}")
    out: list[float] = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            if hasattr(v, "item") and callable(v.item):  # numpy / torch scalars
                v = v.item()
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise StepError(f"{what}[{i}] must be a number, got {type(v).__name__}")
        f = float(v)
        if not math.isfinite(f):
            raise NonFiniteScore(f"{what}[{i}] is {f}, not a finite number")
        out.append(f)
    return out


def aggregate(scores: Sequence[float], how: str = "min", threshold: float = 0.5) -> float:
    """One score from per-step/per-turn scores by the rule `how` (module docstring)."""
    if how not in AGGREGATES:
        raise StepError(f"unknown aggregate {how!r}: use one of {list(AGGREGATES)}")
    if not scores:
        raise EmptyScores(f"no scores to aggregate with {how!r}")
    for i, s in enumerate(scores):
        if not math.isfinite(s):
            raise NonFiniteScore(f"score {i} is {s}, not a finite number")
    if how == "min":
        return float(min(scores))
    if how == "max":
        return float(max(scores))
    if how == "mean":
        return math.fsum(scores) / len(scores)
    if how == "sum":
        return math.fsum(scores)
    if how == "last":
        return float(scores[-1])
    if how == "first":
        return float(scores[0])
    if how == "product":
        return math.prod(scores)
    first_wrong = next((i for i, s in enumerate(scores) if s < threshold), len(scores))
    return first_wrong / len(scores)
