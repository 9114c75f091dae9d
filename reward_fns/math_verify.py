"""Lenient math equivalence with Hugging Face's `math-verify` (symbolic, not string, comparison).

Its own function, claiming no verl data source: choose it by name (`reward_fn: "math_verify"`) or map
data sources to it in the gateway's dispatch table. Compared with `math`/`math_dapo` it accepts
`0.5` for `\\frac{1}{2}`, `x = 5` for `5`, reordered sets, `10\\%` for `0.1`, and so on.

- The gold answer is wrapped in `\\boxed{}` and parsed as LaTeX (as verl's math_verify scorer does).
  A gold answer that does not parse is an error (`GoldAnswerError`), never a score of 0.
- The response is parsed for expressions and LaTeX (`\\boxed{}`, `$…$`, "final answer is …"). No
  parsable answer in it scores 0.0 — that answer is wrong.
- Result: `{"score": 1.0 | 0.0, "acc": bool, "pred": str, "timed_out": bool}` (`pred` is "" when none).

math-verify enforces its timeouts with `signal.alarm`, which works only in a process's main thread;
called from another thread with timeouts on this raises `RuntimeError` (the gateway runs sync
functions in worker processes' main threads). A timeout raises `MathVerifyTimeout` unless
`timeout_score` is set; then that score is returned with `timed_out: True`.

Keyword options (config `reward_kwargs`): `parsing_timeout_s` and `verify_timeout_s` (whole seconds,
default 5; `None` disables the library's timer, leaving only the caller's), `float_rounding` (6),
`numeric_precision` (15), `strict` (True: e.g. variables must match), `timeout_score` (None).
"""

from __future__ import annotations

import threading
from typing import Any

# Absolute imports: inside the package `reward_fns`, `math_verify` names the installed library, not
# this module. Loading this file as a top-level module called `math_verify` would shadow the library.
if __name__ == "math_verify":
    raise ImportError(
        "reward_fns/math_verify.py was loaded as a top-level module named 'math_verify', which shadows "
        "the math-verify library it uses; import it as 'rewardfleet.reward_fns.math_verify'"
    )

from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify
from math_verify.errors import TimeoutException

from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["GoldAnswerError", "MathVerifyTimeout", "compute_score"]

_GOLD_TARGETS = (LatexExtractionConfig(),)
_PRED_TARGETS = (ExprExtractionConfig(), LatexExtractionConfig())


class GoldAnswerError(ValueError):
    """The ground truth could not be parsed: a data problem, not a wrong answer."""


class MathVerifyTimeout(TimeoutError):
    """math-verify ran out of time parsing or comparing (raised unless `timeout_score` is set)."""


def _check_timeout(name: str, value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a whole number of seconds >= 1 or None, got {value!r}")
    return value


def _timed_out(stage: str, timeout_score: float | None) -> dict[str, Any]:
    if timeout_score is None:
        raise MathVerifyTimeout(f"math-verify timed out while {stage}; set timeout_score to score it instead")
    return {"score": float(timeout_score), "acc": False, "pred": "", "timed_out": True}


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: dict[str, Any] | None = None,
    *,
    parsing_timeout_s: int | None = 5,
    verify_timeout_s: int | None = 5,
    float_rounding: int = 6,
    numeric_precision: int = 15,
    strict: bool = True,
    timeout_score: float | None = None,
) -> dict[str, Any]:
    """1.0 when some answer parsed from the response is mathematically equal to the gold answer."""
    text = require_str("solution_str", solution_str)
    truth = require_str("ground_truth", ground_truth)
    parsing_timeout_s = _check_timeout("parsing_timeout_s", parsing_timeout_s)
    verify_timeout_s = _check_timeout("verify_timeout_s", verify_timeout_s)
    uses_alarm = parsing_timeout_s is not None or verify_timeout_s is not None
    if uses_alarm and threading.current_thread() is not threading.main_thread():
        raise RuntimeError(
            "math_verify needs the main thread of its process (math-verify times out with signal.alarm); "
            "run it in a worker process, or pass parsing_timeout_s=None and verify_timeout_s=None"
        )

    try:
        gold = parse(
            "\\boxed{" + truth + "}", _GOLD_TARGETS, parsing_timeout=parsing_timeout_s, raise_on_error=True
        )
    except TimeoutException:
        return _timed_out("parsing the ground truth", timeout_score)
    if not gold:
        raise GoldAnswerError(f"math-verify could not parse the ground truth {truth!r}")

    try:
        pred = parse(text, _PRED_TARGETS, parsing_timeout=parsing_timeout_s, raise_on_error=True)
    except TimeoutException:
        return _timed_out("parsing the response", timeout_score)
    shown = str(pred[-1]) if pred else ""  # the last item is the extracted text as written

    timed_out = False
    for gold_item in gold:
        for pred_item in pred:
            try:
                equal = verify(
                    gold_item,
                    pred_item,
                    float_rounding=float_rounding,
                    numeric_precision=numeric_precision,
                    strict=strict,
                    timeout_seconds=verify_timeout_s,
                    raise_on_error=True,
                )
            except TimeoutException:
                timed_out = True
                continue
            except Exception:
                # sympy could not compare these two forms (e.g. a set with a number): not equal.
                equal = False
            if equal:
                return {"score": 1.0, "acc": True, "pred": shown, "timed_out": False}
    if timed_out:
        return _timed_out("comparing answers", timeout_score)
    return {"score": 0.0, "acc": False, "pred": shown, "timed_out": False}
