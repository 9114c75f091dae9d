"""Turning whatever a reward function returned into `(score, extra)`, or a typed `InvalidReturn`.

Accepted returns (verl's contract): a number (int, float, bool, numpy/torch scalar) → float; a dict that holds
"score" (every other key goes to `extra`); a tuple → its first element is the score and the rest goes to
`extra["tuple_rest"]`. A NaN or infinite score is invalid. A dict may carry `step_scores` and/or
`turn_scores` (lists of finite numbers, at most `MAX_SCORES_PER_LIST` each; else InvalidReturn) and then may
leave out "score": the score is `None` here and the caller makes it from them (core/scoring.py, the function's
`score_aggregate`). A dict's `reward_components` must be within execution/components.py's bounds (else
InvalidReturn); they travel in `extra` under that key until the scorer lifts them out. Extras are made
JSON-safe: non-finite floats become the strings "nan"/"inf"/"-inf", unknown objects their `repr`.

Pure functions with no web imports: worker processes use them too, so only plain data crosses the pipe.
"""

from __future__ import annotations

import math
import numbers
import traceback
from pathlib import Path
from typing import Any

from rewardfleet.reward_fns.contract import StepError, check_scores
from rewardfleet.services.gateway.errors import InvalidReturn
from rewardfleet.services.gateway.execution.components import KEY as COMPONENTS_KEY
from rewardfleet.services.gateway.execution.components import returned_components
from rewardfleet.services.gateway.sizes import json_size

SCORE_LISTS: tuple[str, ...] = ("step_scores", "turn_scores")
MAX_SCORES_PER_LIST = 4096  # a trajectory of more steps or turns than this is a function's bug, or hostile

_EXPECTED = "expected a number, a dict with a 'score' key, or a tuple whose first element is the score"


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:80] + '…' if len(text) > 80 else text}"


def as_score(value: Any, what: str) -> float:
    if isinstance(value, numbers.Real):  # includes bool and numpy floats/ints
        score = float(value)
    elif hasattr(value, "item") and callable(value.item):  # numpy / torch 0-d scalars
        try:
            inner = value.item()
        except Exception:
            raise InvalidReturn(f"{what} is {_describe(value)}; {_EXPECTED}") from None
        if not isinstance(inner, numbers.Real):
            raise InvalidReturn(f"{what} is {_describe(value)}; {_EXPECTED}")
        score = float(inner)
    else:
        raise InvalidReturn(f"{what} is {_describe(value)}; {_EXPECTED}")
    if not math.isfinite(score):
        raise InvalidReturn(f"{what} is {score}, not a finite number")
    return score


def jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        try:
            return jsonable(value.item())
        except Exception:
            return repr(value)
    if hasattr(value, "tolist") and callable(value.tolist):
        return jsonable(value.tolist())
    return repr(value)


def _score_lists(value: dict[Any, Any]) -> dict[str, list[float]]:
    lists: dict[str, list[float]] = {}
    for key in SCORE_LISTS:
        if value.get(key) is not None:
            try:
                lists[key] = check_scores(value[key], key, MAX_SCORES_PER_LIST)
            except StepError as exc:
                raise InvalidReturn(f"{type(exc).__name__}: {exc}") from None
    return lists


def normalise_return(value: Any) -> tuple[float | None, dict[str, Any]]:
    """`(score, extra)`; the score is None only for a dict with step/turn scores and no "score"."""
    if isinstance(value, dict):
        lists = _score_lists(value) if "step_scores" in value or "turn_scores" in value else {}
        if "score" not in value and not lists:
            raise InvalidReturn(
                f"returned a dict without a 'score' key (keys: {sorted(map(str, value))[:10]})"
            )
        score = as_score(value["score"], "the dict's 'score'") if "score" in value else None
        extra = {str(k): jsonable(v) for k, v in value.items() if k != "score" and k not in lists}
        extra.update(lists)
        if value.get(COMPONENTS_KEY) is not None:
            extra[COMPONENTS_KEY] = returned_components(value[COMPONENTS_KEY])
        return score, extra
    if isinstance(value, tuple):
        if not value:
            raise InvalidReturn(f"returned an empty tuple; {_EXPECTED}")
        score = as_score(value[0], "the tuple's first element")
        return score, ({"tuple_rest": jsonable(value[1:])} if len(value) > 1 else {})
    return as_score(value, "the return value"), {}


def extra_too_large(extra: dict[str, Any], max_size: int | None) -> str | None:
    """The ResultTooLarge message when `extra` is larger than `max_size` (`sizes.json_size`), else None."""
    if max_size is None or not extra:
        return None
    _, size = json_size(extra, 1 << 30, max_size)
    if size <= max_size:
        return None
    return (
        f"the result's extra has a size over {max_size} (values + characters; max_result_extra_chars); "
        "it was dropped"
    )


def error_location(exc: BaseException) -> str:
    """` (at file.py:line)` of the innermost frame of `exc`'s traceback, or "" when it has none."""
    tb = traceback.extract_tb(exc.__traceback__)
    return f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
